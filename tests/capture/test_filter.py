"""The display-filter language: semantics on frames and table rows, and errors that name the position."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalab.capture import read_capture
from kafkalab.dissect.filter import Filter, FilterError, filter_table

from tests.capture.builders import write_golden_pcap


def row(**values):
    base = dict(frame=1, ts=1_700_000_000.0, stream=0, src="10.0.0.1:40000", dst="10.0.0.2:9092", kind="request",
                api_key=0, api_name="Produce", api_version=9, correlation_id=7, client_id="rdkafka-1", size=100,
                request_frame=None, response_frame=2, latency_ms=6.5, error_code=0, error=None, topics=["orders"],
                record_count=5, summary="Produce v9 request · orders[0] · 5 records", diagnostics=[], inferred=False)
    base.update(values)
    return SimpleNamespace(**base)


@pytest.mark.parametrize("expression, expected", [
    ('api_name == "Produce" and latency_ms > 5', True),
    ('api_name == "Produce" and latency_ms > 7', False),
    ("error != null", False),
    ("error == null", True),
    ('"orders" in topics', True),
    ('"payments" in topics', False),
    ('"payments" not in topics', True),
    ('topics contains "orders"', True),
    ('client_id matches "^rdkafka"', True),
    ('client_id ~ "^java"', False),
    ("not inferred", True),
    ("inferred", False),
    ("!inferred && (size >= 100 || kind == 'response')", True),
    ("api_key in (0, 1) and api_version >= 9", True),
    ("api_key in [1, 2]", False),
    ('api_name in ("Fetch", "Produce")', True),
    ('"rdkafka" in client_id', True),
    ('summary contains "5 records"', True),
    ("request_frame == null and response_frame == 2", True),
    ("request_frame > 0", False),                       # ordering with a null is false
    ("error", False),
    ("record_count", True),
    ("latency_ms <= 6.5 and latency_ms >= 6.5", True),
    ("ts > 1600000000", True),
    ("time > 1800000000", False),
    ("correlation_id != 7 or stream == 0", True),
    ("NOT inferred AND api_key == 0", True),
    ('diagnostics matches "gap"', False),
    ("not not inferred", False),
    ("(((size == 100)))", True),
    ("-1 < api_key", True),
    ('src == "10.0.0.1:40000"', True),
])
def test_expressions(expression, expected):
    assert Filter(expression)(row()) is expected


def test_lists_nulls_and_regex_on_lists():
    gap = row(diagnostics=["gap before frame: 10 bytes lost", "resynchronised: skipped 3 bytes"], topics=[],
              error="NOT_LEADER_OR_FOLLOWER", error_code=6, client_id=None)
    assert Filter('diagnostics matches "^gap before"')(gap)
    assert Filter('error == "NOT_LEADER_OR_FOLLOWER" and error_code == 6')(gap)
    assert not Filter('"orders" in topics')(gap)
    assert not Filter('client_id matches "."')(gap)
    assert Filter("client_id == null")(gap)
    assert not Filter("topics")(gap)


@pytest.mark.parametrize("expression, message, position", [
    ("api_name == 5", "api_name holds strings, not numbers", 12),
    ('size > "big"', "size holds numbers, not strings", 7),
    ("colour == 1", "unknown column 'colour'", 0),
    ("size >", "unexpected end of filter", 6),
    ("(size > 1", "expected ')'", 9),
    ('client_id matches "("', "bad regular expression", 19),
    ('topics == "x"', "a list column is tested with 'in' or 'contains'", 10),
    ('"x"', "a literal alone is not a condition", 0),
    ("size > null", "null can only be compared with == or !=", 7),
    ("size $ 2", "unexpected character '$'", 5),
    ('api_name == "Produce', "unterminated string", 12),
    ("size > 1 size", "unexpected 'size'", 9),
    ("", "empty filter", 0),
    ("and", "expected a column or a value", 0),
    ("api_key in (1, size)", "a set holds only literal values", 15),
    ('kind == "a\\q"', "unknown escape", 10),
    ('api_name == "Produce" and (', "unexpected end of filter", 27),   # unfinished: no IndexError
    ("(", "unexpected end of filter", 1),
    ("api_key in (", "unexpected end of filter", 12),
    ("size > 1 and not", "unexpected end of filter", 16),
])
def test_errors_name_the_position(expression, message, position):
    with pytest.raises(FilterError) as caught:
        Filter(expression)
    assert message in caught.value.message
    assert caught.value.position == position
    assert str(caught.value).splitlines()[-1] == "  " + " " * position + "^"


def test_filter_is_no_eval():
    with pytest.raises(FilterError):
        Filter("__import__('os').system('true')")
    with pytest.raises(FilterError):
        Filter("size.__class__ == 1")


def test_capture_filter_and_table_rows_agree(tmp_path):
    path = tmp_path / "golden.pcap"
    write_golden_pcap(path)
    cap = read_capture(path)
    for expression in ['api_name == "Produce"', 'kind == "response" and latency_ms > 0', "error != null",
                       'client_id matches "^rdkafka|^kafka-python"', "not inferred and record_count > 0",
                       'api_name in ("Metadata", "ApiVersions") or "golden-0" in topics']:
        selected = cap.filter(expression)
        by_rows = filter_table(cap.frames, expression)
        expected = [f.frame for f in cap if Filter(expression)(f)]
        assert list(selected["frame"]) == expected == list(by_rows["frame"]), expression
    assert len(cap.filter('api_name == "Produce"')) > 0
    assert len(cap.filter("error == null")) + len(cap.filter("error != null")) == len(cap)
