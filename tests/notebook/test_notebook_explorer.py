"""The Explorer's Python half without a browser: sources, filtering, selection both ways, inflated buffers,
live appends and the static snapshot in its mimebundle."""
from __future__ import annotations

import pytest

from kafkalab.dissect.frames_table import frames_table
from kafkalab.notebook import model

KEY_PATH = "topic_data[0].partition_data[0].records[0].records[0].key"


def test_node_at_agrees_with_deepest_at_on_every_byte_of_every_golden_frame(golden_frames) -> None:
    for frame in golden_frames:
        view = model.frame_view(frame)
        for offset in range(len(frame.raw)):
            expected = frame.tree.deepest_at(offset)
            index = model.node_at(view, 0, offset)
            assert view["nodes"][index]["p"] == expected.path, (frame.frame, offset)
            assert view["nodes"][index]["s"] == expected.start and view["nodes"][index]["e"] == expected.end


def test_views_cover_inflated_buffers(golden_frames) -> None:
    seen = 0
    for frame in golden_frames:
        view = model.frame_view(frame)
        owners = [n for n in view["nodes"] if n["x"] >= 0]
        assert len(view["buffers"]) == 1 + len(owners)
        for owner in owners:
            data = view["buffers"][owner["x"]]["data"]
            seen += 1
            for offset in range(len(data)):              # every inflated byte resolves inside its buffer
                index = model.node_at(view, owner["x"], offset)
                assert index >= 0 and view["nodes"][index]["b"] == owner["x"]
                assert view["nodes"][index]["s"] <= offset < view["nodes"][index]["e"]
    assert seen >= 10


@pytest.fixture()
def explorer(demo):
    pytest.importorskip("anywidget")
    from kafkalab.notebook import Explorer
    return Explorer(demo)


def test_select_path_gives_the_fields_byte_range(explorer, demo) -> None:
    assert explorer.selected_frame == 1 and explorer.selected_path == ""
    assert explorer.select("topic_data[0].name", frame=2) == (0, 36, 43)
    assert demo[1].raw[37:43] == b"orders"                      # compact string: 1 length byte + 6
    assert explorer.selected_node.value == "orders"
    with pytest.raises(KeyError):
        explorer.select("no.such.field")
    assert explorer.selected_path == "topic_data[0].name"


def test_byte_selects_the_deepest_field(explorer) -> None:
    explorer.selected_frame = 2
    assert explorer.select_byte(30) == "acks"
    assert explorer.select_byte(9) == "header.correlation_id"
    assert explorer.select_byte(120) == "topic_data[0].partition_data[0].records[0].deflated"
    assert explorer.selected_range == (0, 111, 194)


def test_inflated_buffer_selection(explorer, demo) -> None:
    explorer.selected_frame = 2
    assert [b["label"] for b in explorer.view["buffers"]] == [
        "Frame 2 (197 bytes)", "Inflated records[0] (60 bytes)"]
    assert explorer.select(KEY_PATH) == (1, 5, 12)
    buffer, start, end = explorer.selected_range
    assert explorer.view["buffers"][buffer]["data"][start:end] == b"order-1"
    assert explorer.select_byte(50, buffer=1) == "topic_data[0].partition_data[0].records[0].records[1].value"
    with pytest.raises(KeyError):
        explorer.select_byte(60, buffer=1)


def test_selected_path_is_kept_across_frames_that_have_it(explorer, golden_frames) -> None:
    explorer.append(golden_frames[:4])          # numbers 1..4 clash with the demo's: only new numbers enter
    assert explorer.row_total == 4
    explorer.select("header.correlation_id", frame=1)
    explorer.selected_frame = 2
    assert explorer.selected_path == "header.correlation_id"
    explorer.select("acks")
    explorer.selected_frame = 3                   # a Metadata response has no acks
    assert explorer.selected_path == ""


def test_filter_rows_and_columns(explorer) -> None:
    assert [r["frame"] for r in explorer.rows] == [1, 2, 3] and explorer.match_total == 3
    explorer.filter_text = "produce"
    assert [r["frame"] for r in explorer.rows] == [2] and explorer.match_total == 1
    explorer.filter_text = "v12"
    assert [r["frame"] for r in explorer.rows] == [3]
    explorer.filter_text = "9092"
    assert explorer.match_total == 3
    explorer.filter_text = ""
    row = explorer.rows[1]
    assert row["summary"].startswith("Produce v9 request") and row["time"].endswith(".002000")
    assert row["latency_ms"] is None and isinstance(row["size"], int)


