"""The compiled decoder's shortcuts, each on the input that takes it and on its boundary.

The generated code reads two- and three-byte compact lengths inline, reads a small int array together with
the byte after it, builds tagged-field defaults as literals, and cuts RECORDS fields as views of the frame.
Each case is checked against the reference interpreter (``decode_reference``), called directly so a
fallback inside ``decode`` cannot hide a fast path that failed.
"""
from __future__ import annotations

import pytest

from kafkalab.protocol import api_spec
from kafkalab.protocol.errors import DecodeError
from kafkalab.protocol.codec import compiler, decode, decode_reference, encode
from kafkalab.protocol.records import build_batch, encode_records


def fast(spec, version, data, records="batches"):
    return compiler.decoder(spec, version)(data, 0, records)


def records_of(size: int) -> bytes:
    """A valid record set of about ``size`` bytes (one uncompressed batch)."""
    value = bytes(range(256)) * (size // 256 + 1)
    return encode_records([build_batch([{"key": b"k", "value": value[:size]}], base_timestamp=1)])


@pytest.mark.parametrize("size", [10, 100, 126, 127, 128, 300, 16_383, 16_384, 70_000, 2_097_151, 2_097_152])
def test_record_set_lengths_of_every_varint_width(size: int) -> None:
    spec = api_spec("Produce").request
    data = records_of(size)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": data}]}]}
    frame = encode(spec, 9, body)
    got, end = fast(spec, 9, frame, "raw")
    assert end == len(frame)
    assert bytes(got["topic_data"][0]["partition_data"][0]["records"]) == data
    assert (got, end) == decode_reference(spec, 9, frame, records="raw")


def test_raw_record_sets_are_views_of_the_frame_not_copies() -> None:
    spec = api_spec("Fetch").response
    data = records_of(65_536)
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": p, "records": data}
                                                        for p in range(3)]}]}
    frame = encode(spec, 12, body)
    got, _ = decode(spec, 12, frame, records="raw")
    views = [p["records"] for p in got["responses"][0]["partitions"]]
    assert all(isinstance(v, memoryview) and v.readonly and v.obj is frame for v in views)
    assert all(v == data for v in views)


def test_a_bytearray_frame_is_not_pinned_by_the_views() -> None:
    """Views into a caller's bytearray would forbid resizing it (and change under the reader): the record
    sets are views of a private copy instead."""
    spec = api_spec("Fetch").response
    data = records_of(1_000)
    frame = bytearray(encode(spec, 12, {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "records": data}]}]}))
    got, _ = decode(spec, 12, frame, records="raw")
    view = got["responses"][0]["partitions"][0]["records"]
    frame[:] = b""                           # would raise BufferError if the view pinned it
    assert view == data


@pytest.mark.parametrize("replicas", [0, 1, 3, 63, 64, 65, 200])
def test_int_arrays_on_both_sides_of_the_small_array_limit(replicas: int) -> None:
    spec = api_spec("Metadata").response
    nodes = list(range(replicas))
    body = {"brokers": [], "topics": [{"name": "t", "partitions": [
        {"partition_index": p, "leader_id": 1, "replica_nodes": nodes, "isr_nodes": nodes[:2],
         "offline_replicas": nodes[::-1]} for p in range(3)]}]}
    frame = encode(spec, 12, body)
    got = fast(spec, 12, frame)
    assert got == decode_reference(spec, 12, frame)
    assert got[0]["topics"][0]["partitions"][2]["offline_replicas"] == nodes[::-1]


def test_tagged_defaults_are_fresh_objects_and_present_tags_override_them() -> None:
    spec = api_spec("Fetch").response
    part = {"partition_index": 0, "records": None}
    tagged = dict(part, diverging_epoch={"epoch": 4, "end_offset": 99})
    frame = encode(spec, 12, {"responses": [{"topic": "t", "partitions": [part, part, tagged]}]})
    got = fast(spec, 12, frame)
    assert got == decode_reference(spec, 12, frame)
    first, second, third = got[0]["responses"][0]["partitions"]
    assert first["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert first["diverging_epoch"] is not second["diverging_epoch"]
    assert third["diverging_epoch"] == {"epoch": 4, "end_offset": 99}


def test_truncated_lengths_fall_back_to_the_interpreters_error() -> None:
    """Cut inside the three-byte length and inside the record set: the fast path must fail (never return a
    short view) and ``decode`` must raise the interpreter's DecodeError."""
    spec = api_spec("Produce").request
    frame = encode(spec, 9, {"topic_data": [{"name": "t", "partition_data": [
        {"index": 0, "records": records_of(70_000)}]}]})
    start = frame.index(records_of(70_000))
    for cut in (start - 2, start - 1, start + 10, len(frame) - 1):
        with pytest.raises(Exception):
            fast(spec, 9, frame[:cut], "raw")
        with pytest.raises(DecodeError):
            decode(spec, 9, frame[:cut], records="raw")


def test_partitions_of_changing_shapes_read_by_shape_or_the_ordinary_way() -> None:
    """Partitions read with the previous partition's shape only when their counts say it is the same."""
    spec = api_spec("Metadata").response
    sizes = [3, 3, 3, 1, 1, 0, 0, 200, 200, 3, 64, 64, 125, 125, 126, 126, 127, 3, 3]
    partitions = [{"partition_index": p, "leader_id": p % 5, "leader_epoch": p, "replica_nodes": list(range(n)),
                   "isr_nodes": list(range(n))[::2], "offline_replicas": [7] if p % 4 == 0 else []}
                  for p, n in enumerate(sizes)]
    frame = encode(spec, 12, {"brokers": [], "topics": [{"name": "a", "partitions": partitions},
                                                        {"name": "b", "partitions": partitions[::-1]}]})
    got = fast(spec, 12, frame)
    assert got == decode_reference(spec, 12, frame)
    assert got[0]["topics"][0]["partitions"] == [dict(p, error_code=0) for p in partitions]


def test_big_bodies_pause_the_collector_and_leave_it_as_they_found_it() -> None:
    import gc

    from kafkalab.protocol import codec

    spec = api_spec("Metadata").response
    body = {"brokers": [], "topics": [{"name": f"t{t}", "partitions": [
        {"partition_index": p, "replica_nodes": [1, 2, 3], "isr_nodes": [1, 2, 3]} for p in range(400)]}
        for t in range(10)]}
    frame = encode(spec, 12, body)
    assert len(frame) >= codec.GC_PAUSE_BYTES
    seen = []
    original = compiler.decoder(spec, 12)

    def spy(buf, pos, records):
        seen.append(gc.isenabled())
        return original(buf, pos, records)
    spy.many_objects = original.many_objects
    key = (id(spec), 12)
    compiler._DECODERS[key] = (spec, spy)
    try:
        assert decode(spec, 12, frame) == decode_reference(spec, 12, frame)
        assert gc.isenabled() and seen == [False]
        with pytest.raises(DecodeError):
            decode(spec, 12, frame[:-1])
        assert gc.isenabled()
        gc.disable()
        decode(spec, 12, frame)
        assert not gc.isenabled()
    finally:
        gc.enable()
        compiler._DECODERS[key] = (spec, original)
