"""Generating encoders: Python source that writes one message version's body as bytes.

Owns: :func:`build_encoder`, turning a :class:`~.layout.Layout` into ``encode(body) -> bytes``. Runs of
fixed-width fields become one ``struct.pack`` call, arrays of fixed-width ints one call for the whole
array; a body key the version does not know, a null where none is allowed or a value that does not pack
raises, and the caller re-runs the reference interpreter for the precise error (see :mod:`.compiler`).
Known tagged fields go to the interpreter's ``encode_tagged``: rare, and correctness matters more there.
"""
from __future__ import annotations

import struct
from typing import Callable

from .codegen import Emitter, compile_function, default_expr, fixed_runs
from .layout import Layout, Slot
from .runtime import STRUCT_CODES


class _EncoderBuilder:
    def __init__(self, version: int, what: str) -> None:
        self.em = Emitter()
        self.version = version
        self.what = what

    def struct(self, layout: Layout, body: str, ind: int) -> None:
        em = self.em
        names = em.const(layout.names, "N")
        em.emit(ind, f"if not {body}.keys() <= {names}: _reject()")
        get = em.var("g")
        em.emit(ind, f"{get} = {body}.get")
        for kind, item in fixed_runs(layout.slots):
            if kind == "run":
                fmt = ">" + "".join(STRUCT_CODES[s.wire_type] for s in item)
                pack = em.const(struct.Struct(fmt).pack, "P")
                args = []
                for slot in item:
                    value = f"{get}({slot.name!r}, {default_expr(em, slot.default, shared=True)})"
                    args.append(f"{value}.bytes" if slot.wire_type == "uuid" else value)
                em.emit(ind, f"out += {pack}({', '.join(args)})")
            else:
                value = em.var("v")
                em.emit(ind, f"{value} = {get}({item.name!r}, {default_expr(em, item.default, shared=True)})")
                self.slot(item, value, ind)
        if layout.flexible:
            if layout.tagged:
                lay = em.const(layout, "L")
                em.emit(ind, f"_encode_tagged({lay}, {body}, out, '', {self.version}, {self.what!r})")
            else:
                em.emit(ind, "out.append(0)")

    def length(self, compact: bool, classic: str, n: str, ind: int) -> None:
        em = self.em
        if n == "-1":
            em.emit(ind, "out.append(0)" if compact else f"out += {em.const(struct.pack(classic_format(classic), -1), 'B')}")
            return
        if compact:
            em.emit(ind, f"if {n} < 127: out.append({n} + 1)")
            em.emit(ind, f"else: _wuvarint(out, {n} + 1)")
        else:
            em.emit(ind, f"out += {classic}({n})")

    def slot(self, slot: Slot, value: str, ind: int) -> None:
        em = self.em
        if slot.kind == "scalar":
            self.blob(slot.wire_type, slot.compact, slot.nullable, value, ind)
        elif slot.kind == "records":
            data = em.var("d")
            em.emit(ind, f"{data} = _HOOKS['batches'].encode({value})")
            em.emit(ind, f"if {data} is None:")
            self.length(slot.compact, "_pack_i32", "-1", ind + 1)
            em.emit(ind, "else:")
            self.length(slot.compact, "_pack_i32", f"len({data})", ind + 1)
            em.emit(ind + 1, f"out += {data}")
        elif slot.kind == "struct":
            if slot.nullable:
                em.emit(ind, f"if {value} is None:")
                em.emit(ind + 1, "out.append(255)")
                em.emit(ind, "else:")
                em.emit(ind + 1, "out.append(1)")
                self.struct(slot.layout, value, ind + 1)
            else:
                self.struct(slot.layout, value, ind)
        else:
            self.array(slot, value, ind)

    def blob(self, wire_type: str, compact: bool, nullable: bool, value: str, ind: int) -> None:
        em = self.em
        classic = "_pack_i16" if "string" in wire_type else "_pack_i32"
        limit = 0x7FFF if classic == "_pack_i16" and not compact else 0x7FFFFFFE
        em.emit(ind, f"if {value} is None:")
        if nullable:
            self.length(compact, classic, "-1", ind + 1)
        else:
            em.emit(ind + 1, "_reject()")
        em.emit(ind, "else:")
        raw = em.var("r")
        em.emit(ind + 1, f"{raw} = {value}.encode()" if "string" in wire_type else f"{raw} = bytes({value})")
        em.emit(ind + 1, f"if len({raw}) > {limit}: _reject()")
        self.length(compact, classic, f"len({raw})", ind + 1)
        em.emit(ind + 1, f"out += {raw}")

    def array(self, slot: Slot, value: str, ind: int) -> None:
        em = self.em
        em.emit(ind, f"if {value} is None:")
        if slot.nullable:
            self.length(slot.compact, "_pack_i32", "-1", ind + 1)
        else:
            em.emit(ind + 1, "_reject()")
        em.emit(ind, "else:")
        ind += 1
        self.length(slot.compact, "_pack_i32", f"len({value})", ind)
        item = slot.item_wire_type
        if slot.layout is None and item in STRUCT_CODES:
            code = STRUCT_CODES[item]
            if item == "uuid":
                em.emit(ind, f"for x in {value}: out += x.bytes")
            else:
                em.emit(ind, f"out += _struct_pack('>%d{code}' % len({value}), *{value})")
            return
        element = em.var("e")
        em.emit(ind, f"for {element} in {value}:")
        if slot.layout is not None:
            self.struct(slot.layout, element, ind + 1)
        else:
            self.blob(item, slot.compact, False, element, ind + 1)


def classic_format(packer_name: str) -> str:
    return ">h" if packer_name == "_pack_i16" else ">i"


def build_encoder(layout: Layout, version: int, what: str, name: str = "encode") -> tuple[Callable, str]:
    builder = _EncoderBuilder(version, what)
    em = builder.em
    em.emit(0, f"def {name}(body):")
    em.emit(1, "out = bytearray()")
    builder.struct(layout, "body", 1)
    em.emit(1, "return bytes(out)")
    return compile_function(em.lines, em.consts, name), "\n".join(em.lines)