def test_append_and_follow_a_growing_source(demo) -> None:
    pytest.importorskip("anywidget")
    from kafkalab.notebook import explore

    journal = demo[:1]
    explorer = explore(journal)
    handle = explorer.follow(journal, interval=60)      # long interval: the test drives poll() itself
    assert explorer.following
    journal.extend(demo[1:])
    assert handle.poll() == 2 and handle.poll() == 0
    assert [r["frame"] for r in explorer.rows] == [1, 2, 3]
    explorer.unfollow()
    assert not explorer.following and not handle.running


class FakeCapture:
    """A Capture's shape: a frames table and 1-based ``cap[n]``."""

    def __init__(self, frames):
        self.frame_list = frames

    @property
    def frames(self):
        return frames_table(self.frame_list)

    def __getitem__(self, number):
        return self.frame_list[number - 1]


class FakeBroker:
    """A Broker's shape: a frames table and ``frame(n)``, frame numbers not starting at 1 (a ring)."""

    def __init__(self, frames):
        self.kept = frames

    @property
    def frames(self):
        return frames_table(self.kept)

    def frame(self, number):
        return next(f for f in self.kept if f.frame == number)


def test_capture_and_broker_shaped_sources(golden_frames) -> None:
    pytest.importorskip("anywidget")
    from kafkalab.notebook import explore

    explorer = explore(FakeCapture(golden_frames[:6]))
    explorer.selected_frame = 5
    assert explorer.view["frame"] == 5 and explorer.frame(5) is golden_frames[4]
    ring = golden_frames[10:20]
    broker = FakeBroker(ring)
    explorer = explore(broker)
    assert explorer.selected_frame == 11 and explorer.row_total == 10
    handle = explorer.follow(interval=60)
    broker.kept = golden_frames[10:23]
    assert handle.poll() == 3 and explorer.row_total == 13
    explorer.unfollow()
    with pytest.raises(TypeError):
        explore(42)


def test_mimebundle_carries_a_static_snapshot(explorer) -> None:
    explorer.select("acks", frame=2)
    data, _metadata = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html = data["text/html"]
    assert "<script" not in html and "<style" not in html
    assert "Produce v9 request" in html and html.count("<mark") == 2     # hex and ASCII of acks
    assert data["text/plain"].startswith("<kafkalab Explorer: 3 frames")


def test_widget_assets_ship_in_the_package() -> None:
    from pathlib import Path

    import kafkalab.notebook as nb
    static = Path(nb.__file__).parent / "static"
    js = (static / "explorer.js").read_text()
    assert "export default" in js and "http://" not in js and "https://" not in js and "import " not in js
    assert (static / "explorer.css").read_text().strip()


def test_the_list_takes_the_display_filter_language(explorer) -> None:
    explorer.filter_text = 'api_name == "Produce" and kind == "request"'
    assert [r["frame"] for r in explorer.rows] == [2] and explorer.filter_error == ""
    explorer.filter_text = 'api_name == "Produce" and ('              # unfinished: the filter's own error
    assert "unexpected end of filter" in explorer.filter_error
    assert [r["frame"] for r in explorer.rows] == [2]                     # the last good filter stays
    explorer.filter_text = "latency_ms > 1"
    assert explorer.filter_error == "" and explorer.match_total == 0
    explorer.filter_text = ""
    assert explorer.match_total == 3


def test_sort_pages_and_go_to(golden_frames) -> None:
    pytest.importorskip("anywidget")
    from kafkalab.notebook import explore

    explorer = explore(golden_frames)
    explorer.sort = "-size"
    sizes = [r["size"] for r in explorer.rows_at(0, len(golden_frames))]
    assert sizes == sorted((f.size for f in golden_frames), reverse=True)
    explorer.sort = "api_name"
    names = [r["api_name"] for r in explorer.rows_at(0, 1000)]
    assert names == sorted(names)
    window = explorer.rows_at(100, 10)
    assert [r["_i"] for r in window] == list(range(100, 110))
    last = golden_frames[-1].frame
    explorer.go_to(last)
    assert explorer.selected_frame == last
    assert explorer.rows_at(explorer.selected_index, 1)[0]["frame"] == last
    explorer.go_to(10**6)
    assert "there is no frame 1000000" in explorer.notice and explorer.selected_frame == last


