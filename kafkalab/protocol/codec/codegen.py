"""What the decoder and encoder generators share: the source accumulator and the run-time namespace.

Owns: :class:`Emitter` (lines of generated source and the constants they name), grouping fixed-width
slots into one struct call (:func:`fixed_runs`), spelling a default value as source (:func:`default_expr`),
and exec'ing finished source against :data:`RUNTIME`, the names generated code may call. Kept apart from
:mod:`.decoder_codegen` and :mod:`.encoder_codegen` so the two generators agree on those names by sharing
one table rather than each keeping its own. The helpers behind the names live in :mod:`.runtime`.
"""
from __future__ import annotations

import copy
import struct
import uuid
from typing import Any, Callable

from ..wire import read_uvarint, write_uvarint
from .interpreter import decode_tagged, encode_tagged
from .layout import UNKNOWN_TAGS, Slot
from .record_hooks import RECORDS_HOOKS
from .runtime import STRUCT_CODES, int_array, make_uuid, reject, shape


class Emitter:
    """Accumulates generated source lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.counter = 0

    def const(self, value: Any, prefix: str = "K") -> str:
        self.counter += 1
        name = f"{prefix}{self.counter}"
        self.consts[name] = value
        return name

    def var(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def fixed_runs(slots: list[Slot]):
    """Group consecutive fixed-width scalar slots so each group is one struct call."""
    run: list[Slot] = []
    for slot in slots:
        if slot.kind == "scalar" and slot.wire_type in STRUCT_CODES:
            run.append(slot)
            continue
        if run:
            yield "run", run
            run = []
        yield "one", slot
    if run:
        yield "run", run


def default_expr(em: Emitter, value: Any, shared: bool = False) -> str:
    """Source for a default value; mutable defaults are built fresh each time unless ``shared`` (the encoder
    only reads them): a dict or list literal of plain values costs a fraction of a ``deepcopy``."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, uuid.UUID) or shared:
        return em.const(value, "U")
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return "{" + ", ".join(f"{k!r}: {default_expr(em, v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(default_expr(em, v) for v in value) + "]"
    return f"_deepcopy({em.const(value, 'D')})"



RUNTIME = {
    "_reject": reject, "_uvarint": read_uvarint, "_int_array": int_array, "_wuvarint": write_uvarint,
    "_uuid": make_uuid,
    "_shape": shape,
    "_deepcopy": copy.deepcopy, "_unpack_from": struct.unpack_from, "_decode_tagged": decode_tagged,
    "_encode_tagged": encode_tagged, "_HOOKS": RECORDS_HOOKS, "_UNKNOWN": UNKNOWN_TAGS,
    "_i16": struct.Struct(">h").unpack_from, "_i32": struct.Struct(">i").unpack_from,
    "_pack_i16": struct.Struct(">h").pack, "_pack_i32": struct.Struct(">i").pack,
    "_struct_pack": struct.pack,
}


def compile_function(source_lines: list[str], consts: dict, name: str) -> Callable:
    """Exec generated source defining ``name`` with its constants and :data:`RUNTIME` in scope."""
    namespace = dict(consts)
    namespace.update(RUNTIME)
    exec(compile("\n".join(source_lines), f"<kafkalab:{name}>", "exec"), namespace)
    return namespace[name]
