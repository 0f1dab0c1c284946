"""Codecs, traces, Kafka quirks and the broker helpers, one behaviour per test."""
from __future__ import annotations

import dataclasses
import struct
import zlib

import cramjam
import crc32c
import pytest

from kafkalab.protocol.records import (ControlRecord, LegacyMessage, RecordBatch, assign_offsets, build_batch,
                                       decode_records, encode_records, iter_batches, rewrite_base_offset,
                                       trace_records)
from kafkalab.protocol.records.compression import Codec, decompress
from kafkalab.protocol.records.lz4frame import xxh32
from kafkalab.protocol.records.primitives import read_varint, read_varlong, write_varint, write_varlong
from kafkalab.protocol.tree import FieldNode
from records_treecheck import check_tree

# xxHash32 reference values (computed with the xxhash package, seed 0)
XXH32_VECTORS = {b"": 0x02CC5D05, b"a": 0x550D7456, b"abc": 0x32D153FF, b"\x60\x40": 0x301A8268,
                 b"\x04\x22\x4d\x18\x60\x40": 0xC8581A3A, bytes(range(20)): 0x828B819C,
                 bytes(range(37)): 0x778632D9}


def test_xxh32_reference_vectors():
    assert {k: xxh32(k) for k in XXH32_VECTORS} == XXH32_VECTORS


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 2**31 - 1, -2**31])
def test_varint_round_trip(value):
    enc = write_varint(value)
    assert read_varint(enc, 0, len(enc)) == (value, len(enc))
    enc = write_varlong(value * 2**32)
    assert read_varlong(enc, 0, len(enc)) == (value * 2**32, len(enc))


def test_snappy_accepts_raw_and_xerial_and_gzip_concatenation():
    data = bytes(range(256)) * 300
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(Codec.SNAPPY, raw, magic=2, limit=1 << 20)[0] == data
    # little-endian version/compat ints in the xerial header (seen from some producers) are ignored
    xerial = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + struct.pack(">i", len(raw)) + raw
    assert decompress(Codec.SNAPPY, xerial, magic=2, limit=1 << 20)[0] == data
    gz = bytes(cramjam.gzip.compress(data[:1000])) + bytes(cramjam.gzip.compress(data[1000:]))
    assert decompress(Codec.GZIP, gz, magic=2, limit=1 << 20)[0] == data


def test_zstd_with_and_without_content_size():
    data = b"abc" * 50000
    with_size = bytes(cramjam.zstd.compress(data))
    c = cramjam.zstd.Compressor()
    c.compress(data)
    streamed = bytes(c.finish())
    for frame in (with_size, streamed):
        assert decompress(Codec.ZSTD, frame, magic=2, limit=1 << 20)[0] == data


def test_zstd_refused_before_magic_2_and_unknown_codec():
    (msg,) = decode_records(encode_records([build_batch([(b"k", b"v")], magic=1, codec="gzip")]))
    body = bytearray(msg.raw)
    body[17] = (body[17] & ~7) | 4  # say zstd
    struct.pack_into(">I", body, 12, zlib.crc32(body[16:]))
    (bad,) = decode_records(bytes(body))
    assert bad.crc_ok and any("zstd is not allowed with magic 1" in d for d in bad.diagnostics)
    body[17] = (body[17] & ~7) | 6
    struct.pack_into(">I", body, 12, zlib.crc32(body[16:]))
    (bad,) = decode_records(bytes(body))
    assert bad.codec == "unknown(6)" and any("unknown compression codec 6" in d for d in bad.diagnostics)


def _trace(data, base=100):
    root = FieldNode("resp.records", "records", "records", base)
    trace_records(data, root, base, "resp.records")
    root.end = base + len(data)
    check_tree(root, base, len(data))
    return root


def test_trace_uncompressed_v2_paths_and_values():
    batch = build_batch([(b"k", b"v", [("h", b"x")], 7)], base_offset=3)
    root = _trace(encode_records([batch]))
    assert root.find("resp.records[0]").wire_type == "record_batch"
    key = root.find("resp.records[0].records[0].key")
    assert key.value == b"k" and key.start == 100 + 61 + 5 and key.end == key.start + 1
    assert root.find("resp.records[0].records[0].headers[0].key").value == "h"
    assert root.find("resp.records[0].base_offset").value == 3


def test_trace_compressed_batch_has_deflated_and_inflated_spaces():
    batch = build_batch([(b"key", b"value" * 20, [], 7)] * 3, codec="zstd")
    data = encode_records([batch])
    root = _trace(data, base=0)
    deflated = root.find("resp.records[0].deflated")
    assert deflated.wire_type == "compressed" and (deflated.start, deflated.end) == (61, len(data))
    (inflated,) = deflated.children
    assert inflated.name == "inflated" and inflated.buffer is not None and "relative" in inflated.value
    value = root.find("resp.records[0].records[2].value")
    assert inflated.buffer[value.start:value.end] == b"value" * 20


def test_trace_legacy_wrapper_inner_paths():
    data = encode_records([build_batch([(b"a", b"1"), (b"b", b"2")], magic=1, codec="gzip", base_timestamp=5)])
    root = _trace(data)
    assert root.find("resp.records[0]").name == "message"
    assert root.find("resp.records[0].inner[1].key").value == b"b"
    assert root.find("resp.records[0].deflated").children[0].buffer is not None