def test_an_evicted_frame_says_what_happened(golden_frames) -> None:
    pytest.importorskip("anywidget")
    from kafkalab.notebook import explore

    broker = FakeBroker(golden_frames[:5])
    explorer = explore(broker)
    broker.kept = golden_frames[3:5]                       # the ring moved on: frames 1..3 are gone

    def frame(number):
        for f in broker.kept:
            if f.frame == number:
                return f
        raise KeyError(f"frame {number} is not in the journal (it holds frames 4..5)")
    broker.frame = frame
    explorer.selected_frame = 2
    assert explorer.view["missing"].startswith("frame 2 is not in the journal")
    assert explorer.view["nodes"] == [] and "cannot be shown" in explorer.notice
    explorer.selected_frame = 4
    assert explorer.notice == "" and explorer.view["frame"] == 4


def test_following_appends_only_what_is_new(demo) -> None:
    pytest.importorskip("anywidget")
    from kafkalab.notebook import explore

    frames = demo[:1]
    explorer = explore(frames)
    explorer.filter_text = 'kind == "request"'
    handle = explorer.follow(frames, interval=60)
    frames.extend(demo[1:])
    assert handle.poll() == 2 and handle.poll() == 0
    assert [r["frame"] for r in explorer.rows] == [1, 2] and explorer.row_total == 3
    assert explorer.frame(3) is demo[2]
    explorer.unfollow()


def test_apply_as_filter_from_a_field(explorer) -> None:
    explorer.select("topic_data[0].name", frame=2)
    assert explorer.field_filter == 'topics contains "orders"'
    explorer.select("header.request_api_key")
    assert explorer.field_filter == "api_key == 0"
    explorer.filter_text = explorer.field_filter
    assert [r["frame"] for r in explorer.rows] == [2]
    explorer.select("acks")
    assert explorer.field_filter == ""


def test_the_saved_outputs_pair_snapshot_and_live_view(explorer, monkeypatch) -> None:
    import IPython.display

    published = []
    monkeypatch.setattr(IPython.display, "publish_display_data", lambda data, metadata=None: published.append(data))
    explorer.select("acks", frame=2)
    explorer._ipython_display_()
    snapshot, live = published
    assert 'class="kl-snapshot"' in snapshot["text/html"] and snapshot["text/html"].count("<mark") == 2
    assert "application/vnd.jupyter.widget-view+json" not in snapshot
    assert "application/vnd.jupyter.widget-view+json" in live and "kl-snapshot" not in live["text/html"]


def test_a_frame_knows_its_partner() -> None:
    pytest.importorskip("anywidget")
    from pathlib import Path

    import kafkalab
    from kafkalab.notebook import explore

    cap = kafkalab.read_capture(Path(__file__).resolve().parents[2] / "captures" / "lossy.pcap")
    request = next(f for f in cap if f.kind == "request" and f.response_frame is not None)
    explorer = explore(cap)
    explorer.go_to(request.frame)
    assert explorer.view["partner"] == request.response_frame
    explorer.go_to(request.response_frame)
    assert explorer.view["partner"] == request.frame


