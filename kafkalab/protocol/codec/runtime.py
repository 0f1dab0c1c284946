"""What the generated decoders call at run time: struct tables, array and UUID helpers, item shapes.

Owns: the helpers compiled code refers to by name (see ``codegen.RUNTIME``) and the tables they use. They
trust the generated code's checks and may raise anything on bad input: the caller then re-runs the
reference interpreter (see :mod:`.compiler`).
"""
from __future__ import annotations

import struct
import uuid

from ..wire import FIXED, read_uvarint
from .layout import Layout, Slot

STRUCT_CODES = {name: fmt[1] for name, (fmt, _) in FIXED.items()} | {"uuid": "16s"}

SMALL_ARRAY = 64
ARRAY_UNPACKERS = {code: [struct.Struct(f">{n}{code}").unpack_from for n in range(SMALL_ARRAY)]
                   for code in set(STRUCT_CODES.values()) if code != "16s"}


#: the same, also reading the one byte after the array (a flexible version always has one: the next compact
#: length or the tag section), so the next slot needs no separate index operation
PEEKING_UNPACKERS = {code: [struct.Struct(f">{n}{code}B").unpack_from for n in range(SMALL_ARRAY)]
                     for code in set(STRUCT_CODES.values()) if code != "16s"}


def int_array(buf, pos: int, code: str, width: int) -> tuple[list, int]:
    """A compact array of fixed-width numbers starting at ``pos`` (its count included), any size."""
    count, pos = read_uvarint(buf, pos)
    count -= 1
    if count < 0:
        raise Reject()
    values = list(struct.unpack_from(f">{count}{code}", buf, pos))   # refuses counts the buffer cannot hold
    return values, pos + count * width


class Reject(Exception):
    """Raised by generated code on input it will not handle; the caller falls back to the interpreter."""


def reject(*_):
    raise Reject()


def is_int_array(slot: Slot) -> bool:
    return (slot.kind == "array" and slot.compact and not slot.nullable and slot.layout is None
            and slot.item_wire_type in STRUCT_CODES and slot.item_wire_type != "uuid")


def int_arrays(layout: Layout) -> list[Slot]:
    return [s for s in layout.slots if is_int_array(s)]


def shaped(layout: Layout) -> bool:
    """Items whose shape one struct call can read: flexible, no known tagged fields, fixed-width scalars
    first (no UUIDs), then int arrays only, at least one."""
    if not layout.flexible or layout.tagged or not int_arrays(layout):
        return False
    kinds = ["fixed" if s.kind == "scalar" and s.wire_type in STRUCT_CODES and s.wire_type != "uuid"
             else "array" if is_int_array(s) else "other" for s in layout.slots]
    return "other" not in kinds and kinds == sorted(kinds, key=lambda k: k == "array")


_SHAPES: dict[tuple, tuple | None] = {}


def shape(layout: Layout, counts: tuple) -> tuple | None:
    """(unpack, size, then for each int array: its count byte's index and value) of an item of ``layout``
    with arrays of ``counts`` items; None when a count takes more than one byte."""
    key = (id(layout), counts)
    hit = _SHAPES.get(key, False)
    if hit is not False:
        return hit
    found = None
    if all(0 <= c < 126 for c in counts):
        fmt = ">" + "".join(STRUCT_CODES[s.wire_type] for s in layout.slots if s.kind == "scalar")
        out = []
        for slot, count in zip(int_arrays(layout), counts):
            out += [len(fmt) - 1, count + 1]                  # the count byte's index in the tuple
            fmt += "B" + STRUCT_CODES[slot.item_wire_type] * count
        unpacker = struct.Struct(fmt + "B")
        found = (unpacker.unpack_from, unpacker.size, *out)
    if len(_SHAPES) < 4096:
        _SHAPES[key] = found
    return found


_UUID_NEW = uuid.UUID.__new__
_SET = object.__setattr__
_SAFE = uuid.SafeUUID.unknown
_UUIDS: dict[bytes, uuid.UUID] = {}   # topic ids recur in every message that names the topic


def make_uuid(raw: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=raw)`` (``raw`` is always 16 bytes here): the same immutable object for the same
    bytes (topic ids, the zero id of requests by name), else made without ``UUID.__init__``'s checks."""
    value = _UUIDS.get(raw)
    if value is None:
        value = _UUID_NEW(uuid.UUID)
        _SET(value, "int", int.from_bytes(raw, "big"))
        _SET(value, "is_safe", _SAFE)
        if len(_UUIDS) >= 1 << 16:
            _UUIDS.clear()
        _UUIDS[raw] = value
    return value
