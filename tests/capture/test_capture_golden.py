"""read_capture on captures written from the golden frames (tests/golden: real client bytes; the expected
values are the manifest's, which the recording proxy took from the clients' own headers)."""
from __future__ import annotations

import io
import subprocess

import pyarrow as pa
import pytest

from kafkalab.capture import iter_frames, read_capture
from kafkalab.pcap import TcpPcapWriter, read_packets

from tests.capture.builders import write_golden_pcap
from tests.tools import require_tool


@pytest.fixture(scope="module")
def golden_pcap(tmp_path_factory):
    path = tmp_path_factory.mktemp("cap") / "golden.pcap"
    conversations = write_golden_pcap(path)
    return path, conversations


def _expected(conversations):
    """(stream, kind, api_key, api_version, correlation_id, client_id, paired) in stream order."""
    out = []
    for stream, (_, _, items) in enumerate(conversations):
        asked = set()
        for entry, _ in items:
            key = (entry["correlation_id"], entry["api_key"])
            paired = entry["direction"] == "response" and key in asked
            if entry["direction"] == "request":
                asked.add(key)
            out.append((stream, entry["direction"], entry["api_key"], entry["api_version"],
                        entry["correlation_id"], entry["client_id"], paired))
    return out


def test_every_golden_frame_found_with_manifest_values(golden_pcap):
    path, conversations = golden_pcap
    cap = read_capture(path)
    expected = _expected(conversations)
    assert len(cap) == len(expected)
    for frame, (stream, kind, api_key, version, cid, client_id, paired) in zip(cap, expected):
        assert (frame.stream, frame.kind, frame.correlation_id) == (stream, kind, cid)
        if kind == "request" or paired:
            assert (frame.api_key, frame.api_version) == (api_key, version), frame
        elif frame.inferred:                 # a response whose request the corpus did not keep
            assert frame.api_key == api_key, frame
            assert any("inferred" in d for d in frame.diagnostics)
        else:
            assert frame.api_key == -1 and frame.diagnostics
        if kind == "request":
            assert frame.client_id == client_id
        assert (frame.request_frame is not None) == paired or kind == "request"


def test_tables_are_arrow_compatible_and_consistent(golden_pcap):
    cap = read_capture(golden_pcap[0])
    for name in ("frames", "exchanges", "records", "connections"):
        pa.Table.from_pandas(getattr(cap, name))
    frames, exchanges = cap.frames, cap.exchanges
    assert list(frames["frame"]) == list(range(1, len(cap) + 1))
    assert len(exchanges) == (frames["kind"] == "request").sum()
    answered = exchanges.dropna(subset=["response_frame"])
    assert (answered["latency_ms"] > 0).all()
    assert len(cap.connections) == len(golden_pcap[1])
    assert (cap.connections["state"] == "FIN").all()
    produced = cap.records[cap.records["kind"] == "request"]
    assert len(produced) > 0 and produced["value"].notna().mean() > 0.9


def test_frame_object_text_and_indexing(golden_pcap):
    cap = read_capture(golden_pcap[0])
    first = cap[1]
    assert first.raw[:4] == len(first.raw[4:]).to_bytes(4, "big")
    assert first.body is not None and first.tree is not None
    text = cap.text(1, hex=True)
    assert "request_api_key" in text and "0000  " in text
    with pytest.raises(IndexError):
        cap[0]


def test_iter_frames_streams_the_same_frames(golden_pcap):
    cap = read_capture(golden_pcap[0])
    streamed = [(f.frame, f.api_key, f.correlation_id) for f in iter_frames(golden_pcap[0])]
    assert streamed == [(f.frame, f.api_key, f.correlation_id) for f in cap]


def test_packets_list_input_and_small_mss(tmp_path):
    path = tmp_path / "small.pcap"
    write_golden_pcap(path, clients={"kcat"}, mss=100)
    from_file = read_capture(path)
    from_list = read_capture(list(read_packets(path)))
    assert len(from_file) == len(from_list) > 0
    assert [f.summary for f in from_file] == [f.summary for f in from_list]


