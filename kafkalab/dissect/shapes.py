"""Frame shapes: which bytes of a frame its description reads, learnt once from an annotated decode.

Owns: :class:`Shape` (one message version's layout at one length: which byte ranges are structure, which
are values, and which values a description reads) and :func:`learn`, which finds them by laying the codec's
annotated tree of one frame alongside the schema's layout of that version.

Why: chatty traffic differs from one frame to the next mostly in offsets. Fetch requests, offset commits
and Produce responses repeat the same topics, partitions and error codes with a new offset each time, so a
memo keyed on whole bytes (:mod:`.repeats`) never sees them again. A shape's key leaves out the values a
description does not read, so those frames are described once per topic and partition instead.

What is read: the fields the facts rules look at (:func:`.facts.reads`: topic names and ids, error codes,
partition numbers, records) and the fields a summary shows (:data:`.frame.SUMMARY_FIELDS`, which include
Produce's ``acks``, the one value that decides whether a response is expected), wherever they are.
Everything else that is a value (fixed-width numbers, the text of strings, the content of bytes fields)
is left out of the key; everything that is not (counts, lengths, tags, booleans, UUIDs, records) stays in.

Why it is exact: the codec's decoders choose their path only from structure bytes (counts, lengths, null
markers, tags), so two frames of one message version and one length whose structure bytes are equal have
every field at the same place; if the values a description reads are equal too, so are the descriptions.
The values left out cannot make a decode fail (any bytes make a number), but for the text of a string,
which must be UTF-8: a shape gives no key (None) for a frame whose left-out text is not ASCII.

Frames carrying records (Produce requests, Fetch responses) are never the same length twice, so they have a
:class:`RecordsShape` instead: a frame with one record set is the bytes before it (a :class:`Shape` of
fixed length), the set's length prefix, the set, and the bytes after it (compared whole). Of the set, a
description reads only how many records its batches hold and whether their CRCs match (see
:mod:`.facts`), so the key has the set's record count where every batch is a whole, regular v2 batch whose
CRC matches (:func:`~kafkalab.protocol.records.recordset.regular_count`), and there is no key otherwise.
"""
from __future__ import annotations

import struct
from operator import itemgetter
from typing import Callable

from kafkalab.protocol import ProtocolError, decode_request, decode_response
from kafkalab.protocol.codec.layout import Layout
from kafkalab.protocol.records.recordset import regular_count
from kafkalab.protocol.tree import FieldNode
from kafkalab.protocol.wire import FIXED, WireError, read_uvarint

from .facts import body_layout, reads
from .frame import SUMMARY_FIELDS

NUMBERS = {name: width for name, (_, width) in FIXED.items() if name != "bool"}
UNFIT = object()        # what ``fitted`` gives for a frame of another layout
TEXTS = frozenset({"string", "nullable_string", "compact_string", "compact_nullable_string"})
BLOBS = frozenset({"bytes", "nullable_bytes", "compact_bytes", "compact_nullable_bytes"})


class Shape:
    """A layout of one message version at one length, as ranges of the frame's *region* (the bytes after
    the header for a request, after the correlation id for a response), given as positions in the frame.
    ``memo`` holds the descriptions remembered for frames of this shape, by ``key``."""

    __slots__ = ("structure", "_structure", "_key", "_texts", "memo", "key")

    def __init__(self, raw: bytes, start: int, structure: list[tuple[int, int]], unread: list[tuple[int, int]],
                 texts: list[tuple[int, int]]) -> None:
        self._structure = _getter(structure)
        self.structure = self._structure(raw)
        self._key = _getter(_complement(unread, start, len(raw)))
        self._texts = tuple(slice(a, b) for a, b in texts)
        self.memo: dict = {}
        #: ``key(raw)``: the region of ``raw`` without the values a description does not read (every other
        #: byte, structure included, so equal keys mean equal layouts); None where a left-out text is not
        #: ASCII. Without such texts, the slicing function itself (a call fewer per frame).
        self.key = self._text_key if self._texts else self._key

    def fits(self, raw: bytes) -> bool:
        """Whether the frame ``raw`` (of this shape's length and region start) has this layout: its structure
        bytes are the same."""
        return self._structure(raw) == self.structure

    def fitted(self, raw: bytes):
        """``key(raw)`` where ``raw`` has this layout (see :meth:`fits`), else ``UNFIT``."""
        return self.key(raw) if self._structure(raw) == self.structure else UNFIT

    def _text_key(self, raw: bytes):
        for text in self._texts:
            if not raw[text].isascii():
                return None
        return self._key(raw)


class RecordsShape:
    """A layout of one message version whose frames carry one record set (see the module docstring): the
    :class:`Shape` of the bytes before it, where its length prefix is (``at``, a compact one in flexible
    versions), and how many bytes follow it. ``memo``: as :attr:`Shape.memo`."""

    __slots__ = ("head", "at", "compact", "tail", "memo")

    def __init__(self, head: Shape, at: int, compact: bool, tail: int) -> None:
        self.head, self.at, self.compact, self.tail = head, at, compact, tail
        self.memo: dict = {}

    def fitted(self, raw: bytes):
        """``key(raw)`` where ``raw`` has this layout and a key (see :meth:`key`), else ``UNFIT``: the key
        computed once (its record count takes a checksum of every batch)."""
        key = self.key(raw)
        return key if key is not None and self.head.fits(raw) else UNFIT

    def key(self, raw: bytes):
        """The head's key (see ``Shape.key``), the bytes after the set and the set's record count; None
        where the frame's lengths do not fit this layout, a left-out text is not ASCII or the set is not
        regular (see :func:`~kafkalab.protocol.records.recordset.regular_count`)."""
        at, n = self.at, len(raw)
        if at + 4 > n:
            return None
        if self.compact:
            try:
                length, begin = read_uvarint(raw, at)
            except WireError:
                return None
            length -= 1
        else:
            length, begin = _I32(raw, at)[0], at + 4
        end = begin + length
        if length < 0 or end + self.tail != n:
            return None
        head = self.head.key(raw)
        if head is None:
            return None
        count = regular_count(memoryview(raw), begin, end)
        if count is None:
            return None
        return head, raw[end:], count


