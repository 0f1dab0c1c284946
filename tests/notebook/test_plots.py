"""kafkalab.notebook.plots: the numbers behind the plots, from hand-built traffic whose answers are known.

The scenario is built with the codec (requests and responses encoded, then turned into Frames the way the
capture reader and the journal do) and linked by hand; every expected value below is worked out from the
scenario's definition, not read back from kafkalab. Plots are checked by their data and their artists
(one line per partition, one arrow per frame), never by pixels.
"""
from __future__ import annotations

import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest
from pathlib import Path

from kafkalab.dissect.frame import frame_from_message
from kafkalab.dissect.frames_table import frames_table
from kafkalab.dissect.tables import exchanges_table
from kafkalab.notebook import plots
from kafkalab.protocol import decode_request, decode_response, encode_request, encode_response
from kafkalab.protocol.records import build_batch, encode_records

matplotlib.use("Agg")

ORDERS_ID = uuid.UUID(int=0x0A11CE)
T0 = 1_700_000_000.0
SVG = "{http://www.w3.org/2000/svg}"


class Scenario:
    """Frames on the wire, numbered in order, each response linked to its request as sources do."""

    def __init__(self) -> None:
        self.frames = []
        self.clock = T0

    def _add(self, message, raw, stream, src, dst, client_id, at):
        self.clock = at if at is not None else self.clock + 0.010
        frame = frame_from_message(message, raw, number=len(self.frames) + 1, ts=self.clock, stream=stream,
                                   src=src, dst=dst, client_id=client_id)
        self.frames.append(frame)
        return frame

    def request(self, api, version, body, *, stream=0, corr=1, at=None, raw=None):
        raw = raw or encode_request(api, version, body, correlation_id=corr, client_id=f"client-{stream}")
        return self._add(decode_request(raw), raw, stream, f"10.0.0.{stream + 1}:50000", "10.0.0.99:9092",
                         None, at)

    def response(self, request, body, latency_ms, *, linked=True):
        raw = encode_response(request.api_name, request.api_version, body, correlation_id=request.correlation_id)
        message = decode_response(raw, request.api_name, request.api_version)
        frame = self._add(message, raw, request.stream, request.dst, request.src, request.client_id,
                          request.ts + latency_ms / 1000)
        if linked:
            frame.request_frame, request.response_frame = request.frame, frame.frame
            frame.latency_ms = request.latency_ms = latency_ms
        return frame


def metadata_response(partitions=2):
    return {"brokers": [{"node_id": 1, "host": "10.0.0.99", "port": 9092, "rack": None}],
            "cluster_id": "lab", "controller_id": 1,
            "topics": [{"error_code": 0, "name": "orders", "topic_id": ORDERS_ID, "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 0,
                                        "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}
                                       for p in range(partitions)]}]}


def fetch_response_v16(high_watermarks, errors=None):
    errors = errors or {}
    return {"responses": [{"topic_id": ORDERS_ID, "partitions": [
        {"partition_index": p, "error_code": errors.get(p, 0), "high_watermark": hw, "last_stable_offset": hw,
         "log_start_offset": 0, "records": None} for p, hw in high_watermarks.items()]}]}


def commit_request_v9(group, offsets):
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [{"name": "orders", "partitions": [{"partition_index": p, "committed_offset": o}
                                                         for p, o in offsets.items()]}]}


def commit_response_v9(errors):
    return {"topics": [{"name": "orders", "partitions": [{"partition_index": p, "error_code": e}
                                                         for p, e in errors.items()]}]}