def test_heuristic_finds_kafka_on_an_unusual_port(tmp_path):
    path = tmp_path / "odd.pcap"
    conversations = write_golden_pcap(path, server_port=19092, clients={"kafka-python"})
    cap = read_capture(path)
    assert len(cap) == sum(len(items) for _, _, items in conversations)
    assert len(read_capture(path, ports=[19092])) == len(cap)


def test_non_kafka_traffic_is_ignored():
    out = io.BytesIO()
    w = TcpPcapWriter(out)
    c = w.open_connection(("10.0.0.1", 5000), ("10.0.0.2", 8080), 1.0)
    w.send(c, True, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1.0)
    w.send(c, False, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1.1)
    w.close(c, 1.2)
    w.close_file()
    assert len(read_capture(out.getvalue())) == 0


def test_acks0_produce_has_no_response_expected():
    from kafkalab.protocol import encode_request
    body = {"acks": 0, "timeout_ms": 100, "topic_data": []}
    raw = encode_request("Produce", 7, body, correlation_id=3, client_id="fire")
    out = io.BytesIO()
    w = TcpPcapWriter(out)
    c = w.open_connection(("10.0.0.1", 5000), ("10.0.0.2", 9092), 1.0)
    w.send(c, True, raw, 1.0)
    w.close(c, 2.0)
    w.close_file()
    cap = read_capture(out.getvalue())
    row = cap.exchanges.iloc[0]
    assert not row["expects_response"] and row["response_frame"] is pd_na()


def pd_na():
    import pandas as pd
    return pd.NA


def test_tshark_opens_the_written_capture_and_agrees(golden_pcap):
    """tshark (4.0 on Debian) must read the writer's file without complaint; for every frame it decodes
    without an unsupported-version or malformed report, api key, version, correlation id, client id and
    topic names agree with kafkalab."""
    path = golden_pcap[0]
    fields = ["frame.number", "tcp.stream", "kafka.request_key", "kafka.request.version", "kafka.response_key",
              "kafka.response.version", "kafka.correlation_id", "kafka.client_id", "kafka.topic_name",
              "_ws.expert.message", "_ws.malformed"]
    cmd = [require_tool("tshark"), "-r", str(path), "-Y", "kafka", "-T", "fields", "-E", "occurrence=a", "-E",
           "aggregator=|", "-E", "separator=\t"] + [x for f in fields for x in ("-e", f)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "appears to be damaged" not in result.stderr
    cap = read_capture(path)
    ours = {}
    for f in cap:
        ours.setdefault((f.stream, f.correlation_id, f.kind), []).append(f)
    compared = 0
    for line in result.stdout.splitlines():
        cols = dict(zip(fields, line.split("\t")))
        if cols["_ws.malformed"] or "nsupported" in cols["_ws.expert.message"] or "|" in cols["kafka.correlation_id"]:
            continue
        if not cols["kafka.correlation_id"] or not (cols["kafka.request_key"] or cols["kafka.response_key"]):
            continue                          # e.g. "Request missing": tshark could not pair the response
        kind = "request" if cols["kafka.request_key"] else "response"
        key = int(cols["kafka.request_key"] or cols["kafka.response_key"] or -1)
        version = int(cols["kafka.request.version"] or cols["kafka.response.version"] or -1)
        candidates = ours.get((int(cols["tcp.stream"]), int(cols["kafka.correlation_id"]), kind), [])
        match = [f for f in candidates if (f.api_key, f.api_version) == (key, version)]
        assert match, (line, candidates)
        frame = match[0]
        if kind == "request" and cols["kafka.client_id"]:
            assert frame.client_id == cols["kafka.client_id"]
        tshark_topics = {t for t in cols["kafka.topic_name"].split("|") if t}
        assert tshark_topics <= set(frame.topics) | tshark_topics & set(frame.topics), (tshark_topics, frame.topics)
        compared += 1
    assert compared >= 50
