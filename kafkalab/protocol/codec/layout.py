"""Layouts: one message version as it sits on the wire, resolved once from the version-ranged schema.

A schema field knows *when* it exists, is nullable or tagged; a :class:`Slot` knows *how* it is encoded in one
version: its wire type name (``compact_nullable_string``, ``int32``, ``compact_array``...), its default, and
for structs and arrays of structs a child :class:`Layout`. Both the reference interpreter and the compiled
fast path are driven by layouts, so the two can only disagree in how they execute, never in what they read.
"""
from __future__ import annotations

from typing import Any

from ..schema.model import Field, MessageSpec
from ..wire import FIXED, string_wire_type

FIXED_WIDTH = dict((name, width) for name, (_, width) in FIXED.items()) | {"uuid": 16}
UNKNOWN_TAGS = "_unknown_tagged_fields"   # body key that keeps tagged fields the schema does not know


class Slot:
    """A field as encoded in one version of one message."""

    __slots__ = ("field", "name", "kind", "wire_type", "nullable", "default", "item_wire_type", "layout",
                 "tag", "compact")

    def __init__(self, field: Field, version: int, flexible: bool) -> None:
        self.field = field
        self.name = field.name
        self.nullable = field.nullable_in(version)
        self.default = field.default_value(version)
        self.tag = field.tag if field.tagged_in(version) else None
        self.compact = flexible and not field.flexible_never
        self.item_wire_type = None
        self.layout = None
        if field.type == "array":
            self.kind = "array"
            self.wire_type = ("compact_" if self.compact else "") + ("nullable_" if self.nullable else "") + "array"
            if field.items == "struct":
                self.layout = build_layout(field.fields, version, flexible)
            else:
                self.item_wire_type = scalar_wire_type(field.items, self.compact, False)
        elif field.type == "struct":
            self.kind = "struct"
            self.wire_type = "nullable_struct" if self.nullable else "struct"
            self.layout = build_layout(field.fields, version, flexible)
        elif field.type == "records":
            self.kind = "records"
            self.wire_type = "compact_records" if self.compact else "records"
        else:
            self.kind = "scalar"
            self.wire_type = scalar_wire_type(field.type, self.compact, self.nullable)

    def __repr__(self) -> str:
        return f"Slot({self.name}: {self.wire_type})"


def scalar_wire_type(base: str, compact: bool, nullable: bool) -> str:
    if base in ("string", "bytes"):
        return string_wire_type(base, compact, nullable)
    return base


class Layout:
    """The fields of one struct level in one version: regular slots in order, then tagged ones by tag."""

    __slots__ = ("flexible", "slots", "tagged", "by_tag", "names", "absent", "defaults")

    def __init__(self, fields: tuple[Field, ...], version: int, flexible: bool) -> None:
        self.flexible = flexible
        present = [f for f in fields if f.exists_in(version)]
        slots = [Slot(f, version, flexible) for f in present]
        self.slots = [s for s in slots if s.tag is None]
        self.tagged = sorted((s for s in slots if s.tag is not None), key=lambda s: s.tag)
        self.by_tag = {s.tag: s for s in self.tagged}
        self.names = frozenset(s.name for s in slots)
        self.absent = {f.name: f for f in fields if not f.exists_in(version)}
        self.defaults: dict[str, Any] = {s.name: s.default for s in slots}

    @property
    def min_size(self) -> int:
        """Fewest bytes one instance can take: bounds array counts before anything is allocated."""
        size = sum(min_size(s) for s in self.slots)
        return size + (1 if self.flexible else 0)


def min_size(slot: Slot) -> int:
    if slot.kind == "scalar":
        return FIXED_WIDTH.get(slot.wire_type, 1 if slot.compact else 2 if "string" in slot.wire_type else 4)
    if slot.kind == "struct":
        return 1 if slot.nullable else slot.layout.min_size
    return 1 if slot.compact else 4


def build_layout(fields: tuple[Field, ...], version: int, flexible: bool) -> Layout:
    return Layout(fields, version, flexible)


_LAYOUTS: dict[tuple[int, int], tuple[MessageSpec, Layout]] = {}


def message_layout(spec: MessageSpec, version: int) -> Layout:
    """The top-level layout of ``spec`` at ``version``, built once (specs live as long as the process)."""
    key = (id(spec), version)
    hit = _LAYOUTS.get(key)
    if hit is None or hit[0] is not spec:
        hit = _LAYOUTS[key] = (spec, build_layout(spec.fields, version, spec.is_flexible(version)))
    return hit[1]
