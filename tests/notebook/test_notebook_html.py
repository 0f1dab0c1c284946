"""Static HTML (what a saved, untrusted notebook shows): structure, escaping and the marked bytes."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from kafkalab.notebook import display, frame_html, frames_html, hexdump_html, tree_html
from kafkalab.protocol import decode_request
from kafkalab.protocol.tree import FieldNode

VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}


class Structure(HTMLParser):
    """Checks that tags nest and close, and records every tag and attribute seen."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


def check_static(html: str) -> Structure:
    """The rules that make HTML survive an untrusted reopen, and well-formed nesting."""
    lowered = html.lower()
    assert "<style" not in lowered and "<script" not in lowered
    assert not re.search(r"\son\w+\s*=", lowered), "no event handler attributes"
    assert "javascript:" not in lowered and "class=" not in lowered  # classes would need a stylesheet
    parser = Structure()
    parser.feed(html)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    return parser


def marked(html: str) -> list[str]:
    """The text inside each <mark>, tags stripped."""
    return [re.sub(r"<[^>]+>", "", m) for m in re.findall(r"<mark[^>]*>(.*?)</mark>", html, flags=re.S)]


def small_tree() -> tuple[FieldNode, bytes]:
    raw = b"\x00\x00\x00\x0c" + b"\x00\x05" + b"<b>&x" + b"\x00\x01" + b"\xff"
    root = FieldNode("", "Toy v0", "frame", 0, len(raw))
    root.add(FieldNode("size", "size", "int32", 0, 4, 12))
    body = root.add(FieldNode("name", "name", "string", 4, 11, "<b>&x"))
    body.add(FieldNode("name#length", "length", "int16", 4, 6, 5))
    body.add(FieldNode("name#text", "text", "bytes", 6, 11, "<b>&x"))
    root.add(FieldNode("count", "count", "int16", 11, 13, 1))
    root.add(FieldNode("_trailing", "trailing bytes", "bytes", 13, 14, b"\xff",
                       diagnostics=["trailing bytes: 1 after the body <!>"]))
    return root, raw


def test_tree_html_structure_escaping_and_diagnostics() -> None:
    root, raw = small_tree()
    html = tree_html(root)
    parser = check_static(html)
    paths = [attrs["data-path"] for tag, attrs in parser.tags if "data-path" in attrs]
    assert paths == ["", "size", "name", "name#length", "name#text", "count", "_trailing"]
    assert [t for t, a in parser.tags if t == "details"] == ["details", "details"]   # root and `name`
    assert "&lt;b&gt;&amp;x" in html and "<b>" not in html
    assert "[4:11]" in html and "string" in html
    diag = re.search(r'<div style="([^"]*)">⚠ trailing bytes: 1 after the body &lt;!&gt;</div>', html)
    assert diag and "#c62828" in diag.group(1)


def test_tree_html_highlight_marks_the_fields_bytes_and_opens_its_ancestors() -> None:
    root, raw = small_tree()
    html = tree_html(root, raw, highlight="name#text")
    check_static(html)
    assert marked(html) == ["3c 62 3e 26 78", "&lt;b&gt;&amp;x"]
    assert re.search(r'<details open data-path="name"', html)
    assert re.search(r'<pre[^>]*data-start="6" data-end="11"', html)


def test_hexdump_html_marks_runs_across_rows_and_escapes_ascii() -> None:
    raw = bytes(range(0x30, 0x50)) + b"<&>"
    html = hexdump_html(raw, 14, 18)
    check_static(html)
    assert marked(html) == ["3e 3f", "&gt;?", "40 41", "@A"]   # one run per row, hex and ASCII
    assert "&lt;&amp;&gt;" in html
    assert html.count("\n") == 2 and "0010" in html and "0020" in html
    assert marked(hexdump_html(raw)) == [] and marked(hexdump_html(raw, 3, 3)) == []


