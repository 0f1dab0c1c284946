"""Stream framing, request/response correlation, and the Frame model built from real client frames."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from kafkalab.dissect.frame import FRAME_COLUMNS, frame_from_message
from kafkalab.dissect.frames_table import frames_table
from kafkalab.protocol import decode_request, decode_response, encode_request, encode_response
from kafkalab.protocol.correlation import Asked, expects_response, infer_response, inference_tiers
from kafkalab.protocol.framing import FrameTooLarge, check_size, cut_frames, frame_size

GOLDEN = Path(__file__).parent / "golden"


def golden_frames(client: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted((GOLDEN / client).glob("*.bin"))]


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_cut_frames_over_any_chunking(chunk: int) -> None:
    """Bytes arriving in any chunks, cut as they come: the same frames, and ``need`` says how many bytes the
    next frame wants (its prefix included) once its prefix is in."""
    frames = golden_frames("confluent")[:20]
    stream = b"".join(frames)
    buffer, out = bytearray(), []
    for i in range(0, len(stream), chunk):
        buffer += stream[i:i + chunk]
        cut = cut_frames(buffer)
        out.extend(bytes(buffer[start:end]) for start, end in cut.frames)
        assert cut.impossible is None
        if len(buffer) - cut.stop >= 4:
            assert cut.need == 4 + frame_size(buffer, cut.stop) > len(buffer) - cut.stop
        del buffer[:cut.stop]
    assert out == frames and not buffer


def test_cut_frames_within_bounds_copies_nothing() -> None:
    frames = golden_frames("confluent")[:3]
    stream = b"junk" + b"".join(frames) + b"\x00\x00"
    cut = cut_frames(stream, 4, len(stream) - 2)
    assert [stream[a:b] for a, b in cut.frames] == frames and cut.stop == len(stream) - 2 and cut.need == 4


@pytest.mark.parametrize("size", [-1, 101 * 1024 * 1024])
def test_impossible_sizes_are_reported_before_buffering(size: int) -> None:
    good = golden_frames("confluent")[0]
    cut = cut_frames(good + struct.pack(">i", size) + b"\x00" * 10, max_frame_size=100 * 1024 * 1024)
    assert cut.frames == [(0, len(good))] and cut.stop == len(good) and cut.impossible == size
    with pytest.raises(FrameTooLarge, match="outside"):
        check_size(cut.impossible, 100 * 1024 * 1024)


def test_pairing_pipelined_requests_acks_zero_and_damaged_headers() -> None:
    asked = Asked()
    assert asked.request(3, 12, 1, True, "metadata") and asked.request(18, 3, 2, True, "versions")
    assert asked.request(0, 9, 3, expects_response(0, {"acks": 0}), "fire and forget")
    assert not asked.request(-1, 0, 4, True, "damaged")                      # nothing to pair it by
    assert asked.response(2) == "versions" and asked.response(1) == "metadata"  # answered out of order
    assert asked.response(3) is None and asked.response(2) is None and asked.response(99) is None
    assert list(asked.pairs) == [(3, 12), (18, 3), (0, 9)]                   # in order of first use


def test_acks_zero_expects_no_response_and_inference_prefers_the_connections_version() -> None:
    assert not expects_response(0, {"acks": 0}) and expects_response(0, {"acks": -1})
    assert expects_response(3, None)
    answer = encode_response("Produce", 10, {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": 0}]}],
        "throttle_time_ms": 0}, correlation_id=7)
    alone, note = infer_response(answer, inference_tiers([]))
    assert alone.api_version == 12 and "also fits" in note          # the newest version the bytes fit
    response, note = infer_response(answer, inference_tiers([(3, 12), (0, 10)]))
    assert (response.api_key, response.api_version) == (0, 10) and "this connection" in note


def test_frames_from_real_client_traffic() -> None:
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["client"] == "confluent" and f["api_name"] == "Produce"
                 and f["direction"] == "request" and f["phase"] == "produce-none")
    raw = (GOLDEN / entry["file"]).read_bytes()
    request = decode_request(raw)
    frame = frame_from_message(request, raw, number=1, ts=1_700_000_000.5, stream=0,
                               src="127.0.0.1:40000", dst="127.0.0.1:9092")
    [topic] = entry["produced_topics"]
    assert frame.client_id == entry["client_id"] == "golden-confluent"
    assert frame.topics == [topic]
    assert frame.record_count == len(manifest["clients"]["confluent"]["produced"][topic]["records"])
    assert frame.summary.startswith(f"Produce v{request.api_version} request · {frame.topics[0]}[")
    assert "acks=" in frame.summary and f"{frame.record_count} record" in frame.summary
    table = frames_table([frame])
    assert list(table.columns) == FRAME_COLUMNS
    assert str(table["time"].dtype).startswith("datetime64") and table["time"].dt.tz is not None


def test_first_error_is_reported() -> None:
    raw = encode_request("Metadata", 12, {"topics": [{"name": "a"}]}, correlation_id=1, client_id="c")
    answer = encode_response("Metadata", 12, {"topics": [
        {"error_code": 0, "name": "a", "partitions": []},
        {"error_code": 3, "name": "b", "partitions": []}]}, correlation_id=1)
    response = decode_response(answer, "Metadata", 12)
    frame = frame_from_message(response, answer, number=2, ts=0.0, client_id="c")
    assert (frame.error_code, frame.error) == (3, "UNKNOWN_TOPIC_OR_PARTITION")
    assert frame.topics == ["a", "b"] and frame.summary.endswith("UNKNOWN_TOPIC_OR_PARTITION")
    assert decode_request(raw).client_id == "c"
