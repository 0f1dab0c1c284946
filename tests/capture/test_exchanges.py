"""Pairing and inference on captures: a response whose request was lost reads as what its connection asks."""
from __future__ import annotations

import io

import pytest

from kafkalab.capture import iter_frames, read_capture
from kafkalab.pcap import TcpPcapWriter
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.records import build_batch, encode_records

BATCH = encode_records([build_batch([(b"k", b"v")])])


def _produce(version: int, correlation_id: int) -> tuple[bytes, bytes]:
    request = encode_request("Produce", version, {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
                                                  "topic_data": [{"name": "t", "partition_data": [
                                                      {"index": 0, "records": BATCH}]}]},
                             correlation_id=correlation_id, client_id="c")
    response = encode_response("Produce", version, {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": correlation_id, "log_append_time_ms": -1,
         "log_start_offset": 0}]}], "throttle_time_ms": 0}, correlation_id=correlation_id)
    return request, response


def _capture(version: int, lost: set[int], exchanges: int = 3) -> bytes:
    """Produce exchanges on one connection; the requests numbered in ``lost`` never reach the capture."""
    out = io.BytesIO()
    writer = TcpPcapWriter(out, mss=1448)
    conn = writer.open_connection(("10.0.0.1", 5000), ("10.0.0.2", 9092), 1.0)
    for cid in range(1, exchanges + 1):
        request, response = _produce(version, cid)
        if cid in lost:
            conn.client_seq = (conn.client_seq + len(request)) & 0xFFFFFFFF
        else:
            writer.send(conn, True, request, 1.0 + cid)
        writer.send(conn, False, response, 1.1 + cid)
    writer.flush()
    return out.getvalue()


@pytest.mark.parametrize("version", [9, 10, 11])
@pytest.mark.parametrize("lost", [{1}, {2}, {1, 2}])
def test_a_lost_requests_response_reads_as_the_version_its_connection_uses(version: int, lost: set[int]) -> None:
    cap = read_capture(_capture(version, lost))
    got = [(f.kind, f.correlation_id, f.api_key, f.api_version, f.inferred) for f in cap]
    expected = []
    for cid in (1, 2, 3):
        if cid not in lost:
            expected.append(("request", cid, 0, version, False))
        expected.append(("response", cid, 0, version, cid in lost))
    assert got == expected
    assert [f.frame for f in cap] == list(range(1, len(expected) + 1))
    streamed = [(f.kind, f.correlation_id, f.api_version) for f in iter_frames(_capture(version, lost))]
    assert streamed == [(k, c, v) for k, c, _, v, _ in expected]


def test_with_no_request_ever_seen_the_newest_fitting_version_is_taken_and_named() -> None:
    cap = read_capture(_capture(10, {1}, exchanges=1))
    [frame] = list(cap)
    assert frame.inferred and frame.api_version == 12
    assert any("also fits" in d and "v10" in d for d in frame.diagnostics)


def test_an_exchange_holds_the_times_of_its_frames_exactly(tmp_path):
    """One conversion from a frame's float time to the tables' time (kafkalab.dissect.columns.epoch_micros):
    an exchange's request_time and response_time are its frames' ``time`` to the nanosecond, and
    ``Frame.time`` reads the same instant, even for times whose float sits on a microsecond's half."""
    import pandas as pd

    from kafkalab.pcap import TcpPcapWriter

    path = tmp_path / "times.pcap"
    # times whose float value a naive datetime conversion rounds one microsecond away from numpy's
    times = [1700000000.5195014, 1700000000.4951854, 1700000001.0000005, 1700000002.2500015]
    with TcpPcapWriter(path) as writer:                  # nanosecond timestamps
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), times[0] - 1)
        for cid, (sent, answered) in enumerate(zip(times[::2], times[1::2]), 1):
            writer.send(conn, True, encode_request("ApiVersions", 3, {"client_software_name": "t",
                                                                      "client_software_version": "1"},
                                                   correlation_id=cid, client_id="c"), sent)
            writer.send(conn, False, encode_response("ApiVersions", 3, {"error_code": 0, "api_keys": [],
                                                                        "throttle_time_ms": 0},
                                                     correlation_id=cid), answered)
    cap = read_capture(path)
    frames = cap.frames.set_index("frame")
    exchanges = cap.exchanges
    assert len(exchanges) == 2
    for row in exchanges.itertuples():
        assert row.request_time == frames.loc[row.request_frame, "time"]
        assert row.response_time == frames.loc[row.response_frame, "time"]
        assert pd.Timestamp(cap[int(row.request_frame)].time) == row.request_time
