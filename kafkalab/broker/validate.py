"""Broker-side checks and stamps on produced record sets, done on the raw bytes.

``check_record_set`` is the broker's gate (CORRUPT_MESSAGE for bad framing or a CRC mismatch,
INVALID_RECORD for a header that makes no sense, MESSAGE_TOO_LARGE over the topic's max.message.bytes); in
the default "crc" mode v2 batches are checked by header and CRC-32C without inflating records, legacy sets
are walked without building records (capped inflate, every inner CRC), and "full" mode decodes everything.
``stamp_log_append_time`` is the one place the broker writes a timestamp into a batch (KIP-32).
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import crc32c

from kafkalab.protocol import ErrorCode
from kafkalab.protocol.records import DEFAULT_MAX_INFLATED, DEFAULT_MAX_RECORDS, decode_records, iter_batches
from kafkalab.protocol.records.batch import HEADER_SIZE, header_problem
from kafkalab.protocol.records.legacy import validate as legacy_validate

_V2_PRODUCER = struct.Struct(">qhi")
_I16, _I32, _I64, _U32 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q"), struct.Struct(">I")


def _crc32c_holding_gil(data) -> int:
    """CRC-32C without letting go of the GIL: hardware CRC of a megabyte takes ~30 us, but a thread that
    releases the GIL while the client in the same process (a notebook) runs Python waits up to the switch
    interval (5 ms) to get it back."""
    return crc32c.crc32c(data, gil_release_mode=0)


try:
    _crc32c_holding_gil(b"")
    crc32c_fast = _crc32c_holding_gil
except TypeError:                       # crc32c releases the GIL its own way before 2.3
    crc32c_fast = crc32c.crc32c


class ProducedBatch(NamedTuple):
    """What sequence checks need from one v2 batch header."""
    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    attributes: int = 0


class Checked(NamedTuple):
    """The verdict on one produced record set: the error code (NONE when it may be stored), why (for the
    response's error message and the log), the v2 producer headers, and the record count of each entry
    (counted once here, so appending never inflates a legacy wrapper again)."""
    error: int
    reason: str | None = None
    batches: list[ProducedBatch] = []
    counts: list[int] = []


def check_record_set(data: bytes | None, max_batch_bytes: int, mode: str = "crc",
                     max_records: int = DEFAULT_MAX_RECORDS, max_inflated: int = DEFAULT_MAX_INFLATED) -> Checked:
    """Whether a produced record set may be stored. v2 batches are judged by header and CRC-32C (every header
    field the CRC does not cover is checked for sense: a bad offset range is INVALID_RECORD, as in Kafka);
    legacy messages are walked without building records, inner messages' CRCs included. "full" mode also
    decodes every v2 record. Pure (no broker state), so it may run off the event loop."""
    if not data:
        return Checked(ErrorCode.CORRUPT_MESSAGE, "empty record set")
    batches: list[ProducedBatch] = []
    counts: list[int] = []
    for b in iter_batches(data):
        if b.partial or b.magic not in (0, 1, 2):
            return Checked(ErrorCode.CORRUPT_MESSAGE,
                           f"truncated or unknown entry (magic {b.magic}) at byte {b.position}")
        if b.size > max_batch_bytes:
            return Checked(ErrorCode.MESSAGE_TOO_LARGE, f"batch of {b.size} bytes is above {max_batch_bytes}")
        if b.magic != 2:
            problem, count = legacy_validate(data, b.position, b.position + b.size, max_inflated=max_inflated,
                                             max_records=max_records)
            if problem:
                return Checked(ErrorCode.CORRUPT_MESSAGE, problem)
            counts.append(count)
            continue
        if b.size < HEADER_SIZE or _U32.unpack_from(data, b.position + 17)[0] != \
                crc32c_fast(memoryview(data)[b.position + 21:b.position + b.size]):
            return Checked(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {b.position} fails its CRC")
        problem = header_problem(data, b.position, b.size, max_records=max_records)
        if problem:
            return Checked(ErrorCode.INVALID_RECORD, problem)
        pid, epoch, seq = _V2_PRODUCER.unpack_from(data, b.position + 43)
        attributes = _I16.unpack_from(data, b.position + 21)[0]
        batches.append(ProducedBatch(pid, epoch, seq, seq + b.last_offset - b.base_offset, attributes))
        counts.append(b.record_count)
    if mode == "full" and not _decodes_cleanly(data, max_inflated):
        return Checked(ErrorCode.CORRUPT_MESSAGE, "a record does not decode")
    return Checked(ErrorCode.NONE, None, batches, counts)


def needs_inflating(data: bytes | None, mode: str) -> bool:
    """Whether checking ``data`` inflates anything (legacy wrappers, or "full" mode): work to keep off the
    event loop."""
    if mode == "full":
        return bool(data)
    return any(b.magic in (0, 1) and not b.partial and b.record_count is None for b in iter_batches(data or b""))


def timestamps_within(data: bytes, now_ms: int, before_ms: int | None, after_ms: int | None) -> bool:
    """KIP-937 window for CreateTime: no timestamp more than ``before_ms`` behind or ``after_ms`` ahead of the
    broker clock. v2 batches are judged by their header (first and max timestamp), legacy messages one by one
    (magic 0 has none)."""
    for b in iter_batches(data):
        if b.magic == 2:
            low, high = _I64.unpack_from(data, b.position + 27)[0], _I64.unpack_from(data, b.position + 35)[0]
        elif b.magic == 1:
            low = high = _I64.unpack_from(data, b.position + 18)[0]
        else:
            continue
        if low < 0:
            continue                    # no timestamp (-1) is not judged
        if (before_ms is not None and low < now_ms - before_ms) or (after_ms is not None and high > now_ms + after_ms):
            return False
    return True


def _decodes_cleanly(data: bytes, max_inflated: int) -> bool:
    for entry in decode_records(data, max_inflated=max_inflated):
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