_I32 = struct.Struct(">i").unpack_from


def learn(raw: bytes, start: int, kind: str, api_key: int, api_version: int) -> Shape | None:
    """The shape of the frame ``raw`` whose region starts at ``start``; None where the annotated decode
    reports anything or does not end its header there."""
    ranges = _ranges(raw, start, kind, api_key, api_version)
    if ranges is None:
        return None
    values, unread, texts, _ = ranges
    return Shape(raw, start, _complement(values, start, len(raw)), unread, texts)


def learn_records(raw: bytes, start: int, kind: str, api_key: int, api_version: int,
                  most: int) -> RecordsShape | None:
    """The :class:`RecordsShape` of the frame ``raw`` (region from ``start``), carrying one record set; None
    where it carries none or several, where :func:`learn` would give None, or where the bytes before and
    after the set are more than ``most``."""
    ranges = _ranges(raw, start, kind, api_key, api_version, "raw")     # batches: not read, nor traced
    if ranges is None or len(ranges[3]) != 1:
        return None
    values, unread, texts, (records,) = ranges
    at, tail = records.start, len(raw) - records.end
    length = records.children[0] if records.children else None
    if length is None or length.name != "length" or length.start != at or at - start + tail > most:
        return None
    if any(a < at < b or a < records.end < b or at <= a < records.end for a, b in values):
        return None
    head = [(a, b) for a, b in values if b <= at]
    shape = Shape(raw[:at], start, _complement(head, start, at), [r for r in unread if r[1] <= at],
                  [r for r in texts if r[1] <= at])
    return RecordsShape(shape, at, length.wire_type != "int32", tail)


def _ranges(raw: bytes, start: int, kind: str, api_key: int, api_version: int,
            records: str = "batches") -> tuple | None:
    """(value ranges, unread ones, unread texts, record set nodes) of the frame ``raw`` (see :func:`learn`)."""
    try:
        if kind == "request":
            message = decode_request(raw, annotate=True, records=records)
        else:
            message = decode_response(raw, api_key, api_version, annotate=True, records=records)
    except (ProtocolError, ValueError):
        return None
    tree, layout = message.tree, body_layout(api_key, kind, api_version)
    if message.diagnostics or tree is None or layout is None:
        return None
    header = next((node for node in tree.children if node.name == "header"), None)
    if kind == "request" and (header is None or header.end not in (start, start + 1)):
        return None
    shown = frozenset(SUMMARY_FIELDS.get(api_key, ()) if kind == "request" else ())
    values: list[tuple[int, int]] = []
    unread: list[tuple[int, int]] = []
    texts: list[tuple[int, int]] = []
    records: list[FieldNode] = []
    body = [node for node in tree.children if node.name not in ("size", "header")]
    _visit(body, layout, shown, values, unread, texts, records)
    if any(a < start or b > len(raw) for a, b in values):
        return None
    return values, unread, texts, records


def _visit(nodes: list[FieldNode], layout: Layout, shown: frozenset, values: list, unread: list,
           texts: list, records: list) -> None:
    """Collect the value ranges of one struct level (and below): all in ``values``, those no description
    reads in ``unread``, the texts among those in ``texts``; the record sets' nodes in ``records``."""
    slots = {slot.name: slot for slot in layout.slots}      # tagged fields stay structure
    for node in nodes:
        slot = slots.get(node.name)
        if slot is None:
            continue
        if slot.kind == "scalar":
            span = _value_span(node, slot.wire_type)
            if span is None:
                continue
            values.append(span)
            if not (reads(slot) or slot.name in shown):
                unread.append(span)
                if slot.wire_type in TEXTS:
                    texts.append(span)
        elif slot.kind == "records":
            records.append(node)
        elif slot.layout is not None:
            if slot.kind == "struct":
                _visit(node.children, slot.layout, shown, values, unread, texts, records)
            else:
                for item in node.children:
                    if item.wire_type == "struct":
                        _visit(item.children, slot.layout, shown, values, unread, texts, records)


def _value_span(node: FieldNode, wire_type: str) -> tuple[int, int] | None:
    """The bytes of a scalar leaf that are its value (not its length prefix), or None where it has none."""
    if node.children or node.buffer is not None:
        return None
    width = NUMBERS.get(wire_type)
    if width is not None:
        return (node.start, node.end) if node.end - node.start == width else None
    value = node.value
    if wire_type in TEXTS and value.__class__ is str:
        length = len(value.encode())
    elif wire_type in BLOBS and isinstance(value, (bytes, bytearray, memoryview)):
        length = len(value)
    else:
        return None
    if not length or length > node.end - node.start:
        return None
    return node.end - length, node.end


def _complement(ranges: list[tuple[int, int]], start: int, size: int) -> list[tuple[int, int]]:
    """The ranges of [start, size) outside ``ranges`` (not overlapping)."""
    out, at = [], start
    for a, b in sorted(ranges):
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < size:
        out.append((at, size))
    return out


def _getter(ranges: list[tuple[int, int]]) -> Callable:
    """``raw -> the bytes of these ranges`` (a tuple of slices; comparable and hashable)."""
    if not ranges:
        return _nothing
    return itemgetter(*(slice(a, b) for a, b in ranges))


def _nothing(raw: bytes) -> bytes:
    return b""
