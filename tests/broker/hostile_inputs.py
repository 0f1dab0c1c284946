"""Hostile record sets, built byte by byte (on purpose not with the project's encoder, which refuses them):
shared by the hostile-input tests, the fuzz targets and the soak test."""
from __future__ import annotations

import struct
import zlib

import crc32c


def v2_batch(records: bytes, count: int, last_offset_delta: int | None = None, codec: int = 0,
             base_offset: int = 0, magic: int = 2) -> bytes:
    """A v2 batch around ``records`` whose CRC is right whatever its header says."""
    delta = count - 1 if last_offset_delta is None else last_offset_delta
    body = struct.pack(">hiqqqhii", codec, delta, 1000, 1000, -1, -1, -1, count) + records
    return struct.pack(">qiibI", base_offset, 9 + len(body), -1, magic, crc32c.crc32c(body)) + body


def v2_record(value: bytes, offset_delta: int = 0) -> bytes:
    """One record: attributes, timestamp delta, offset delta, null key, value, no headers (values < 64 bytes)."""
    body = bytes((0, 0, offset_delta * 2)) + b"\x01" + bytes((len(value) * 2,)) + value + b"\x00"
    return bytes((len(body) * 2,)) + body


def v2_records(values) -> bytes:
    return b"".join(v2_record(v, i) for i, v in enumerate(values))


def legacy_message(value: bytes | None, magic: int = 1, codec: int = 0, offset: int = 0, crc: int | None = None,
                   timestamp: int = 1000) -> bytes:
    body = struct.pack(">bb", magic, codec) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    body += struct.pack(">i", -1) + (struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value)
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body) if crc is None else crc) + body


def gzip_wrapper(inner: bytes, magic: int = 1) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return legacy_message(packer.compress(inner) + packer.flush(), magic=magic, codec=1)


def million_message_wrapper(count: int = 1_000_000) -> bytes:
    """A gzip wrapper of ``count`` empty magic 1 messages: about 100 KB on the wire, 34 MB inflated."""
    return gzip_wrapper(legacy_message(b"") * count)


def produce_body(records: bytes, topic: str = "t", partition: int = 0, acks: int = -1) -> dict:
    return {"acks": acks, "timeout_ms": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": partition, "records": records}]}]}
