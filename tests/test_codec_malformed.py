"""Bad input never crashes or hangs: truncation at every point, random corruption, hostile lengths,
unknown APIs and versions, invalid UTF-8. Plain decoding raises DecodeError (naming path and offset);
annotated decoding returns a partial tree whose leaves still tile the frame, ending in a malformed node."""
from __future__ import annotations

import random
import struct
import time
from pathlib import Path

import pytest

from codec_checks import assert_tiles
from kafkalab.demo import demo_frames
from kafkalab.protocol import (DecodeError, ProtocolError, decode_request, decode_response, encode_request,
                               encode_response)

GOLDEN = Path(__file__).parent / "golden"


def sample_frames() -> list[tuple[bytes, tuple[str, int] | None]]:
    """Frames with strings, arrays, tagged fields and record batches (built by the codec)."""
    frames = [(frame, response_of) for _, frame, response_of in demo_frames()]
    frames.append((encode_request("Fetch", 13, {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 1,
        "session_id": 0, "session_epoch": -1,
        "topics": [{"topic_id": __import__("uuid").UUID(int=7), "partitions": [
            {"partition": 0, "current_leader_epoch": 3, "fetch_offset": 42, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": "r1", "cluster_id": "c"}, correlation_id=9, client_id="t"), None))
    frames.append((encode_response("DescribeCluster", 1, {
        "throttle_time_ms": 0, "error_code": 0, "error_message": "ñandú", "endpoint_type": 1,
        "cluster_id": "c", "controller_id": 1, "brokers": [{"broker_id": 1, "host": "h", "port": 1, "rack": None}],
        "cluster_authorized_operations": 5}, correlation_id=3), ("DescribeCluster", 1)))
    return frames


def decode_any(frame: bytes, response_of, **kwargs):
    if response_of:
        return decode_response(frame, *response_of, **kwargs)
    return decode_request(frame, **kwargs)


def check_bad(frame: bytes, response_of) -> None:
    """Plain: a value or DecodeError. Annotated: never raises, leaves tile the frame."""
    try:
        decode_any(frame, response_of)
    except DecodeError as exc:
        assert exc.offset >= 0 or exc.path, exc
    annotated = decode_any(frame, response_of, annotate=True)
    assert_tiles(annotated.tree, len(frame))


@pytest.mark.parametrize("index", range(len(sample_frames())))
def test_every_truncation_point(index: int) -> None:
    frame, response_of = sample_frames()[index]
    for cut in range(len(frame)):
        truncated = frame[:cut]
        check_bad(truncated, response_of)                     # size prefix now lies
        if cut >= 4:
            resized = struct.pack(">i", cut - 4) + truncated[4:]
            check_bad(resized, response_of)                   # consistent size, short body
            annotated = decode_any(resized, response_of, annotate=True)
            if cut < len(frame) - 1:
                assert annotated.diagnostics, f"cut at {cut} went unnoticed"


@pytest.mark.parametrize("index", range(len(sample_frames())))
def test_random_corruption(index: int) -> None:
    frame, response_of = sample_frames()[index]
    rng = random.Random(index)
    for _ in range(300):
        corrupted = bytearray(frame)
        for _ in range(rng.randint(1, 4)):
            corrupted[rng.randrange(4, len(frame))] = rng.randrange(256)
        check_bad(bytes(corrupted), response_of)


def test_truncation_of_real_client_frames() -> None:
    frames = sorted(GOLDEN.glob("*/*_request.bin"))[:40]
    assert frames, "golden vectors missing"
    for path in frames:
        frame = path.read_bytes()
        for cut in range(4, len(frame), max(1, len(frame) // 60)):
            check_bad(struct.pack(">i", cut - 4) + frame[4:cut], None)


def test_malformed_node_marks_the_failing_field() -> None:
    empty = encode_request("Metadata", 4, {"topics": []}, correlation_id=1, client_id="c")
    body_at = len(empty) - 5                                # int32 count + bool
    body = struct.pack(">i", 1) + b"\xff\xff" + b"\x01"   # topic name length -1: not nullable in v4
    broken = struct.pack(">i", body_at - 4 + len(body)) + empty[4:body_at] + body
    with pytest.raises(DecodeError) as info:
        decode_request(broken)
    assert info.value.path == "topics[0].name" and info.value.offset == body_at + 4
    annotated = decode_request(broken, annotate=True)
    malformed = [n for n in annotated.tree.walk() if n.wire_type == "malformed"]
    assert len(malformed) == 1 and malformed[0].path == "topics[0].name"
    assert malformed[0].start == body_at + 4 and malformed[0].end == len(broken)
    assert any("malformed" in d for d in annotated.diagnostics)


@pytest.mark.parametrize("count", [0x7FFFFFFF, 1_000_001, 5_000])
def test_hostile_array_counts_fail_fast(count: int) -> None:
    """Counts are checked against the bytes left before anything is allocated."""
    header = encode_request("Metadata", 4, {"topics": []}, correlation_id=1, client_id="c")[4:-5]
    body = struct.pack(">i", count) + b"\x00\x01x" * 10 + b"\x01"
    frame = struct.pack(">i", len(header) + len(body)) + header + body
    started = time.perf_counter()
    with pytest.raises(DecodeError, match="array length"):
        decode_request(frame)
    assert time.perf_counter() - started < 0.5


def test_hostile_compact_lengths_and_tag_counts() -> None:
    for tail in (b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"\x05\xff\xff\xff\x7f"):
        frame = encode_request("ApiVersions", 3, {"client_software_name": "a", "client_software_version": "b"},
                               correlation_id=1, client_id="c")
        header_end = 4 + 2 + 2 + 4 + 2 + 1 + 1
        bad = frame[:header_end] + tail
        bad = struct.pack(">i", len(bad) - 4) + bad[4:]
        with pytest.raises(DecodeError):
            decode_request(bad)
        assert_tiles(decode_request(bad, annotate=True).tree, len(bad))


def test_unknown_api_key_and_unsupported_version() -> None:
    frame = encode_request("Heartbeat", 4, {"group_id": "g", "generation_id": 1, "member_id": "m"},
                           correlation_id=4, client_id="c")
    unknown = frame[:4] + struct.pack(">h", 93) + frame[6:]
    with pytest.raises(DecodeError, match="unknown API key 93"):
        decode_request(unknown)
    annotated = decode_request(unknown, annotate=True)
    assert annotated.correlation_id == 4 and annotated.api_name == "Unknown(93)"
    assert_tiles(annotated.tree, len(unknown))
    future = frame[:6] + struct.pack(">h", 99) + frame[8:]
    with pytest.raises(DecodeError, match="v99 is not a known version"):
        decode_request(future)


def test_a_response_to_an_unknown_api_or_version_is_unsupported_not_an_error() -> None:
    """What a capture hands over when a request named an API key the schema lacks (a newer peer, or bytes
    that only looked like a request): the response's header is read, the body marked "unsupported"."""
    answer = encode_response("Heartbeat", 4, {"throttle_time_ms": 0, "error_code": 0}, correlation_id=6)
    for api_key, version, header_version in ((93, 0, 0), (12, 99, 1), (-3, 0, 0)):
        with pytest.raises(DecodeError):
            decode_response(answer, api_key, version)
        annotated = decode_response(answer, api_key, version, annotate=True)
        assert annotated.correlation_id == 6 and annotated.header_version == header_version
        assert annotated.diagnostics[0].startswith("unsupported:") and annotated.body is None
        assert_tiles(annotated.tree, len(answer))
    with pytest.raises(ProtocolError, match="unknown API"):
        decode_response(answer, "NoSuchApi", 0)       # a name must be one the schema knows


def test_invalid_utf8_names_the_field() -> None:
    frame = encode_request("Metadata", 4, {"topics": [{"name": "ab"}]}, correlation_id=1, client_id="c")
    bad = frame.replace(b"\x00\x02ab", b"\x00\x02\xc3\x28")
    with pytest.raises(DecodeError, match="UTF-8") as info:
        decode_request(bad)
    assert info.value.path == "topics[0].name"


def test_trailing_bytes_are_flagged_not_fatal() -> None:
    frame = encode_request("Heartbeat", 0, {"group_id": "g", "generation_id": 1, "member_id": "m"},
                           correlation_id=4, client_id="c") + b"\x01\x02"
    frame = struct.pack(">i", len(frame) - 4) + frame[4:]
    request = decode_request(frame)
    assert request.body["group_id"] == "g" and request.diagnostics == ["trailing bytes: 2 after the body"]
    annotated = decode_request(frame, annotate=True)
    assert annotated.tree.children[-1].name == "trailing bytes"
    assert_tiles(annotated.tree, len(frame))


def test_kip511_api_versions_fallback_response() -> None:
    """A broker that does not know ApiVersions v4 answers in v0 with error 35; the client must read it."""
    v0 = encode_response("ApiVersions", 0, {"error_code": 35, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 3}]}, correlation_id=1)
    response = decode_response(v0, "ApiVersions", 4)
    assert response.api_version == 0 and response.body["error_code"] == 35
    assert response.body["api_keys"][0]["max_version"] == 3
    assert "KIP-511" in response.diagnostics[0]
