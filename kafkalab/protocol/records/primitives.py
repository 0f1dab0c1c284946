"""Wire primitives of the record formats: fixed-width big-endian integers and zigzag varints.

Record batches v2 (KIP-98) switched the per-record fields to zigzag-encoded varints to make small records
small; the batch headers and the legacy message formats stay fixed-width big-endian. Every reader takes the
buffer, a position and the exclusive end it may not read past, and returns ``(value, new_position)``; a read
that would cross ``end`` raises :class:`~kafkalab.protocol.errors.DecodeError`, which the batch decoders turn
into diagnostics (the public decoders never raise on peer data).
"""
from __future__ import annotations

import struct

from ..errors import DecodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")

#: Longest encodings: a varint (int32) takes at most 5 bytes, a varlong (int64) at most 10.
MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


def _fixed(st: struct.Struct, buf, pos: int, end: int, what: str):
    if pos + st.size > end:
        raise DecodeError(f"{what} needs {st.size} bytes, {max(end - pos, 0)} left", offset=pos)
    return st.unpack_from(buf, pos)[0], pos + st.size


def read_int8(buf, pos: int, end: int) -> tuple[int, int]:
    return _fixed(INT8, buf, pos, end, "int8")


def read_int16(buf, pos: int, end: int) -> tuple[int, int]:
    return _fixed(INT16, buf, pos, end, "int16")


def read_int32(buf, pos: int, end: int) -> tuple[int, int]:
    return _fixed(INT32, buf, pos, end, "int32")


def read_uint32(buf, pos: int, end: int) -> tuple[int, int]:
    return _fixed(UINT32, buf, pos, end, "uint32")


def read_int64(buf, pos: int, end: int) -> tuple[int, int]:
    return _fixed(INT64, buf, pos, end, "int64")


def _read_unsigned_varint(buf, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Little-endian base-128 groups, high bit = "more follows" (protobuf style)."""
    result = 0
    shift = 0
    for i in range(max_bytes):
        if pos >= end:
            raise DecodeError("varint runs past the end of its field", offset=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise DecodeError(f"varint longer than {max_bytes} bytes", offset=pos - max_bytes)


def read_varint(buf, pos: int, end: int) -> tuple[int, int]:
    """A zigzag varint (int32 range): 0, -1, 1, -2 ... encode as 0, 1, 2, 3 ..."""
    if pos + 1 < end:  # fast paths: one- and two-byte varints are by far the most common
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        c = buf[pos + 1]
        if c < 0x80:
            raw = (b & 0x7F) | (c << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _read_unsigned_varint(buf, pos, end, MAX_VARINT_BYTES)
    if raw > 0xFFFFFFFF:
        raise DecodeError("varint out of int32 range", offset=pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int, end: int) -> tuple[int, int]:
    """A zigzag varlong (int64 range)."""
    if pos < end:
        b = buf[pos]
        if not b & 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _read_unsigned_varint(buf, pos, end, MAX_VARLONG_BYTES)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise DecodeError("varlong out of int64 range", offset=pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(value: int) -> bytes:
    """Zigzag varint of an int32 value."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise OverflowError(f"varint {value} out of int32 range")
    return _write_unsigned_varint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    """Zigzag varlong of an int64 value."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise OverflowError(f"varlong {value} out of int64 range")
    return _write_unsigned_varint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _write_unsigned_varint(raw: int) -> bytes:
    if raw < 0x80:
        return bytes((raw,))
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def read_varint_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    """v2 record key/value/header value: varint length (-1 = null) then that many bytes."""
    b = buf[pos] if pos < end else 0x80
    if b < 0x80:  # inlined one-byte length: this runs for every key, value and header
        n = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        n, pos = read_varint(buf, pos, end)
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative length {n}", offset=pos)
        return None, pos
    if pos + n > end:
        raise DecodeError(f"length {n} runs past the end of the record ({end - pos} bytes left)", offset=pos)
    return bytes(buf[pos:pos + n]), pos + n


def write_varint_bytes(value: bytes | None) -> bytes:
    if value is None:
        return b"\x01"  # zigzag(-1)
    return write_varint(len(value)) + bytes(value)


def read_int32_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    """Legacy key/value: int32 length (-1 = null) then that many bytes."""
    n, pos = read_int32(buf, pos, end)
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative length {n}", offset=pos)
        return None, pos
    if pos + n > end:
        raise DecodeError(f"length {n} runs past the end of the message ({end - pos} bytes left)", offset=pos)
    return bytes(buf[pos:pos + n]), pos + n


def write_int32_bytes(value: bytes | None) -> bytes:
    if value is None:
        return b"\xff\xff\xff\xff"
    return INT32.pack(len(value)) + bytes(value)
