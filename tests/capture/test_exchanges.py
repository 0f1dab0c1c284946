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
