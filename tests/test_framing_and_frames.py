"""Stream framing, request/response correlation, and the Frame model built from real client frames."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from kafkalab.dissect.frame import FRAME_COLUMNS, frame_from_message, frames_table
from kafkalab.protocol import decode_request, decode_response, encode_request
from kafkalab.protocol.correlation import Correlator
from kafkalab.protocol.framing import FrameSplitter, FrameTooLarge

GOLDEN = Path(__file__).parent / "golden"


def golden_frames(client: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted((GOLDEN / client).glob("*.bin"))]


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_splitter_reassembles_any_chunking(chunk: int) -> None:
    frames = golden_frames("confluent")[:20]
    stream = b"".join(frames)
    splitter = FrameSplitter()
    out = []
    for i in range(0, len(stream), chunk):
        out.extend(splitter.feed(stream[i:i + chunk]))
    assert out == frames and splitter.buffered == 0 and splitter.consumed == len(stream)


@pytest.mark.parametrize("size", [-1, 101 * 1024 * 1024])
def test_splitter_refuses_impossible_sizes_before_buffering(size: int) -> None:
    splitter = FrameSplitter(max_frame_size=100 * 1024 * 1024)
    with pytest.raises(FrameTooLarge, match="outside"):
        splitter.feed(struct.pack(">i", size) + b"\x00" * 10)


def test_correlator_pipelining_and_acks_zero() -> None:
    correlator = Correlator()
    correlator.request(3, 12, 1, "c")
    correlator.request(18, 3, 2, "c")
    assert correlator.request(0, 9, 3, "c", body={"acks": 0}) is None      # fire and forget
    assert len(correlator) == 2
    assert correlator.response(2).api_key == 18                            # answered out of order
    assert correlator.response(1).api_version == 12
    assert correlator.response(3) is None and correlator.response(99) is None


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
    from kafkalab.protocol import encode_response
    answer = encode_response("Metadata", 12, {"topics": [
        {"error_code": 0, "name": "a", "partitions": []},
        {"error_code": 3, "name": "b", "partitions": []}]}, correlation_id=1)
    response = decode_response(answer, "Metadata", 12)
    frame = frame_from_message(response, answer, number=2, ts=0.0, client_id="c")
    assert (frame.error_code, frame.error) == (3, "UNKNOWN_TOPIC_OR_PARTITION")
    assert frame.topics == ["a", "b"] and frame.summary.endswith("UNKNOWN_TOPIC_OR_PARTITION")
    assert decode_request(raw).client_id == "c"
