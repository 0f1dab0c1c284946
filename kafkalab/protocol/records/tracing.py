"""A thin helper that turns decoder positions into :class:`~kafkalab.protocol.tree.FieldNode` trees.

The record decoders take an optional :class:`Trace`; with ``None`` they build objects only (the fast path),
with a Trace they also append a node per field. Positions passed in are local to the buffer being decoded;
the Trace adds ``base`` so frame-level nodes carry frame offsets, while a trace opened with
:meth:`Trace.inflated` restarts at 0 in the coordinate space of the decompressed buffer.
"""
from __future__ import annotations

from typing import Any

from ..tree import FieldNode


class Trace:
    """Appends nodes under ``node``; ``path`` is the dotted path of ``node``, ``base`` the offset shift."""

    __slots__ = ("node", "path", "base", "budget")

    def __init__(self, node: FieldNode, path: str, base: int = 0, budget=None) -> None:
        self.node = node
        self.path = path
        self.base = base
        self.budget = budget            # a limits.Budget whose ``nodes`` every added node spends, or None

    def exhausted(self) -> bool:
        """Whether the node budget is spent (callers then cover the rest with one "budget exceeded" leaf)."""
        return self.budget is not None and self.budget.nodes <= 0

    def leaf(self, name: str, wire_type: str, start: int, end: int, value: Any = None,
             diagnostics: list[str] | None = None) -> FieldNode:
        if self.budget is not None:
            self.budget.nodes -= 1
        return self.node.add(FieldNode(f"{self.path}.{name}", name, wire_type, self.base + start,
                                       self.base + end, value, diagnostics=diagnostics))

    def child(self, name: str, wire_type: str, start: int, path: str | None = None) -> Trace:
        """Open a container node; close it with :meth:`end` once its last child is added."""
        path = f"{self.path}.{name}" if path is None else path
        node = self.node.add(FieldNode(path, name, wire_type, self.base + start))
        if self.budget is not None:
            self.budget.nodes -= 1
        return Trace(node, path, self.base, self.budget)

    def end(self, end: int) -> None:
        self.node.end = self.base + end

    def note(self, message: str) -> None:
        self.node.diagnostics.append(message)

    def inflated(self, buffer: bytes, codec: str, start: int, end: int) -> Trace:
        """The ``inflated`` child of a ``deflated`` node: a new coordinate space over ``buffer``."""
        node = self.node.add(FieldNode(f"{self.path}.inflated", "inflated", "inflated",
                                       self.base + start, self.base + end,
                                       value=f"{len(buffer)} bytes inflated with {codec}; child offsets are "
                                             f"relative to this buffer", buffer=buffer))
        return Trace(node, node.path, 0, self.budget)

    def rest(self, name: str, start: int, end: int, message: str | None = None) -> None:
        """Cover bytes that could not be decoded (so every byte still lies under exactly one leaf)."""
        if end > start:
            self.leaf(name, "bytes", start, end, None, [message] if message else None)
        elif message:
            self.note(message)