@pytest.fixture()
def lag_scenario():
    """Group g1 consumes orders[0] and orders[1]; g2's position is only known from an OffsetFetch."""
    s = Scenario()
    meta = s.request("Metadata", 12, {"topics": [{"name": "orders"}]}, corr=1)
    s.response(meta, metadata_response(), 0.5)
    fetch = s.request("Fetch", 16, {"max_wait_ms": 0, "min_bytes": 1, "topics": []}, corr=2)
    s.response(fetch, fetch_response_v16({0: 10, 1: 7}), 1.0)                        # HW p0=10, p1=7
    commit = s.request("OffsetCommit", 9, commit_request_v9("g1", {0: 4, 1: 7}), corr=3)
    s.response(commit, commit_response_v9({0: 0, 1: 25}), 0.3)                        # p1 rejected
    fetch = s.request("Fetch", 11, {"max_wait_ms": 0, "min_bytes": 1, "topics": []}, corr=4)
    s.response(fetch, {"responses": [{"topic": "orders", "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 12, "records": None},
        {"partition_index": 1, "error_code": 6, "high_watermark": -1, "records": None}]}]}, 1.0)  # p1: error
    commit = s.request("OffsetCommit", 10, {"group_id": "g1", "generation_id_or_member_epoch": -1,
                                            "member_id": "", "topics": [{"topic_id": ORDERS_ID, "partitions": [
                                                {"partition_index": 1, "committed_offset": 5}]}]}, corr=5)
    s.response(commit, {"topics": [{"topic_id": ORDERS_ID, "partitions": [
        {"partition_index": 1, "error_code": 0}]}]}, 0.3)
    offsets = s.request("OffsetFetch", 8, {"groups": [{"group_id": "g2", "topics": None}]}, corr=6)
    s.response(offsets, {"groups": [{"group_id": "g2", "error_code": 0, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1, "metadata": "",
         "error_code": 0}]}]}]}, 0.4)
    fetch = s.request("Fetch", 16, {"max_wait_ms": 0, "min_bytes": 1, "topics": []}, corr=7)
    s.response(fetch, fetch_response_v16({0: 15, 1: 9}), 1.0)
    return s.frames


# ---------------------------------------------------------------- consumer lag

def test_offsets_table_reads_watermarks_and_accepted_commits(lag_scenario):
    offsets = plots.offsets_table(lag_scenario)
    got = [(r.source, r.kind, None if pd.isna(r.group) else r.group, r.topic, int(r.partition), int(r.offset))
           for r in offsets.itertuples()]
    assert got == [
        ("Fetch", "high_watermark", None, "orders", 0, 10), ("Fetch", "high_watermark", None, "orders", 1, 7),
        ("OffsetCommit", "committed", "g1", "orders", 0, 4),          # p1's commit was rejected (error 25)
        ("Fetch", "high_watermark", None, "orders", 0, 12),           # p1 had an error: no watermark
        ("OffsetCommit", "committed", "g1", "orders", 1, 5),          # v10 names the topic by id
        ("OffsetFetch", "committed", "g2", "orders", 0, 3),
        ("Fetch", "high_watermark", None, "orders", 0, 15), ("Fetch", "high_watermark", None, "orders", 1, 9),
    ]
    assert list(offsets.columns) == plots.OFFSET_COLUMNS


def test_consumer_lag_series_and_latest(lag_scenario):
    lag = plots.consumer_lag(lag_scenario)
    got = [(r.group, int(r.partition), int(r.high_watermark), int(r.committed), int(r.lag)) for r in lag.itertuples()]
    assert got == [
        ("g1", 0, 10, 4, 6),       # commit p0=4 against HW 10
        ("g1", 0, 12, 4, 8),       # HW moves to 12
        ("g1", 1, 7, 5, 2),        # commit p1=5 (v10, by topic id) against HW 7
        ("g2", 0, 12, 3, 9),       # g2 known from OffsetFetch
        ("g1", 0, 15, 4, 11), ("g2", 0, 15, 3, 12),     # HW 15 on p0: both groups' lag moves
        ("g1", 1, 9, 5, 4),
    ]
    latest = plots.consumer_lag(lag_scenario, latest=True)
    assert [(r.group, int(r.partition), int(r.lag)) for r in latest.itertuples()] == [
        ("g1", 0, 11), ("g1", 1, 4), ("g2", 0, 12)]
    # an offsets table (what a Spark job would hand over) gives the same answer as the frames
    table = plots.offsets_table(lag_scenario)
    assert plots.consumer_lag(table).equals(lag)


