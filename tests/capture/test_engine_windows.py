"""The capture engine over windows (kafkalab.capture.engine): ``iter_frames`` (window by window, bounded
memory) gives exactly the frames ``read_capture`` gives, and both give the same rows whatever the window's
size, on the shipped captures, the external ones, the benchmark's generator and randomly damaged captures
where regular and irregular connections mix."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import kafkalab.capture.capture as capture_module
import kafkalab.capture.engine as engine_module
import kafkalab.pcap.index as index_module
from kafkalab.capture import iter_frames, read_capture, write_frames
from kafkalab.capture.capture import frame_stream
from kafkalab.capture.engine import FrameStream
from kafkalab.dissect.frames_table import frames_table

from tests.capture.test_bulk_reader import as_pcapng, make_capture

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
EXTERNAL = next((base / "shared" / "captures" / "external" for base in (ROOT.parent, ROOT.parent.parent)
                 if (base / "shared" / "captures" / "external").exists()), ROOT.parent / "shared")
EXTERNAL_PORTS = [36333, 1643]


@pytest.fixture(autouse=True)
def engine_for_small_files(monkeypatch):
    monkeypatch.setattr(capture_module, "ENGINE_MIN_BYTES", 0)


@pytest.fixture(params=[None, 3000], ids=["window-32MiB", "window-3000B"])
def window(request, monkeypatch):
    if request.param is not None:
        monkeypatch.setattr(index_module, "WINDOW", request.param)
        monkeypatch.setattr(engine_module, "STREAM_WINDOW", request.param)
    return request.param


def assert_streamed_equals_read(path, ports=None) -> int:
    """iter_frames(path) and read_capture(path): the same Frames, rows and tables."""
    streamed = list(iter_frames(path, ports))
    cap = read_capture(path, ports)
    assert len(streamed) == len(cap)
    for a, b in zip(streamed, cap):
        assert a.row() == b.row(), (a, b)
        assert (a.raw, a.stream_offset, a.topic_ids, a.inferred) == (b.raw, b.stream_offset, b.topic_ids, b.inferred)
    pd.testing.assert_frame_equal(frames_table(streamed), cap.frames)
    return len(cap)


def _shipped() -> list[Path]:
    return sorted(CAPTURES.glob("*.pcap"))


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_streamed_frames_are_the_read_frames_on_the_shipped_captures(path, window):
    port = json.loads(path.with_suffix(".json").read_text())["port"]
    assert isinstance(frame_stream(path, [port]), FrameStream)         # the engine, not the packet path
    assert assert_streamed_equals_read(path, [port]) > 0


def _external() -> list[Path]:
    if not EXTERNAL.exists():
        return []
    return sorted(p for p in EXTERNAL.rglob("*") if p.suffix in (".pcap", ".pcapng", ".cap"))


@pytest.mark.skipif(not _external(), reason="external captures not available outside the lab workspace")
@pytest.mark.parametrize("path", _external(), ids=lambda p: str(p.relative_to(EXTERNAL)))
def test_streamed_frames_are_the_read_frames_on_the_external_captures(path, window):
    assert_streamed_equals_read(path, EXTERNAL_PORTS)


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from([600, 2500, 1 << 25]))
def test_streamed_frames_are_the_read_frames_on_damaged_captures(tmp_path_factory, rnd, window_bytes):
    path = tmp_path_factory.mktemp("engine") / "random.pcap"
    data, ports = make_capture(rnd)
    if rnd.random() < 0.3:
        data = as_pcapng(data, rnd)
    path.write_bytes(data)
    whole = read_capture(path, ports or None)
    saved = index_module.WINDOW, engine_module.STREAM_WINDOW
    index_module.WINDOW = engine_module.STREAM_WINDOW = window_bytes
    try:
        assert_streamed_equals_read(path, ports or None)
        windowed = read_capture(path, ports or None)
    finally:
        index_module.WINDOW, engine_module.STREAM_WINDOW = saved
    pd.testing.assert_frame_equal(windowed.frames, whole.frames)
    pd.testing.assert_frame_equal(windowed.connections, whole.connections)
    pd.testing.assert_frame_equal(windowed.exchanges, whole.exchanges)


def test_streamed_frames_are_the_read_frames_on_the_benchmark_generator(tmp_path, window):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from capture_gen import write_bulk, write_chatty
    finally:
        sys.path.remove(str(ROOT / "bench"))
    for write in (write_bulk, write_chatty):
        path = tmp_path / f"{write.__name__}.pcap"
        write(path, 1 << 20, connections=12)
        assert assert_streamed_equals_read(path) > 50


def test_write_frames_writes_the_read_frames_table(tmp_path, window):
    path = CAPTURES / "lossy.pcap"
    port = json.loads(path.with_suffix(".json").read_text())["port"]
    out = tmp_path / "frames.parquet"
    count = write_frames(path, out, ports=[port])
    written = pd.read_parquet(out)
    cap = read_capture(path, [port])
    assert count == len(cap)
    expected = cap.frames.reset_index(drop=True)
    assert written["frame"].tolist() == expected["frame"].tolist()
    for column in ("request_frame", "response_frame", "latency_ms", "api_name", "summary", "inferred"):
        assert written[column].astype(object).where(written[column].notna(), None).tolist() == \
            expected[column].astype(object).where(expected[column].notna(), None).tolist(), column


def test_a_response_no_request_waits_for_is_held_as_the_general_path_holds_it(tmp_path):
    """A clean connection whose first request has a header that cannot be paired by (a negative
    correlation id): its response waits for the connection's next request, which names its API and version
    (KafkaSession._hold_unpaired). The engine hands such a connection to the general path, so both readers
    infer the same API and number the frames the same way."""
    from kafkalab.pcap import TcpPcapWriter
    from kafkalab.protocol import encode_request, encode_response

    body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    answer = {"throttle_time_ms": 0, "error_code": 0}
    path = tmp_path / "held.pcap"
    with TcpPcapWriter(path) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), 1.0)
        for when, correlation_id in ((2.0, -5), (3.0, 7)):
            writer.send(conn, True, encode_request("Heartbeat", 3, body, correlation_id=correlation_id,
                                                   client_id="c"), when)
            writer.send(conn, False, encode_response("Heartbeat", 3, answer, correlation_id=correlation_id),
                        when + 0.1)
        writer.close(conn, 4.0)
    cap = read_capture(path)
    assert [(f.frame, f.kind, f.api_name, f.inferred) for f in cap] == [
        (1, "request", "Heartbeat", False), (2, "response", "Heartbeat", True),
        (3, "request", "Heartbeat", False), (4, "response", "Heartbeat", False)]
    capture_module.BULK = False
    try:
        general = read_capture(path)
    finally:
        capture_module.BULK = True
    pd.testing.assert_frame_equal(cap.frames, general.frames)
    assert_streamed_equals_read(path)


def test_batches_wait_for_responses_across_windows(tmp_path, window):
    """iter_batches holds a request back until its response is in, also when the response comes windows
    later: every batch's pairing columns are final, and equal read_capture's."""
    from kafkalab.capture import iter_batches

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from capture_gen import write_bulk
    finally:
        sys.path.remove(str(ROOT / "bench"))
    path = tmp_path / "bulk.pcap"
    write_bulk(path, 1 << 20, connections=12)
    seen = []
    for batch in iter_batches(path, batch_frames=20, batch_bytes=1 << 20):       # holding up to 80 frames
        seen.extend((f.frame, f.request_frame, f.response_frame, f.latency_ms) for f in batch)
    cap = read_capture(path)
    assert seen == [(f.frame, f.request_frame, f.response_frame, f.latency_ms) for f in cap]
    assert sum(1 for _, request, _, _ in seen if request is not None) > 20