def test_crc_mismatch_text_on_crc_leaf():
    data = bytearray(encode_records([build_batch([(b"k", b"v")])]))
    data[-1] ^= 1
    (batch,) = decode_records(bytes(data))
    computed = crc32c.crc32c(bytes(data[21:]))
    expected = f"CRC mismatch: expected 0x{batch.crc:08x}, computed 0x{computed:08x}"
    assert not batch.crc_ok and expected in batch.diagnostics
    assert _trace(bytes(data)).find("resp.records[0].crc").diagnostics == [expected]


def test_partial_and_garbage_tails_in_trace():
    one = encode_records([build_batch([(b"k", b"v")])])
    root = _trace(one + one[:30])
    assert any(d.startswith("partial batch") for d in root.find("resp.records[1]").diagnostics)
    garbage = one + struct.pack(">qi", 0, 3) + b"xyz"
    entries = decode_records(garbage)
    assert entries[-1].diagnostics and "too small" in entries[-1].diagnostics[0]
    assert encode_records(entries) == garbage
    _trace(garbage)


def test_record_length_beyond_batch_is_diagnosed():
    batch = build_batch([(b"k", b"v")])
    data = bytearray(encode_records([batch]))
    data[61] = 0x7E  # record length 63, far past the batch
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    (bad,) = decode_records(bytes(data))
    assert bad.crc_ok and any("record length 63" in d for d in bad.diagnostics)


def test_control_batch_decodes_marker_fields():
    marker = build_batch([ControlRecord(type=0, coordinator_epoch=17)], control=True, transactional=True,
                         producer_id=5, producer_epoch=2)
    (batch,) = decode_records(encode_records([marker]))
    rec = batch.records[0]
    assert batch.control and rec.control == ControlRecord(version=0, type=0, coordinator_epoch=17)
    assert rec.control.type_name == "ABORT" and rec.key == b"\x00\x00\x00\x00"
    assert "ABORT" in repr(rec) and batch.to_dict()["records"][0]["control"]["coordinator_epoch"] == 17


def test_log_append_time_overrides_record_timestamps():
    """KIP-32: in LOG_APPEND_TIME batches/wrappers the broker's time applies to every record."""
    batch = build_batch([(b"a", b"1", [], 10), (b"b", b"2", [], 20)], timestamp_type="log_append")
    (v2,) = decode_records(encode_records([dataclasses.replace(batch, max_timestamp=999)]))
    assert [r.timestamp for r in v2.records] == [999, 999] and v2.timestamp_type == "log_append"
    wrapper = build_batch([(b"a", b"1", [], 10), (b"b", b"2", [], 20)], magic=1, codec="gzip",
                          timestamp_type="log_append", base_timestamp=777)
    assert [r.timestamp for r in wrapper.records] == [777, 777]


def test_magic1_relative_and_magic0_absolute_inner_offsets():
    for magic in (0, 1):
        wrapper = build_batch([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], magic=magic, codec="snappy",
                              base_offset=40)
        assert wrapper.offset == 42
        assert [m.offset for m in wrapper.inner] == ([0, 1, 2] if magic == 1 else [40, 41, 42])
        assert [r.offset for r in wrapper.records] == [40, 41, 42]


def test_build_legacy_uncompressed_is_a_tuple_and_rejects_v2_features():
    msgs = build_batch([(b"a", b"1"), (b"b", b"2")], magic=0)
    assert isinstance(msgs, tuple) and all(isinstance(m, LegacyMessage) for m in msgs)
    with pytest.raises(ValueError):
        build_batch([(b"a", b"1", [("h", b"x")])], magic=1)
    with pytest.raises(ValueError):
        build_batch([(b"a", b"1")], magic=1, codec="zstd")


def test_rewrite_base_offset_keeps_crc_valid():
    data = encode_records([build_batch([(b"k", b"v")] * 3, codec="lz4")])
    moved = rewrite_base_offset(data, 5000)
    (batch,) = decode_records(moved)
    assert batch.crc_ok and batch.base_offset == 5000 and [r.offset for r in batch.records] == [5000, 5001, 5002]
    buf = bytearray(data)
    assert rewrite_base_offset(buf, 7) is buf and decode_records(bytes(buf))[0].base_offset == 7


def test_assign_offsets_over_mixed_set():
    parts = [build_batch([(b"a", b"1")] * 3), build_batch([(b"b", b"2")] * 2, magic=1, codec="gzip"),
             build_batch([(b"c", b"3")] * 2, magic=0, codec="gzip"), build_batch([(b"d", b"4")] * 2, magic=1)]
    data, nxt = assign_offsets(encode_records(parts), 100)
    entries = decode_records(data)
    assert nxt == 109 and all(e.crc_ok and not e.diagnostics for e in entries)
    assert [r.offset for e in entries for r in e.records] == list(range(100, 109))
    assert [b.last_offset for b in iter_batches(data)] == [102, 104, 106, 107, 108]


def test_to_dict_and_repr_are_plain():
    (batch,) = decode_records(encode_records([build_batch([(b"k", None, [("h", None)], 1)], codec="gzip")]))
    d = batch.to_dict()
    assert d["codec"] == "gzip" and d["records"][0]["value"] is None and d["records"][0]["headers"] == [["h", None]]
    assert "RecordBatch(offsets 0..0, 1 records, codec=gzip" in repr(batch)
    assert isinstance(encode_records([d]), bytes) and encode_records(None) is None
    assert encode_records(b"\x01\x02") == b"\x01\x02"


def test_decoded_objects_are_frozen():
    (batch,) = decode_records(encode_records([build_batch([(b"k", b"v")])]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.base_offset = 1
    assert isinstance(batch, RecordBatch)