def test_expert_info_groups_every_diagnostic() -> None:
    pytest.importorskip("anywidget")
    from pathlib import Path

    import kafkalab
    from kafkalab.notebook import explore

    cap = kafkalab.read_capture(Path(__file__).resolve().parents[2] / "captures" / "midstream.pcap")
    explorer = explore(cap)
    groups = {g["what"]: g for g in explorer.expert}
    notes = [(f.frame, d) for f in cap for d in f.diagnostics]
    assert sum(g["count"] for g in explorer.expert) == len(notes)
    resync = groups["resynchronised: skipped N bytes to find a frame start"]
    assert resync["frames"] == [n for n, d in notes if d.startswith("resynchronised")][:5]
    frames = list(cap)
    half = explore(frames[: len(frames) // 2])             # following adds the rest: counts grow incrementally
    half.append(frames[len(frames) // 2:])
    assert sorted((g["what"], g["count"]) for g in half.expert) == sorted((g["what"], g["count"]) for g in explorer.expert)


def test_selected_bytes_follow_the_buffer(explorer, demo) -> None:
    assert explorer.selected_bytes is None
    explorer.select(KEY_PATH, frame=2)
    assert explorer.selected_bytes == b"order-1"                  # from the inflated buffer
    explorer.select("acks")
    assert explorer.selected_bytes == demo[1].raw[29:31] == b"\xff\xff"


def test_following_one_connection_filters_the_list_to_its_stream() -> None:
    from kafka import KafkaProducer

    from kafkalab import Broker, explore

    with Broker(topics={"t": 1}) as broker:
        for client in ("one", "two"):
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, client_id=client)
            producer.send("t", b"from " + client.encode())
            producer.flush()
            producer.close()
        ex = explore(broker)
        table = ex.frames
        produce = int(table[(table.api_name == "Produce") & (table.client_id == "two")].frame.iloc[0])
        stream = int(table.set_index("frame").stream[produce])
        ex._on_message(ex, {"type": "connection", "frame": produce}, [])      # the button's message
        assert ex.filter_text == f"stream == {stream}" and ex.filter_error == ""
        shown = ex.rows_at(0, 1000)
        assert 0 < len(shown) == ex.match_total < ex.row_total
        assert {r["frame"] for r in shown} == set(table[table.stream == stream].frame)
        assert {tuple(sorted((r["src"], r["dst"]))) for r in shown} == \
            {tuple(sorted(table[table.frame == produce][["src", "dst"]].iloc[0]))}           # one connection
        ex.filter_text = ""
        assert ex.follow_connection(shown[0]["frame"]) == f"stream == {stream}"
        with pytest.raises(KeyError, match="no frame 99999"):
            ex.follow_connection(99999)


def test_the_sequence_diagram_of_a_connection_selects_frames(explorer) -> None:
    import re

    svg = explorer.show_sequence()
    table = explorer.frames
    stream = int(table.set_index("frame").stream[explorer.selected_frame])
    drawn = sorted(int(n) for n in re.findall(r'<line class="arrow [a-z]+" data-frame="(\d+)"', svg))
    assert drawn == sorted(int(f) for f in table[table.stream == stream].frame) and explorer.sequence == svg
    explorer._on_message(explorer, {"type": "goto", "frame": drawn[-1]}, [])    # an arrow clicked
    assert explorer.selected_frame == drawn[-1]
    explorer._on_message(explorer, {"type": "sequence", "show": False}, [])
    assert explorer.sequence == ""
    with pytest.raises(KeyError, match="no frame 4242"):
        explorer.show_sequence(4242)


def test_the_shown_frames_export_as_a_pcap_that_tshark_and_kafkalab_read(tmp_path) -> None:
    import subprocess

    from kafka import KafkaProducer

    from kafkalab import Broker, explore, read_capture
    from tests.tools import require_tool

    with Broker(topics={"t": 1}) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for n in range(3):
            producer.send("t", b"v%d" % n).get(timeout=30)
        producer.close()
        ex = explore(broker)
        ex.filter_text = 'api_name == "Produce"'
        shown = [r["frame"] for r in ex.rows_at(0, 1000)]
        assert len(shown) == 6 and ex.match_total < ex.row_total
        assert ex.write_pcap(tmp_path / "produce.pcap") == 6
    cap = read_capture(tmp_path / "produce.pcap")
    again = cap.frames
    assert list(again.api_name) == ["Produce"] * 6 and list(again.kind) == ["request", "response"] * 3
    originals = [ex.frame(n) for n in shown]
    assert [cap[int(n)].raw for n in again.frame] == [f.raw for f in originals]      # byte for byte
    tshark = require_tool("tshark")
    out = subprocess.run([tshark, "-r", str(tmp_path / "produce.pcap"), "-d", f"tcp.port=={broker.port},kafka",
                          "-Y", "kafka", "-T", "fields", "-E", "separator=,", "-e", "kafka.correlation_id",
                          "-e", "kafka.api_key"], capture_output=True, text=True, timeout=60, check=True).stdout.split()
    correlations = [int(f.correlation_id) for f in originals]
    assert out == [f"{c},0" if f.kind == "request" else f"{c}," for c, f in zip(correlations, originals)]
