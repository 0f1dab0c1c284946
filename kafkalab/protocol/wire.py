"""Kafka's primitive wire types: one reader and one writer per type, and the tables that name them.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; they check every length against the bytes that
remain before slicing or allocating, and raise :class:`WireError` (with the offset) on short or impossible
input. Writers take ``(out, value)`` where ``out`` is a ``bytearray`` and append the encoding.

Names follow Kafka's protocol guide: ``string`` is int16-length, ``compact_string`` is unsigned-varint
(length + 1), ``nullable_`` variants use -1 (or 0 when compact) for null.  ``READERS``/``WRITERS`` map every
wire type name to its function so the codec interpreter is a table lookup, not a chain of ifs.
"""
from __future__ import annotations

import struct
import uuid
from typing import Any, Callable

MAX_ARRAY_LENGTH = 1_000_000     # elements per array, as recent Kafka brokers enforce
MAX_TAGGED_FIELDS = 10_000       # tagged fields per section, likewise


class WireError(ValueError):
    """Bytes that violate a primitive's encoding: ``offset`` is where reading stopped."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


FIXED = {  # wire type -> (struct format, byte width)
    "int8": (">b", 1), "int16": (">h", 2), "int32": (">i", 4), "int64": (">q", 8),
    "uint16": (">H", 2), "uint32": (">I", 4), "float64": (">d", 8), "bool": (">?", 1),
}
_STRUCTS = {name: struct.Struct(fmt) for name, (fmt, _) in FIXED.items()}


def _fixed_reader(wire_type: str) -> Callable:
    unpack_from, width = _STRUCTS[wire_type].unpack_from, FIXED[wire_type][1]

    def read(buf, pos):
        if pos + width > len(buf):
            raise WireError(f"need {width} bytes for {wire_type}, {len(buf) - pos} left", pos)
        return unpack_from(buf, pos)[0], pos + width
    read.__name__ = f"read_{wire_type}"
    return read


def _fixed_writer(wire_type: str) -> Callable:
    pack = _STRUCTS[wire_type].pack

    def write(out, value):
        out += pack(value)
    write.__name__ = f"write_{wire_type}"
    return write


read_int8, read_int16, read_int32, read_int64 = (_fixed_reader(t) for t in ("int8", "int16", "int32", "int64"))
read_uint16, read_uint32, read_float64 = (_fixed_reader(t) for t in ("uint16", "uint32", "float64"))
write_int8, write_int16, write_int32, write_int64 = (_fixed_writer(t) for t in ("int8", "int16", "int32", "int64"))
write_uint16, write_uint32, write_float64 = (_fixed_writer(t) for t in ("uint16", "uint32", "float64"))


def read_bool(buf, pos):
    if pos >= len(buf):
        raise WireError("need 1 byte for bool, 0 left", pos)
    return buf[pos] != 0, pos + 1


def write_bool(out, value):
    out.append(1 if value else 0)


# ---------------------------------------------------------------- varints

def read_uvarint(buf, pos):
    """Unsigned LEB128 as Kafka writes it (at most 5 bytes for 32-bit values, 10 for 64-bit)."""
    result = shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise WireError("varint runs past the end of the data", start)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes", start)


def write_uvarint(out, value):
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf, pos):
    """Zigzag-encoded signed varint (record fields)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out, value):
    write_uvarint(out, (value << 1) ^ (value >> 63))


read_varlong, write_varlong = read_varint, write_varint


# ---------------------------------------------------------------- uuid

def read_uuid(buf, pos):
    if pos + 16 > len(buf):
        raise WireError(f"need 16 bytes for uuid, {len(buf) - pos} left", pos)
    return uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16


def write_uuid(out, value):
    if isinstance(value, str):
        value = uuid.UUID(value)
    out += value.bytes


# ---------------------------------------------------------------- lengths, strings, bytes

def _take(buf, pos, length, what):
    if length > len(buf) - pos:
        raise WireError(f"{what} length {length} exceeds the {len(buf) - pos} bytes left", pos)
    return bytes(buf[pos:pos + length]), pos + length


def _text(raw, pos, what):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(f"{what} is not valid UTF-8 ({exc.reason} at byte {exc.start})", pos) from None


def read_length_int16(buf, pos):
    return read_int16(buf, pos)


def read_length_int32(buf, pos):
    return read_int32(buf, pos)


def read_length_compact(buf, pos):
    """Compact lengths store length + 1, so 0 means null and the result is -1 for null."""
    raw, pos = read_uvarint(buf, pos)
    return raw - 1, pos