def test_list_offsets_latest_is_a_high_watermark_and_earliest_is_not():
    """A consumer starting at the end asks ListOffsets for the latest offset (timestamp -1): under
    read_uncommitted that answer is the high watermark, and lag can be measured against it before any
    Fetch. Earliest (-2) answers and read_committed answers (the last stable offset) are not."""
    s = Scenario()

    def list_offsets(timestamps, answers, isolation=0, corr=1):
        request = s.request("ListOffsets", 7, {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": "orders", "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": t}
                                              for p, t in timestamps.items()]}]}, corr=corr)
        s.response(request, {"throttle_time_ms": 0, "topics": [{"name": "orders", "partitions": [
            {"partition_index": p, "error_code": e, "timestamp": -1, "offset": o, "leader_epoch": 0}
            for p, (e, o) in answers.items()]}]}, 0.2)

    list_offsets({0: -1, 1: -2}, {0: (0, 40), 1: (0, 5)}, corr=1)            # p0 latest, p1 earliest
    list_offsets({0: -1}, {0: (0, 38)}, isolation=1, corr=2)                  # read_committed: the LSO
    list_offsets({2: -1}, {2: (6, -1)}, corr=3)                               # NOT_LEADER: no offset
    commit = s.request("OffsetCommit", 9, commit_request_v9("g1", {0: 25}), corr=4)
    s.response(commit, commit_response_v9({0: 0}), 0.3)
    offsets = plots.offsets_table(s.frames)
    assert [(r.source, r.kind, r.topic, int(r.partition), int(r.offset)) for r in offsets.itertuples()] == [
        ("ListOffsets", "high_watermark", "orders", 0, 40), ("OffsetCommit", "committed", "orders", 0, 25)]
    lag = plots.consumer_lag(s.frames, latest=True)
    assert [(r.group, int(r.partition), int(r.high_watermark), int(r.committed), int(r.lag))
            for r in lag.itertuples()] == [("g1", 0, 40, 25, 15)]


def test_unresolved_topic_ids_stay_visible():
    s = Scenario()
    fetch = s.request("Fetch", 16, {"max_wait_ms": 0, "min_bytes": 1, "topics": []})
    s.response(fetch, fetch_response_v16({0: 3}), 1.0)                  # no Metadata: id unknown
    offsets = plots.offsets_table(s.frames)
    assert list(offsets["topic"]) == [str(ORDERS_ID)]


def test_offsets_need_bodies():
    with pytest.raises(TypeError, match="Frame objects"):
        plots.offsets_table(frames_table([]))


# ---------------------------------------------------------------- exchanges and latency

