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
"""
from __future__ import annotations

from operator import itemgetter
from typing import Callable

from kafkalab.protocol import ProtocolError, decode_request, decode_response
from kafkalab.protocol.codec.layout import Layout
from kafkalab.protocol.tree import FieldNode
from kafkalab.protocol.wire import FIXED

from .facts import body_layout, reads
from .frame import SUMMARY_FIELDS

NUMBERS = {name: width for name, (_, width) in FIXED.items() if name != "bool"}
TEXTS = frozenset({"string", "nullable_string", "compact_string", "compact_nullable_string"})
BLOBS = frozenset({"bytes", "nullable_bytes", "compact_bytes", "compact_nullable_bytes"})


class Shape:
    """A layout of one message version at one length, as ranges of the frame's *region* (the bytes after
    the header for a request, after the correlation id for a response), given as positions in the frame.
    ``memo`` holds the descriptions remembered for frames of this shape, by :meth:`key`."""

    __slots__ = ("structure", "_structure", "_key", "_texts", "memo")

    def __init__(self, raw: bytes, start: int, structure: list[tuple[int, int]], unread: list[tuple[int, int]],
                 texts: list[tuple[int, int]]) -> None:
        self._structure = _getter(structure)
        self.structure = self._structure(raw)
        self._key = _getter(_complement(unread, start, len(raw)))
        self._texts = tuple(slice(a, b) for a, b in texts)
        self.memo: dict = {}

    def fits(self, raw: bytes) -> bool:
        """Whether the frame ``raw`` (of this shape's length and region start) has this layout: its structure
        bytes are the same."""
        return self._structure(raw) == self.structure

    def key(self, raw: bytes):
        """The region of ``raw`` without the values a description does not read (every other byte,
        structure included, so equal keys mean equal layouts); None where a left-out text is not ASCII."""
        for text in self._texts:
            if not raw[text].isascii():
                return None
        return self._key(raw)


def learn(raw: bytes, start: int, kind: str, api_key: int, api_version: int) -> Shape | None:
    """The shape of the frame ``raw`` whose region starts at ``start``; None where the annotated decode
    reports anything or does not end its header there."""
    try:
        if kind == "request":
            message = decode_request(raw, annotate=True)
        else:
            message = decode_response(raw, api_key, api_version, annotate=True)
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
    body = [node for node in tree.children if node.name not in ("size", "header")]
    _visit(body, layout, shown, values, unread, texts)
    if any(a < start or b > len(raw) for a, b in values):
        return None
    return Shape(raw, start, _complement(values, start, len(raw)), unread, texts)


def _visit(nodes: list[FieldNode], layout: Layout, shown: frozenset, values: list, unread: list,
           texts: list) -> None:
    """Collect the value ranges of one struct level (and below): all in ``values``, those no description
    reads in ``unread``, the texts among those in ``texts``."""
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
        elif slot.layout is not None:
            if slot.kind == "struct":
                _visit(node.children, slot.layout, shown, values, unread, texts)
            else:
                for item in node.children:
                    if item.wire_type == "struct":
                        _visit(item.children, slot.layout, shown, values, unread, texts)


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