LENGTH_READERS = {"int16": read_length_int16, "int32": read_length_int32, "compact": read_length_compact}


def _string_reader(length_kind: str, nullable: bool) -> Callable:
    read_length = LENGTH_READERS[length_kind]

    def read(buf, pos):
        start = pos
        length, pos = read_length(buf, pos)
        if length < 0:
            if nullable and length == -1:
                return None, pos
            raise WireError(f"string length {length} is not allowed here", start)
        raw, pos = _take(buf, pos, length, "string")
        return _text(raw, start, "string"), pos
    return read


def _bytes_reader(length_kind: str, nullable: bool) -> Callable:
    read_length = LENGTH_READERS[length_kind]

    def read(buf, pos):
        start = pos
        length, pos = read_length(buf, pos)
        if length < 0:
            if nullable and length == -1:
                return None, pos
            raise WireError(f"bytes length {length} is not allowed here", start)
        return _take(buf, pos, length, "bytes")
    return read


read_string = _string_reader("int16", False)
read_nullable_string = _string_reader("int16", True)
read_compact_string = _string_reader("compact", False)
read_compact_nullable_string = _string_reader("compact", True)
read_bytes = _bytes_reader("int32", False)
read_nullable_bytes = _bytes_reader("int32", True)
read_compact_bytes = _bytes_reader("compact", False)
read_compact_nullable_bytes = _bytes_reader("compact", True)


def _length_writer(kind: str) -> Callable:
    if kind == "compact":
        return lambda out, n: write_uvarint(out, n + 1)
    pack = _STRUCTS[kind].pack

    def write(out, n):
        out += pack(n)
    return write


LENGTH_WRITERS = {kind: _length_writer(kind) for kind in ("int16", "int32", "compact")}
LENGTH_LIMITS = {"int16": 0x7FFF, "int32": 0x7FFFFFFF, "compact": 0x7FFFFFFE}


def _blob_writer(length_kind: str, nullable: bool, is_text: bool) -> Callable:
    write_length, limit = LENGTH_WRITERS[length_kind], LENGTH_LIMITS[length_kind]

    def write(out, value):
        if value is None:
            if not nullable:
                raise ValueError("null is not allowed")
            write_length(out, -1)
            return
        raw = value.encode("utf-8") if is_text else bytes(value)
        if len(raw) > limit:
            raise ValueError(f"length {len(raw)} exceeds {limit}")
        write_length(out, len(raw))
        out += raw
    return write


write_string = _blob_writer("int16", False, True)
write_nullable_string = _blob_writer("int16", True, True)
write_compact_string = _blob_writer("compact", False, True)
write_compact_nullable_string = _blob_writer("compact", True, True)
write_bytes = _blob_writer("int32", False, False)
write_nullable_bytes = _blob_writer("int32", True, False)
write_compact_bytes = _blob_writer("compact", False, False)
write_compact_nullable_bytes = _blob_writer("compact", True, False)


def string_wire_type(base: str, compact: bool, nullable: bool) -> str:
    """'string'/'bytes' plus encoding flags -> the wire type name used in READERS/WRITERS and trees."""
    return ("compact_" if compact else "") + ("nullable_" if nullable else "") + base


READERS: dict[str, Callable[[Any, int], tuple[Any, int]]] = {
    "int8": read_int8, "int16": read_int16, "int32": read_int32, "int64": read_int64,
    "uint16": read_uint16, "uint32": read_uint32, "float64": read_float64, "bool": read_bool,
    "uuid": read_uuid, "uvarint": read_uvarint, "varint": read_varint,
    "string": read_string, "nullable_string": read_nullable_string,
    "compact_string": read_compact_string, "compact_nullable_string": read_compact_nullable_string,
    "bytes": read_bytes, "nullable_bytes": read_nullable_bytes,
    "compact_bytes": read_compact_bytes, "compact_nullable_bytes": read_compact_nullable_bytes,
}
WRITERS: dict[str, Callable[[bytearray, Any], None]] = {
    "int8": write_int8, "int16": write_int16, "int32": write_int32, "int64": write_int64,
    "uint16": write_uint16, "uint32": write_uint32, "float64": write_float64, "bool": write_bool,
    "uuid": write_uuid, "uvarint": write_uvarint, "varint": write_varint,
    "string": write_string, "nullable_string": write_nullable_string,
    "compact_string": write_compact_string, "compact_nullable_string": write_compact_nullable_string,
    "bytes": write_bytes, "nullable_bytes": write_nullable_bytes,
    "compact_bytes": write_compact_bytes, "compact_nullable_bytes": write_compact_nullable_bytes,
}
