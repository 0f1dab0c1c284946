"""Broker-side checks and stamps on produced record sets, done on the raw bytes.

``check_record_set`` is the broker's gate (CORRUPT_MESSAGE for bad framing or a CRC mismatch,
MESSAGE_TOO_LARGE over the topic's max.message.bytes); in the default "crc" mode v2 batches are checked by
header and CRC-32C without inflating records, legacy sets and "full" mode go through the codec's decoder.
``stamp_log_append_time`` is the one place the broker writes a timestamp into a batch (KIP-32).
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import crc32c

from kafkalab.protocol.records import decode_records, iter_batches

NONE, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE = 0, 2, 10
_V2_PRODUCER = struct.Struct(">qhi")
_I16, _I32, _I64, _U32 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q"), struct.Struct(">I")


class ProducedBatch(NamedTuple):
    """What sequence checks need from one v2 batch header."""
    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int


def check_record_set(data: bytes | None, max_batch_bytes: int, mode: str = "crc") -> tuple[int, list[ProducedBatch]]:
    """(error code, v2 producer headers) for a produced record set."""
    if not data:
        return CORRUPT_MESSAGE, []
    batches: list[ProducedBatch] = []
    legacy = False
    for b in iter_batches(data):
        if b.partial or b.magic not in (0, 1, 2):
            return CORRUPT_MESSAGE, []
        if b.size > max_batch_bytes:
            return MESSAGE_TOO_LARGE, []
        if b.magic != 2:
            legacy = True
            continue
        if b.size < 61 or _U32.unpack_from(data, b.position + 17)[0] != \
                crc32c.crc32c(memoryview(data)[b.position + 21:b.position + b.size]):
            return CORRUPT_MESSAGE, []
        pid, epoch, seq = _V2_PRODUCER.unpack_from(data, b.position + 43)
        batches.append(ProducedBatch(pid, epoch, seq, seq + b.last_offset - b.base_offset))
    if (legacy or mode == "full") and not _decodes_cleanly(data):
        return CORRUPT_MESSAGE, []
    return NONE, batches


def _decodes_cleanly(data: bytes) -> bool:
    for entry in decode_records(data):
        if not entry.crc_ok or getattr(entry, "partial", False):
            return False
        if any(d.startswith("malformed") for d in entry.diagnostics):
            return False
    return True


def stamp_log_append_time(data: bytes, now_ms: int) -> bytes:
    """KIP-32 LogAppendTime: the broker sets the timestamp-type bit and writes its own time (v2: into
    max_timestamp; magic 1: into each top-level message's timestamp), then recomputes the CRC. Records are
    not touched; magic 0 has no timestamps."""
    out = bytearray(data)
    for b in iter_batches(out):
        p, end = b.position, b.position + b.size
        if b.magic == 2:
            _I16.pack_into(out, p + 21, _I16.unpack_from(out, p + 21)[0] | 0x08)
            _I64.pack_into(out, p + 35, now_ms)
            _U32.pack_into(out, p + 17, crc32c.crc32c(memoryview(out)[p + 21:end]))
        elif b.magic == 1:
            out[p + 17] |= 0x08
            _I64.pack_into(out, p + 18, now_ms)
            _U32.pack_into(out, p + 12, zlib.crc32(memoryview(out)[p + 16:end]))
    return bytes(out)
