"""Annotated field trees: what a traced decode reports about every byte it read.

A :class:`FieldNode` names one span of a frame: its dotted ``path`` (``topic_data[0].name``), the field
``name``, the ``wire_type`` it was read as (``int32``, ``compact_string``, ``array``, ``tagged_fields``...), the
byte span ``start``/``end`` (end exclusive, relative to the first byte of the buffer the node describes:
the frame including its 4-byte size prefix, or, for nodes under an ``inflated`` node, the decompressed
buffer), the decoded ``value`` for leaves, ``children`` for containers and ``diagnostics`` (short strings such
as "malformed: ..." or "CRC mismatch ...").

The invariant every traced decode keeps: the leaves of a tree cover every byte of their buffer exactly once,
in order. Containers (structs, arrays, batches) span their children; length prefixes and counts are leaves of
their own (``name`` ending in ``_length``/``_count``) so the bytes they occupy are accounted for too.
A node whose ``buffer`` is not None starts a new coordinate space (used for inflated record data): its
children's offsets are relative to that buffer, not to the frame.
"""
from __future__ import annotations

from typing import Any, Iterator


class FieldNode:
    """One annotated span of a Kafka frame (see the module docstring for the invariant)."""

    __slots__ = ("path", "name", "wire_type", "start", "end", "value", "children", "diagnostics", "buffer")

    def __init__(self, path: str, name: str, wire_type: str, start: int, end: int = -1,
                 value: Any = None, children: list[FieldNode] | None = None,
                 diagnostics: list[str] | None = None, buffer: bytes | None = None) -> None:
        self.path = path
        self.name = name
        self.wire_type = wire_type
        self.start = start
        self.end = start if end < 0 else end
        self.value = value
        self.children = [] if children is None else children
        self.diagnostics = [] if diagnostics is None else diagnostics
        self.buffer = buffer

    def add(self, child: FieldNode) -> FieldNode:
        """Append ``child`` and return it (handy while building a tree)."""
        self.children.append(child)
        return child

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def malformed(self) -> bool:
        return any(d.startswith("malformed") for d in self.diagnostics)

    def walk(self) -> Iterator[FieldNode]:
        """Depth-first, parents before children."""
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self) -> Iterator[FieldNode]:
        """Leaves in byte order, staying in this node's coordinate space. A node whose children all live in
        another buffer (compressed bytes, whose inflated form is a child) is a leaf of this space."""
        for child in self.children:
            if child.buffer is not None:
                continue
            if child.children and any(c.buffer is None for c in child.children):
                yield from child.leaves()
            else:
                yield child

    def find(self, path: str) -> FieldNode | None:
        """The node whose dotted path is ``path``, or None."""
        for node in self.walk():
            if node.path == path:
                return node
        return None

    def deepest_at(self, offset: int) -> FieldNode | None:
        """The deepest node in this coordinate space whose span covers ``offset``."""
        if not (self.start <= offset < self.end):
            return None
        for child in self.children:
            if child.buffer is None:
                hit = child.deepest_at(offset)
                if hit is not None:
                    return hit
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "name": self.name, "wire_type": self.wire_type,
                               "start": self.start, "end": self.end}
        if not self.children:
            out["value"] = self.value
        else:
            out["children"] = [c.to_dict() for c in self.children]
        if self.diagnostics:
            out["diagnostics"] = list(self.diagnostics)
        if self.buffer is not None:
            out["inflated_length"] = len(self.buffer)
        return out

    def __repr__(self) -> str:
        return f"FieldNode({self.path!r}, {self.wire_type}, {self.start}..{self.end})"