@pytest.fixture()
def traffic():
    """Two connections, pipelined requests, an error, an acks=0 Produce, an unanswered request and a
    response whose request is not in the data."""
    s = Scenario()
    latencies = {"Metadata": [1.0, 3.0, 5.0, 7.0], "ApiVersions": [0.2, 0.4]}
    corr = 0
    for api, values in latencies.items():
        for value in values:
            corr += 1
            body = {"topics": [{"name": "orders"}]} if api == "Metadata" else {}
            version = 12 if api == "Metadata" else 3
            request = s.request(api, version, body, corr=corr, stream=corr % 2)
            s.response(request, metadata_response() if api == "Metadata" else {"error_code": 0, "api_keys": []},
                       value)
    batch = encode_records([build_batch([(b"k1", b"value-1"), (b"k2", b"value-22")], base_timestamp=1000)])
    produce = s.request("Produce", 9, {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]}, corr=20)
    s.response(produce, {"responses": [{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": 3, "base_offset": -1}]}]}, 2.0)            # UNKNOWN_TOPIC_OR_PARTITION
    s.request("Produce", 9, {"acks": 0, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]}, corr=21)     # no answer expected
    s.request("Metadata", 12, {"topics": None}, corr=22, stream=1)                          # lost answer
    unseen = SimpleNamespace(api_name="ApiVersions", api_version=3, correlation_id=99, stream=0, ts=s.clock,
                             src="10.0.0.1:50000", dst="10.0.0.99:9092", client_id="client-0")
    s.response(unseen, {"error_code": 0, "api_keys": []}, 0.1, linked=False)      # its request was not seen
    return s.frames


def test_exchanges_from_the_frames_table_match_the_frame_objects(traffic):
    derived = plots.exchanges_from_frames(frames_table(traffic))
    direct = exchanges_table(traffic)
    for table in (derived, direct):                       # the time unit (us or ns) is not part of the contract
        for name in ("request_time", "response_time"):
            table[name] = table[name].astype("datetime64[ns, UTC]")
    pd.testing.assert_frame_equal(derived, direct)


def test_latency_stats(traffic):
    stats = plots.latency_stats(frames_table(traffic), percentiles=(50, 90))
    metadata = stats.loc["Metadata"]
    assert (metadata["requests"], metadata["answered"], metadata["unanswered"], metadata["errors"]) == (5, 4, 1, 0)
    assert metadata["p50_ms"] == pytest.approx(np.percentile([1, 3, 5, 7], 50))
    assert metadata["p90_ms"] == pytest.approx(np.percentile([1, 3, 5, 7], 90))
    assert metadata["max_ms"] == pytest.approx(7.0) and metadata["mean_ms"] == pytest.approx(4.0)
    produce = stats.loc["Produce"]
    assert (produce["requests"], produce["answered"], produce["unanswered"], produce["errors"]) == (2, 1, 0, 1)
    assert list(stats.index) == ["Metadata", "ApiVersions", "Produce"]        # most requested first, then seen first
    # a Spark-like table (toPandas) and the Frame list give the same statistics
    spark_like = type("SparkFrame", (), {"toPandas": lambda self: frames_table(traffic)})()
    pd.testing.assert_frame_equal(plots.latency_stats(spark_like, (50, 90)), stats)
    pd.testing.assert_frame_equal(plots.latency_stats(traffic, (50, 90)), stats)


def test_error_timeline(traffic):
    errors = plots.error_timeline(traffic)
    got = [(r.api_name, r.category, r.detail) for r in errors.itertuples()]
    assert ("Produce", "error", "UNKNOWN_TOPIC_OR_PARTITION") in got
    assert ("Metadata", "no response", "no response in the data") in got
    assert not any(api == "Produce" and category == "no response" for api, category, _ in got)   # acks=0
    assert errors["time"].is_monotonic_increasing


def test_error_timeline_shows_crc_diagnostics():
    s = Scenario()
    batch = bytearray(encode_records([build_batch([(b"k", b"x" * 20)], base_timestamp=1000)]))
    batch[-3] ^= 0xFF
    raw = encode_request("Produce", 9, {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": bytes(batch)}]}]}, correlation_id=1,
        client_id="c")
    request = s.request("Produce", 9, {}, raw=raw)
    s.response(request, {"responses": [{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": 2, "base_offset": -1}]}]}, 1.0)
    errors = plots.error_timeline(s.frames)
    categories = dict(zip(errors["kind"], zip(errors["category"], errors["detail"])))
    assert categories["request"][0] == "diagnostic" and "CRC mismatch" in categories["request"][1]
    assert categories["response"] == ("error", "CORRUPT_MESSAGE")


def test_throughput_per_topic_and_bin():
    s = Scenario()
    sizes = {"orders": [], "payments": []}
    for i in range(6):
        topic = "orders" if i % 3 else "payments"
        records = [(b"k%d" % i, b"v" * (i + 1), [("h", b"12")])]
        sizes[topic].append((T0 + i * 0.5, 2 + i + 1 + 1 + 2))          # key + value + header key + value
        batch = encode_records([build_batch(records, base_timestamp=1000)])
        s.request("Produce", 9, {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}, corr=i + 1, at=T0 + i * 0.5)
    table = plots.throughput(s.frames, freq="1s")
    got = {(int((r.time.timestamp() - T0)), r.topic): (r.records, r.bytes) for r in table.itertuples()}
    expected: dict = {}
    for topic, items in sizes.items():
        for when, size in items:
            key = (int(when - T0), topic)
            count, total = expected.get(key, (0, 0))
            expected[key] = (count + 1, total + size)
    assert got == expected
    assert set(table["direction"]) == {"produce"}
    assert plots.throughput(s.frames, direction="fetch").empty


# ---------------------------------------------------------------- sequence diagrams

def _svg(diagram):
    root = ET.fromstring(diagram.svg)                      # well-formed XML
    groups = [g for g in root.iter(f"{SVG}g") if "exchange" in g.get("class", "").split()]
    arrows = [line for line in root.iter(f"{SVG}line") if "arrow" in line.get("class", "").split()]
    return root, groups, arrows


def test_sequence_diagram_one_group_per_exchange_one_arrow_per_frame(traffic):
    table = frames_table(traffic)
    diagram = plots.sequence_diagram(traffic)
    root, groups, arrows = _svg(diagram)
    requests = table[table["kind"] == "request"]
    orphans = table[(table["kind"] == "response") & table["request_frame"].isna()]
    assert len(groups) == len(requests) + len(orphans) == len(diagram.exchanges)
    assert len(arrows) == len(table)
    assert sorted(int(a.get("data-frame")) for a in arrows) == sorted(table["frame"].astype(int))
    kinds = [a.get("class").split()[1] for a in arrows]
    assert kinds.count("request") == len(requests) and kinds.count("response") == (table["kind"] == "response").sum()
    # every answered request's group carries both frame numbers, as the frames table links them
    pairs = {(g.get("data-request-frame"), g.get("data-response-frame")) for g in groups}
    for row in requests.itertuples():
        answer = "" if pd.isna(row.response_frame) else str(int(row.response_frame))
        assert (str(row.frame), answer) in pairs
    classes = [g.get("class") for g in groups]
    assert classes.count("exchange orphan") == 1 and classes.count("exchange unanswered") == 2
    labels = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "no response expected (acks=0)" in labels and "request not in the data" in labels
    # the lifelines: both clients, then the broker
    assert diagram.lifelines == ["10.0.0.2:50000", "10.0.0.1:50000", "10.0.0.99:9092"]


def test_every_arrow_has_a_wide_invisible_hit_stroke_over_it(traffic):
    root, _, arrows = _svg(plots.sequence_diagram(traffic))
    hits = [line for line in root.iter(f"{SVG}line") if line.get("class") == "arrow-hit"]
    assert len(hits) == len(arrows)
    for arrow, hit in zip(arrows, hits):
        assert [hit.get(k) for k in ("data-frame", "x1", "y1", "x2", "y2")] == \
            [arrow.get(k) for k in ("data-frame", "x1", "y1", "x2", "y2")]
        assert float(hit.get("stroke-width")) >= 10 and hit.get("stroke-opacity") == "0"
        assert hit.get("pointer-events") == "stroke"
    rows = sorted(float(a.get("y1")) for a in arrows)
    assert min(b - a for a, b in zip(rows, rows[1:])) >= float(hits[0].get("stroke-width"))   # never overlap


def test_sequence_diagram_per_connection_and_window(traffic):
    table = frames_table(traffic)
    for stream in (0, 1):
        diagram = plots.sequence_diagram(table, stream=stream)
        _, groups, arrows = _svg(diagram)
        assert len(arrows) == (table["stream"] == stream).sum()
        assert {g.get("data-stream") for g in groups} == {str(stream)}
        assert len(diagram.lifelines) == 2
    window = plots.sequence_diagram(table, max_exchanges=3, start=2)
    assert len(window.exchanges) == 3 and "showing exchanges 3-5 of" in window.note
    first_requests = table[table["kind"] == "request"]["frame"].astype(int).tolist()[2:5]
    assert [e.request.frame for e in window.exchanges] == first_requests


def test_sequence_diagram_display_forms(traffic):
    diagram = plots.sequence_diagram(traffic, stream=0)
    bundle = diagram._repr_mimebundle_()
    assert bundle["image/svg+xml"] == diagram._repr_svg_() == diagram.svg
    assert "image/png" not in bundle                                            # saved once, as SVG
    assert diagram.to_png().startswith(b"\x89PNG\r\n\x1a\n")
    lines = bundle["text/plain"].splitlines()
    assert len(lines) == 1 + len(diagram.arrows)
    assert "→" in lines[1] and "←" in lines[2]
    assert diagram.svg == plots.sequence_diagram(traffic, stream=0).svg        # deterministic


def test_sequence_diagram_escapes_peer_text():
    s = Scenario()
    request = s.request("FindCoordinator", 2, {"key": "<g&\"x\">"}, corr=1)
    s.response(request, {"error_code": 0, "node_id": 1, "host": "h", "port": 1}, 0.1)
    diagram = plots.sequence_diagram(s.frames)
    root = ET.fromstring(diagram.svg)
    assert any('<g&"x">' in (t.text or "") for t in root.iter(f"{SVG}text"))


# ---------------------------------------------------------------- drawing

def test_plots_draw_their_data(traffic, lag_scenario):
    import matplotlib.pyplot as plt

    ax = plots.plot_consumer_lag(lag_scenario)
    assert len(ax.get_lines()) == 3                          # g1/p0, g1/p1, g2/p0
    ax = plots.plot_latency(traffic)
    assert len(ax.collections) == 3                          # Metadata, ApiVersions, Produce
    ax = plots.plot_latency_percentiles(traffic)
    points = [c for c in ax.collections if c.get_label() in ("p50", "p90", "p99", "max")]
    assert [len(c.get_offsets()) for c in points] == [3] * 4      # p50, p90, p99, max for three APIs
    ax = plots.plot_errors(traffic)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(dict.fromkeys(
        plots.error_timeline(traffic)["api_name"]))
    ax = plots.plot_throughput(traffic, metric="bytes")
    assert len(ax.patches) >= 1
    plt.close("all")


def test_importing_plots_does_not_import_matplotlib():
    code = "import sys, kafkalab.notebook.plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- comparing frames

def _produce(codec="none", acks=-1):
    batch = build_batch([(b"k%d" % i, b"v" * 20) for i in range(3)], codec=codec, base_timestamp=1000)
    raw = encode_request("Produce", 9, {"acks": acks, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": [batch]}]}]}, correlation_id=1, client_id="c")
    return decode_request(raw, annotate=True)


def test_compare_frames_keeps_what_differs():
    assert plots.compare_frames(_produce(acks=-1), _produce(acks=0)).values.tolist() == [
        ["acks", "-1", "0", 2, 2, False]]
    diff = plots.compare_frames(_produce("none"), _produce("zstd"))
    by_field = {path.rsplit(".", 1)[-1]: (a, b) for path, a, b in zip(diff["path"], diff["a"], diff["b"])}
    assert by_field["attributes"] == ("0 (none, CreateTime)", "4 (zstd, CreateTime)")     # the codec bits
    longest = max(diff["path"], key=len)
    assert len(longest) > 50 and longest in repr(diff) and longest in diff._repr_html_()   # paths kept whole
    assert {"crc", "batch_length", "size", "deflated", "inflated"} <= set(by_field)
    assert pd.isna(by_field["deflated"][0]) and by_field["deflated"][1] == "[compressed]"
    assert not any(".records[0].records[" in path for path in diff["path"])   # same records once inflated
    everything = plots.compare_frames(_produce(), _produce(), differences_only=False)
    leaves = [n for n in _produce().tree.walk() if not n.children]
    assert len(everything) == len(leaves) and everything["same"].all()


# ---------------------------------------------------------------- readable on every shipped capture

CAPTURES = sorted((Path(__file__).resolve().parents[2] / "captures").glob("*.pcap"))
PLOTS = ["plot_latency", "plot_latency_percentiles", "plot_errors", "plot_throughput", "plot_consumer_lag",
         "plot_io"]


def _texts(fig):
    """Every visible, non-empty text of a drawn figure with its box on the canvas."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    out = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not str(text.get_text()).strip():
            continue
        box = text.get_window_extent(renderer)
        if box.width > 1 and box.height > 1 and box.overlaps(canvas):    # drawn (not an unused tick slot)
            out.append((text.get_text(), box))
    return out


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("name", PLOTS)
def test_every_plot_on_every_shipped_capture_is_readable(capture, name):
    """No two labels overlap, and an axis either shows data or its title says there is none."""
    import matplotlib.pyplot as plt

    import kafkalab

    cap = kafkalab.read_capture(capture)
    source = cap.frame_list if name == "plot_consumer_lag" else cap
    ax = getattr(plots, name)(source)
    fig = ax.figure
    fig.canvas.draw()
    texts = _texts(fig)
    clashes = [(a, b) for i, (a, box_a) in enumerate(texts) for b, box_b in texts[i + 1:] if _overlaps(box_a, box_b)]
    assert not clashes, f"{name} on {capture.name}: overlapping labels {clashes[:5]}"
    drawn = [c for c in ax.collections if len(c.get_offsets()) or len(getattr(c, "get_segments", list)())]
    has_data = bool(drawn or [line for line in ax.get_lines() if len(line.get_xdata())] or ax.patches)
    title = ax.get_title()
    assert has_data or ":" in title and ("no " in title or "none" in title), f"{name} on {capture.name} is empty"
    low, high = ax.get_xlim()
    if has_data and ax.dataLim.width == 0 and name != "plot_latency_percentiles":
        assert high - low >= 1.0, f"{name} on {capture.name}: one instant on a {high - low:.3f} s axis"
    plt.close("all")


def test_twenty_apis_get_twenty_looks():
    looks = {tuple(plots.common.style_of(i).values()) for i in range(40)}
    assert len(looks) == 40


def test_single_commit_lag_is_a_labelled_point_on_a_readable_axis(lag_scenario):
    import matplotlib.pyplot as plt

    one = plots.offsets_table(lag_scenario).head(0)
    lag = plots.consumer_lag(lag_scenario)
    first = lag.head(1)
    ax = plots.plot_consumer_lag(plots.offsets_table(lag_scenario)[
        plots.offsets_table(lag_scenario)["frame"] <= int(first["frame"].iloc[0])])
    low, high = ax.get_xlim()
    assert high - low >= 1.0 and [t.get_text() for t in ax.texts] == [str(int(first["lag"].iloc[0]))]
    assert one.empty
    plt.close("all")


def test_throughput_picks_bins_for_the_span():
    assert plots.throughput.__module__.endswith("throughput")
    from kafkalab.notebook.plots.throughput import auto_freq
    assert auto_freq(0.2) == "10ms" and auto_freq(60) == "2s" and auto_freq(0) == "1ms"


def test_latency_stats_count_acks0_and_kip511_fallbacks_apart():
    """A real client's ApiVersions fallback (captures/lossy.pcap) is negotiation, not an error; acks=0
    Produce requests are their own column, not 'unanswered 0'."""
    import kafkalab

    stats = plots.latency_stats(kafkalab.read_capture(Path(__file__).resolve().parents[2] / "captures" / "lossy.pcap"))
    versions = stats.loc["ApiVersions"]
    assert (versions["version_fallbacks"], versions["errors"], versions["answered"]) == (2, 0, 4)
    exchanges = plots.exchanges_of(kafkalab.read_capture(
        Path(__file__).resolve().parents[2] / "captures" / "lossy.pcap")).copy()
    produce = exchanges["api_name"] == "Produce"
    exchanges.loc[produce, "expects_response"] = False             # as if sent with acks=0
    exchanges.loc[produce, "response_frame"] = pd.NA
    row = plots.latency_stats(exchanges).loc["Produce"]
    assert row["acks0"] == row["requests"] == int(produce.sum()) and row["unanswered"] == 0


def test_io_graph_counts_every_frame_and_byte():
    import kafkalab

    cap = kafkalab.read_capture(Path(__file__).resolve().parents[2] / "captures" / "produce-consume-none.pcap")
    table = plots.io_graph(cap)
    assert table["frames"].sum() == len(cap.frames) and table["bytes"].sum() == cap.frames["size"].sum()
    span = (cap.frames["time"].max() - cap.frames["time"].min()).total_seconds()
    from kafkalab.notebook.plots.throughput import auto_freq
    width = pd.Timedelta(auto_freq(span))
    assert span / width.total_seconds() <= 30 and (table["time"].astype("int64") % width.value == 0).all()
    by_api = table.groupby("api_name")["frames"].sum()
    assert by_api.to_dict() == cap.frames["api_name"].value_counts().to_dict()
