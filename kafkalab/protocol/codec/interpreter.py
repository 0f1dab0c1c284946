"""The reference codec: one interpreter that decodes and encodes any layout, optionally tracing every byte.

Owns: walking a :class:`~.layout.Layout` over bytes (decode) or over a body dict (encode), the Kafka rules
for arrays, nullable structs (KIP-893: an int8 marker, -1 for null) and tagged-field sections (KIP-482), and
turning primitive failures into :class:`DecodeError`/:class:`EncodeError` that name the field path.
Must not know: framing and headers (see ``messages``), sockets or files, how record batches look inside
(delegated to ``records``).

Theory of operation. ``decode_struct`` reads the regular slots of a layout in order, then, in flexible
versions, the tagged section: a count, then (tag, size, value) triples. With ``trace`` (a parent
:class:`FieldNode`) every read also appends a node whose span is exactly the bytes consumed, so the leaves
tile the buffer. When a read fails in traced mode, the innermost container gets a "malformed" node from the
failing field to the end of the buffer, every open container is closed at the end of the buffer, and a
:class:`Malformed` exception carries the DecodeError up to whoever started the trace. The compiled fast
path (``compiler``) must produce the same values; when it fails it re-runs this interpreter to report where.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import DecodeError, EncodeError
from ..tree import FieldNode
from ..wire import (MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS, READERS, WRITERS, WireError, read_int8,
                    read_length_compact, read_length_int32, read_uvarint, write_int8, write_uvarint)
from .layout import UNKNOWN_TAGS, Layout, Slot
from .record_hooks import RECORDS_HOOKS


class Malformed(Exception):
    """Raised through a traced decode once the malformed node has been placed."""

    def __init__(self, error: DecodeError) -> None:
        super().__init__(str(error))
        self.error = error


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _fail(message: str, path: str, offset: int, buf, start: int, trace: FieldNode | None):
    """Raise DecodeError (plain) or place a malformed node and raise Malformed (traced)."""
    error = DecodeError(message, path=path, offset=offset)
    if trace is None:
        raise error
    trace.add(FieldNode(path, path.rsplit(".", 1)[-1], "malformed", start, len(buf),
                        value=bytes(buf[start:]), diagnostics=[f"malformed: {error}"]))
    raise Malformed(error)


def _close(node: FieldNode, buf) -> None:
    node.end = len(buf)


# ---------------------------------------------------------------- decoding

def decode_struct(layout: Layout, buf, pos: int, path: str = "", trace: FieldNode | None = None,
                  records: str = "batches") -> tuple[dict, int]:
    body: dict[str, Any] = {}
    try:
        for slot in layout.slots:
            body[slot.name], pos = decode_slot(slot, buf, pos, _join(path, slot.name), trace, records)
        if layout.flexible:
            pos = decode_tagged(layout, body, buf, pos, path, trace, records)
    except Malformed:
        if trace is not None:
            _close(trace, buf)
        raise
    return body, pos


def decode_slot(slot: Slot, buf, pos: int, path: str, trace: FieldNode | None, records: str):
    start = pos
    if slot.kind == "scalar":
        try:
            value, pos = READERS[slot.wire_type](buf, pos)
        except WireError as exc:
            _fail(str(exc), path, exc.offset, buf, start, trace)
        if trace is not None:
            trace.add(FieldNode(path, slot.name, slot.wire_type, start, pos, value))
        return value, pos
    if slot.kind == "array":
        return decode_array(slot, buf, pos, path, trace, records)
    if slot.kind == "struct":
        return decode_single_struct(slot, buf, pos, path, trace, records)
    return decode_records_field(slot, buf, pos, path, trace, records)


def _read_count(slot: Slot, buf, pos: int, path: str, trace, element_size: int):
    """An array count, checked against the bytes left before anything is allocated."""
    start = pos
    try:
        count, pos = (read_length_compact if slot.compact else read_length_int32)(buf, pos)
    except WireError as exc:
        _fail(str(exc), path, exc.offset, buf, start, trace)
    if count < -1 or (count == -1 and not slot.nullable):
        _fail(f"array length {count} is not allowed here", path, start, buf, start, trace)
    if count > MAX_ARRAY_LENGTH or count * element_size > len(buf) - pos:
        _fail(f"array length {count} exceeds the {len(buf) - pos} bytes left", path, start, buf, start, trace)
    return count, pos


def decode_array(slot: Slot, buf, pos: int, path: str, trace: FieldNode | None, records: str):
    start = pos
    layout = slot.layout
    element_size = layout.min_size if layout else slot_item_min_size(slot)
    node = None
    if trace is not None:
        node = trace.add(FieldNode(path, slot.name, slot.wire_type, start))
    count, pos = _read_count(slot, buf, pos, path, node if node is not None else None, element_size)
    if node is not None:
        node.add(FieldNode(path + "#count", "count", "compact_length" if slot.compact else "int32", start, pos,
                           count))
    if count < 0:
        if node is not None:
            node.value, node.end = None, pos
            node.children.clear()
            node.add(FieldNode(path + "#count", "count", "compact_length" if slot.compact else "int32",
                               start, pos, None, diagnostics=["null array"]))
        return None, pos
    items = []
    try:
        if layout is not None:
            for i in range(count):
                item_path = f"{path}[{i}]"
                child = None
                if node is not None:
                    child = node.add(FieldNode(item_path, f"{slot.name}[{i}]", "struct", pos))
                value, pos = decode_struct(layout, buf, pos, item_path, child, records)
                if child is not None:
                    child.end = pos
                items.append(value)
        else:
            reader = READERS[slot.item_wire_type]
            for i in range(count):
                item_start = pos
                try:
                    value, pos = reader(buf, pos)
                except WireError as exc:
                    _fail(str(exc), f"{path}[{i}]", exc.offset, buf, item_start, node)
                if node is not None:
                    node.add(FieldNode(f"{path}[{i}]", f"{slot.name}[{i}]", slot.item_wire_type, item_start,
                                       pos, value))
                items.append(value)
    except Malformed:
        if node is not None:
            _close(node, buf)
        raise
    if node is not None:
        node.end = pos
    return items, pos


def slot_item_min_size(slot: Slot) -> int:
    from .layout import FIXED_WIDTH
    wire = slot.item_wire_type
    return FIXED_WIDTH.get(wire, 1 if slot.compact else 2 if "string" in wire else 4)


def decode_single_struct(slot: Slot, buf, pos: int, path: str, trace: FieldNode | None, records: str):
    start = pos
    node = trace.add(FieldNode(path, slot.name, slot.wire_type, start)) if trace is not None else None
    try:
        if slot.nullable:
            try:
                marker, pos = read_int8(buf, pos)
            except WireError as exc:
                _fail(str(exc), path, exc.offset, buf, start, node)
            if node is not None:
                node.add(FieldNode(path + "#present", "present", "int8", start, pos, marker))
            if marker < 0:
                if node is not None:
                    node.end = pos
                return None, pos
        value, pos = decode_struct(slot.layout, buf, pos, path, node, records)
    except Malformed:
        if node is not None:
            _close(node, buf)
        raise
    if node is not None:
        node.end = pos
    return value, pos


def decode_records_field(slot: Slot, buf, pos: int, path: str, trace: FieldNode | None, records: str):
    start = pos
    try:
        length, pos = (read_length_compact if slot.compact else read_length_int32)(buf, pos)
    except WireError as exc:
        _fail(str(exc), path, exc.offset, buf, start, trace)
    if length < -1 or length > len(buf) - pos:
        _fail(f"records length {length} does not fit the {len(buf) - pos} bytes left", path, start, buf,
              start, trace)
    if length == -1:
        if trace is not None:
            trace.add(FieldNode(path, slot.name, slot.wire_type, start, pos, None))
        return None, pos
    data = bytes(buf[pos:pos + length])
    hooks = RECORDS_HOOKS[records]
    value = hooks.decode(data)
    if trace is not None:
        node = trace.add(FieldNode(path, slot.name, slot.wire_type, start, pos + length, value))
        node.add(FieldNode(path + "#length", "length", "compact_length" if slot.compact else "int32", start,
                           pos, length))
        hooks.trace(data, node, pos, path)
    return value, pos + length


def decode_tagged(layout: Layout, body: dict, buf, pos: int, path: str, trace: FieldNode | None,
                  records: str) -> int:
    """A KIP-482 tagged-field section: known tags decode into ``body``, unknown ones are kept as bytes."""
    start = pos
    section_path = _join(path, "_tagged_fields")
    node = trace.add(FieldNode(section_path, "_tagged_fields", "tagged_fields", start)) if trace is not None else None
    try:
        try:
            count, pos = read_uvarint(buf, pos)
        except WireError as exc:
            _fail(str(exc), section_path, exc.offset, buf, start, node)
        if count > MAX_TAGGED_FIELDS or count > len(buf) - pos:
            _fail(f"tagged field count {count} is implausible", section_path, start, buf, start, node)
        if node is not None:
            if count == 0:
                node.end, node.value = pos, {}
            else:
                node.add(FieldNode(section_path + "#count", "count", "uvarint", start, pos, count))
        for slot in layout.tagged:
            body.setdefault(slot.name, slot.default)
        previous = -1
        for _ in range(count):
            pos, previous = _decode_one_tag(layout, body, buf, pos, path, node, records, previous)
    except Malformed:
        if node is not None:
            _close(node, buf)
        raise
    if node is not None:
        node.end = pos
    return pos


def _decode_one_tag(layout: Layout, body: dict, buf, pos: int, path: str, node, records: str, previous: int):
    start = pos
    try:
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
    except WireError as exc:
        _fail(str(exc), _join(path, "_tagged_fields"), exc.offset, buf, start, node)
    if size > len(buf) - pos:
        _fail(f"tagged field {tag} size {size} exceeds the {len(buf) - pos} bytes left",
              _join(path, "_tagged_fields"), start, buf, start, node)
    slot = layout.by_tag.get(tag)
    name = slot.name if slot else f"_tag_{tag}"
    field_path = _join(path, name)
    entry = None
    if node is not None:
        entry = node.add(FieldNode(field_path, name, "tagged_field", start, pos + size))
        entry.add(FieldNode(field_path + "#tag", "tag", "tag_header", start, pos, tag))
        if tag <= previous:
            entry.diagnostics.append(f"tag {tag} follows tag {previous}: tags must ascend")
    end = pos + size
    if slot is None:
        body.setdefault(UNKNOWN_TAGS, {})[tag] = bytes(buf[pos:end])
        if entry is not None:
            entry.add(FieldNode(field_path + "#data", "data", "bytes", pos, end, bytes(buf[pos:end]),
                                diagnostics=[f"unknown tag {tag}"]))
        return end, tag
    value, got = decode_slot(slot, memoryview(buf)[:end], pos, field_path, entry, records)
    if got != end:
        _fail(f"tagged field {slot.name} used {got - pos} of its {size} bytes", field_path, pos, buf, start, entry)
    body[slot.name] = value
    return end, tag


# ---------------------------------------------------------------- encoding

def encode_struct(layout: Layout, body: dict, out: bytearray, path: str, version: int, what: str) -> None:
    if not isinstance(body, dict):
        raise EncodeError(f"{path or what}: expected a dict, got {type(body).__name__}")
    check_fields(layout, body, path, version, what)
    for slot in layout.slots:
        encode_slot(slot, body.get(slot.name, slot.default), out, _join(path, slot.name), version, what)
    if layout.flexible:
        encode_tagged(layout, body, out, path, version, what)


def check_fields(layout: Layout, body: dict, path: str, version: int, what: str) -> None:
    """Kafka's rule for fields a version lacks: a default value or an ignorable field is dropped silently,
    anything else cannot be expressed in this version and is an error naming the field."""
    if body.keys() <= layout.names:
        return
    for name in body.keys() - layout.names:
        if name == UNKNOWN_TAGS and layout.flexible:
            continue
        field = layout.absent.get(name)
        if field is None:
            raise EncodeError(f"{what} v{version} has no field {_join(path, name)!r}")
        value = body[name]
        if field.ignorable or value is None or value == field.default_value(field.versions[0]):
            continue
        raise EncodeError(f"{_join(path, name)} exists only in {what} v{field.versions[0]}-v{field.versions[1]},"
                          f" not v{version} (value {value!r})")


def encode_slot(slot: Slot, value, out: bytearray, path: str, version: int, what: str) -> None:
    try:
        if slot.kind == "scalar":
            if value is None and not slot.nullable:
                raise ValueError("null is not allowed")
            WRITERS[slot.wire_type](out, value)
        elif slot.kind == "array":
            encode_array(slot, value, out, path, version, what)
        elif slot.kind == "struct":
            if slot.nullable:
                write_int8(out, -1 if value is None else 1)
                if value is None:
                    return
            encode_struct(slot.layout, value, out, path, version, what)
        else:
            data = RECORDS_HOOKS["batches"].encode(value)
            write_length(slot, out, -1 if data is None else len(data))
            if data is not None:
                out += data
    except EncodeError:
        raise
    except Exception as exc:  # struct.error, ValueError, TypeError, AttributeError from bad values
        raise EncodeError(f"{what} v{version} field {path} ({slot.wire_type}): {exc} (value {value!r:.80})") from None


def write_length(slot: Slot, out: bytearray, length: int) -> None:
    if slot.compact:
        write_uvarint(out, length + 1)
    else:
        out += length.to_bytes(4, "big", signed=True)


def encode_array(slot: Slot, value, out: bytearray, path: str, version: int, what: str) -> None:
    if value is None:
        if not slot.nullable:
            raise ValueError("null is not allowed")
        write_length(slot, out, -1)
        return
    write_length(slot, out, len(value))
    if slot.layout is not None:
        for i, item in enumerate(value):
            encode_struct(slot.layout, item, out, f"{path}[{i}]", version, what)
    else:
        writer = WRITERS[slot.item_wire_type]
        for item in value:
            writer(out, item)


def encode_tagged(layout: Layout, body: dict, out: bytearray, path: str, version: int, what: str) -> None:
    """Tagged fields are written only when they differ from their default, in ascending tag order."""
    entries: list[tuple[int, bytes]] = []
    for slot in layout.tagged:
        value = body.get(slot.name, slot.default)
        if value == slot.default:
            continue
        data = bytearray()
        encode_slot(slot, value, data, _join(path, slot.name), version, what)
        entries.append((slot.tag, bytes(data)))
    for tag, data in (body.get(UNKNOWN_TAGS) or {}).items():
        entries.append((int(tag), bytes(data)))
    entries.sort(key=lambda entry: entry[0])
    write_uvarint(out, len(entries))
    for tag, data in entries:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


Decoder = Callable[..., tuple[dict, int]]