def test_hexdump_html_shows_a_window_around_a_far_selection() -> None:
    raw = bytes(10_000)
    html = hexdump_html(raw, 9000, 9002, max_bytes=1024)
    check_static(html)
    assert "… 8928 bytes before" in html and "more bytes" in html and marked(html) == ["00 00", ".."]


def test_inflated_field_is_marked_in_the_inflated_buffer(demo) -> None:
    produce = demo[1]
    path = "topic_data[0].partition_data[0].records[0].records[0].key"
    html = tree_html(produce.tree, produce.raw, highlight=path)
    check_static(html)
    assert marked(html)[0] == b"order-1".hex(" ")
    assert "60 inflated bytes below" in html
    assert frame_html(produce, highlight=path).count("<mark") == 2


def test_frame_html_has_summary_tree_and_bytes(demo) -> None:
    html = frame_html(demo[1])
    check_static(html)
    assert "#2 " in html and "Produce v9 request · orders[0] · 2 records · acks=-1" in html
    assert "127.0.0.1:50000 → 127.0.0.1:9092" in html and "bytes (197)" in html
    assert "client_id: &#x27;kafkalab-demo&#x27;" in html


def test_every_golden_frame_renders_as_static_html(golden_frames) -> None:
    for frame in golden_frames:
        html = frame_html(frame)
        check_static(html)
        assert f'data-frame="{frame.frame}"' in html


def test_frames_html_table(golden_frames) -> None:
    html = frames_html(golden_frames, max_rows=10)
    parser = check_static(html)
    assert sum(1 for t, _ in parser.tags if t == "tr") == 11
    assert f"showing 10 of {len(golden_frames)} frames" in html
    errors = [f for f in golden_frames[:10] if f.error]
    assert html.count("color:#c62828") == len(errors)
    from kafkalab.dissect.frames_table import frames_table
    assert frames_html(frames_table(golden_frames), max_rows=10) == html


def test_display_hooks_for_messages_nodes_and_batches(demo) -> None:
    produce = demo[1]
    for html in (display.frame_repr_html(produce), display.node_repr_html(produce.tree),
                 display.message_repr_html(produce.message)):
        check_static(html)
    plain = decode_request(produce.raw)           # no tree: the body is shown as nested details
    html = display.message_repr_html(plain)
    check_static(html)
    assert "Produce v9 request · correlation_id=2" in html and "acks: -1" in html
    batch = plain.body["topic_data"][0]["partition_data"][0]["records"][0]
    html = display.batch_repr_html(batch)
    check_static(html)
    assert "order-1" in html and '{&quot;qty&quot;: 3}' in html and "source=demo" in html
    bundle = display.mimebundle(produce, display.frame_repr_html(produce))
    assert set(bundle) == {"text/plain", "text/html"}


@pytest.mark.parametrize("limit", [5, 40])
def test_tree_html_caps_large_trees(demo, limit) -> None:
    html = tree_html(demo[1].tree, max_nodes=limit)
    check_static(html)
    total = sum(1 for _ in demo[1].tree.walk())
    assert html.count("data-path=") == limit and f"… {total - limit} more nodes" in html


def test_trees_name_what_raw_numbers_mean(demo) -> None:
    """API keys, enums, batch attribute bits and millisecond timestamps get their meaning beside the value."""
    from kafkalab.dissect.text import describe_value
    from kafkalab.protocol.tree import FieldNode

    html = frame_html(demo[1])
    assert "request_api_key: 0 (Produce)" in html
    assert "attributes: 1 (gzip, CreateTime)" in html
    assert "base_timestamp: 1700000000000 (2023-11-14 22:13:20.000 UTC)" in html
    assert describe_value(FieldNode("key_type", "key_type", "int8", 0, 1, value=1)) == "1 (TRANSACTION)"
    assert describe_value(FieldNode("b.attributes", "attributes", "int16", 0, 2, value=0x38)) == \
        "56 (none, LogAppendTime, transactional, control)"
    assert describe_value(FieldNode("offset_delta", "offset_delta", "varint", 0, 1, value=3)) == "3"
