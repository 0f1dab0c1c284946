"""Generating decoders: Python source that reads one message version from bytes in straight-line code.

Owns: :func:`build_decoder`, turning a :class:`~.layout.Layout` into a function
``decode(buf, pos, records) -> (body, end)``. Runs of fixed-width fields become one ``struct.unpack_from``
call (which also reads the byte after the run when that byte starts a compact length or the tag count),
arrays of fixed-width ints one call for the whole array, items of one repeating shape one call per item,
nested structs are inlined into the loop that reads them, each struct becomes one dict literal.
The generated code never reports errors itself: it only has to be right on valid input and *fail* on
invalid input (every length is checked against the bytes left before it is used); see :mod:`.compiler`.
"""
from __future__ import annotations

import struct
from typing import Callable

from ..wire import MAX_ARRAY_LENGTH
from .codegen import Emitter, compile_function, default_expr, fixed_runs
from .layout import FIXED_WIDTH, Layout, Slot
from .runtime import ARRAY_UNPACKERS, PEEKING_UNPACKERS, SMALL_ARRAY, STRUCT_CODES, int_arrays, shaped


def _starts_with_compact_byte(slot: Slot) -> bool:
    """True when ``slot`` begins with a compact length (strings, bytes, arrays, records in flexible versions);
    a run of fixed-width slots (a list) never does."""
    return isinstance(slot, Slot) and slot.compact and (slot.kind in ("array", "records") or
                             (slot.kind == "scalar" and slot.wire_type not in STRUCT_CODES))



class _DecoderBuilder:
    def __init__(self) -> None:
        self.em = Emitter()
        self.counted: list[str] | None = None   # count variables of int arrays, while a shaped item is emitted
        self.depth = 0               # structs being emitted, the message itself included
        self.peek = False            # may the slot being emitted also read the byte after it?
        self.peeked: str | None = None   # the variable holding that byte, if it did

    def struct(self, layout: Layout, ind: int) -> str:
        """Emit code reading one struct; returns the expression building its dict.

        A run of fixed-width fields also reads the single byte after it when that byte starts a compact
        length or the tagged-field count (the common one-byte case), saving a separate index operation."""
        self.depth += 1
        try:
            return self._struct(layout, ind)
        finally:
            self.depth -= 1

    def _struct(self, layout: Layout, ind: int) -> str:
        em = self.em
        entries: list[str] = []
        items = list(fixed_runs(layout.slots))
        prefetched = None
        for index, (kind, item) in enumerate(items):
            if kind == "run":
                following = items[index + 1][1] if index + 1 < len(items) else None
                peek = _starts_with_compact_byte(following) if following is not None else layout.flexible
                # a record set's length is two or three bytes: read them too where two bytes surely follow
                # (this item's tag byte, then its parent's)
                wide = peek and following is not None and following.kind == "records" and self.depth >= 2
                fmt = ">" + "".join(STRUCT_CODES[s.wire_type] for s in item) + ("BBB" if wide else "B" if peek else "")
                unpack = em.const(struct.Struct(fmt).unpack_from, "S")
                names = [em.var("v") for _ in item]
                prefetched = em.var("p") if peek else None
                targets = names + ([prefetched] if peek else []) + (["q1", "q2"] if wide else [])
                em.emit(ind, f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {unpack}(buf, pos)")
                em.emit(ind, f"pos += {struct.calcsize(fmt) - (2 if wide else 0)}")
                if wide:
                    prefetched += ":wide"
                for slot, name in zip(item, names):
                    value = f"_uuid({name})" if slot.wire_type == "uuid" else name
                    entries.append(f"{slot.name!r}: {value}")
            else:
                following = items[index + 1][1] if index + 1 < len(items) else None
                self.peek = _starts_with_compact_byte(following) if following is not None else layout.flexible
                entries.append(f"{item.name!r}: {self.slot(item, ind, prefetched)}")
                prefetched, self.peeked, self.peek = self.peeked, None, False
        if not layout.flexible:
            return "{" + ", ".join(entries) + "}"
        if not layout.tagged:
            count = prefetched or "buf[pos]"
            em.emit(ind, f"if {count}: _reject()")
            if not prefetched:
                em.emit(ind, "pos += 1")
            return "{" + ", ".join(entries) + "}"
        return self.tagged(layout, ind, prefetched, entries)

    def tagged(self, layout: Layout, ind: int, prefetched: str | None, entries: list[str]) -> str:
        """A struct with known tagged fields: the dict is built with their defaults in place, and only a
        non-empty tagged section (rare) goes to the interpreter, which overwrites the tags it finds."""
        em = self.em
        holder = em.var("t")
        defaults = [f"{s.name!r}: {default_expr(em, s.default)}" for s in layout.tagged]
        em.emit(ind, f"{holder} = {{{', '.join(entries + defaults)}}}")
        lay = em.const(layout, "L")
        em.emit(ind, f"if {prefetched or 'buf[pos]'}:")
        start = "pos - 1" if prefetched else "pos"
        em.emit(ind + 1, f"pos = _decode_tagged({lay}, {holder}, buf, {start}, '', None, records)")
        if not prefetched:
            em.emit(ind, "else:")
            em.emit(ind + 1, "pos += 1")
        return holder

    def length(self, ind: int, var: str, compact: bool, classic: str, prefetched: str | None = None) -> None:
        """Emit reading a length into ``var`` (-1 for null), compact or classic int16/int32."""
        em = self.em
        if compact:
            wide = prefetched is not None and prefetched.endswith(":wide")
            if prefetched:
                em.emit(ind, f"{var} = {prefetched.split(':')[0]} - 1")
            else:
                em.emit(ind, f"{var} = buf[pos] - 1")
                em.emit(ind, "pos += 1")
            em.emit(ind, f"if {var} >= 127:")
            self.long_length(ind + 1, var, wide)
        else:
            em.emit(ind, f"{var} = {classic}(buf, pos)[0]")
            em.emit(ind, f"pos += {2 if classic == '_i16' else 4}")

    def long_length(self, ind: int, var: str, wide: bool = False) -> None:
        """A compact length whose first byte (already read, ``var`` = byte - 1) has the continuation bit: two-
        and three-byte varints (lengths up to 2 MiB: record sets, long strings) are read inline, longer
        ones by ``_uvarint``. An IndexError on a short buffer sends the caller to the interpreter. ``wide``:
        the two bytes after the first were read already (as ``q1``, ``q2``)."""
        em = self.em
        b, c = ("q1", "q2") if wide else ("b", "c")
        if not wide:
            em.emit(ind, "b = buf[pos]")
        em.emit(ind, f"if {b} < 128:")
        em.emit(ind + 1, f"{var} += ({b} << 7) - 128")
        em.emit(ind + 1, "pos += 1")
        em.emit(ind, f"elif {c if wide else '(c := buf[pos + 1])'} < 128:")
        em.emit(ind + 1, f"{var} += (({b} - 128) << 7) + ({c} << 14) - 128")
        em.emit(ind + 1, "pos += 2")
        em.emit(ind, "else:")
        em.emit(ind + 1, f"{var}, pos = _uvarint(buf, pos - 1)")
        em.emit(ind + 1, f"{var} -= 1")

    def slot(self, slot: Slot, ind: int, prefetched: str | None = None) -> str:
        em = self.em
        out = em.var("v")
        if slot.kind == "scalar":
            self.blob(slot.wire_type, slot.compact, slot.nullable, ind, out, prefetched)
        elif slot.kind == "records":
            n = em.var("n")
            self.length(ind, n, slot.compact, "_i32", prefetched)
            em.emit(ind, f"if 0 <= {n} <= blen - pos:")
            em.emit(ind + 1, f"{out} = view[pos:pos + {n}]")
            em.emit(ind + 1, f"if rec: {out} = rec({out})")
            em.emit(ind + 1, f"pos += {n}")
            em.emit(ind, f"elif {n} == -1: {out} = None")
            em.emit(ind, "else: _reject()")
        elif slot.kind == "struct":
            if slot.nullable:
                em.emit(ind, "marker = buf[pos]")
                em.emit(ind, "pos += 1")
                em.emit(ind, "if marker >= 128:")
                em.emit(ind + 1, f"{out} = None")
                em.emit(ind, "else:")
                expr = self.struct(slot.layout, ind + 1)
                em.emit(ind + 1, f"{out} = {expr}")
            else:
                expr = self.struct(slot.layout, ind)
                em.emit(ind, f"{out} = {expr}")
        else:
            self.array(slot, ind, out, prefetched)
        return out

    def blob(self, wire_type: str, compact: bool, nullable: bool, ind: int, out: str,
             prefetched: str | None = None) -> None:
        """Strings and bytes (classic or compact, nullable or not)."""
        em = self.em
        n = em.var("n")
        self.length(ind, n, compact, "_i16" if "string" in wire_type else "_i32", prefetched)
        em.emit(ind, f"if {n} >= 0:")
        em.emit(ind + 1, f"end = pos + {n}")
        em.emit(ind + 1, "if end > blen: _reject()")
        if "string" in wire_type:
            em.emit(ind + 1, f"{out} = buf[pos:end].decode()")
        else:
            em.emit(ind + 1, f"{out} = buf[pos:end]")
        em.emit(ind + 1, "pos = end")
        if nullable:
            em.emit(ind, f"elif {n} == -1: {out} = None")
        em.emit(ind, "else: _reject()")

    def small_compact_int_array(self, slot: Slot, ind: int, out: str, prefetched: str | None) -> None:
        """The hot case (replica lists, partition ids): a non-nullable compact array of fixed-width ints whose
        one-byte count is small. One range test picks the fast path; anything else (a multi-byte count, a
        large or negative count) goes to ``_int_array`` which handles or rejects it."""
        em = self.em
        n = em.var("n")
        code, width = STRUCT_CODES[slot.item_wire_type], FIXED_WIDTH[slot.item_wire_type]
        if prefetched:
            em.emit(ind, f"{n} = {prefetched} - 1")
        else:
            em.emit(ind, f"{n} = buf[pos] - 1")
            em.emit(ind, "pos += 1")
        peek, self.peek = self.peek, False
        if self.counted is not None:
            self.counted.append(n)
        em.emit(ind, f"if 0 <= {n} < {SMALL_ARRAY}:")
        if peek:   # the next byte starts a compact length or the tag section: read it in the same call
            self.peeked = em.var("p")
            table = em.const(PEEKING_UNPACKERS[code], "A")
            em.emit(ind + 1, f"*{out}, {self.peeked} = {table}[{n}](buf, pos)")
            em.emit(ind + 1, f"pos += {n} * {width} + 1")
        else:
            table = em.const(ARRAY_UNPACKERS[code], "A")
            em.emit(ind + 1, f"{out} = [*{table}[{n}](buf, pos)]")
            em.emit(ind + 1, f"pos += {n} * {width}")
        em.emit(ind, "else:")
        em.emit(ind + 1, f"{out}, pos = _int_array(buf, pos - 1, {code!r}, {width})")
        if peek:
            em.emit(ind + 1, f"{self.peeked} = buf[pos]")
            em.emit(ind + 1, "pos += 1")

    def shaped_items(self, layout: Layout, ind: int, n: str, append: str) -> None:
        """Items made of fixed-width fields and small int arrays (partitions and their replica lists): once
        one item has been read the ordinary way, the next is read with one struct call of that item's
        shape, and used if its count bytes and tag byte say it has the same shape (else the ordinary way)."""
        em = self.em
        shape, key, unpack, size = (em.var(x) for x in ("shp", "shk", "sun", "ssz"))
        counts = [em.var("c") for _ in int_arrays(layout)]
        lay = em.const(layout, "L")
        em.emit(ind, f"{shape} = {key} = None")
        em.emit(ind, f"for _ in range({n}):")
        body = ind + 1
        em.emit(body, f"if {shape} is not None and pos + {size} <= blen:")
        em.emit(body + 1, "t = " + f"{unpack}(buf, pos)")
        checks = " and ".join(f"t[{c}] == {c}v" for c in counts)
        em.emit(body + 1, f"if {checks} and not t[-1]:")
        entries = [f"{s.name!r}: t[{i}]" for i, s in enumerate(layout.slots) if s.kind == "scalar"]
        bounds = counts[1:] + ["-1"]
        entries += [f"{s.name!r}: [*t[{c} + 1:{end}]]" for s, c, end in zip(int_arrays(layout), counts, bounds)]
        em.emit(body + 2, f"{append}({{{', '.join(entries)}}})")
        em.emit(body + 2, f"pos += {size}")
        em.emit(body + 2, "continue")
        self.counted = []
        expr = self.struct(layout, body)
        seen, self.counted = self.counted, None
        em.emit(body, f"{append}({expr})")
        em.emit(body, f"if ({', '.join(seen)},) != {key}:")
        em.emit(body + 1, f"{key} = ({', '.join(seen)},)")
        em.emit(body + 1, f"{shape} = _shape({lay}, {key})")
        em.emit(body + 1, f"if {shape} is not None: {unpack}, {size}, {', '.join(f'{c}, {c}v' for c in counts)} = {shape}")

    def array(self, slot: Slot, ind: int, out: str, prefetched: str | None = None) -> None:
        em = self.em
        if (slot.compact and not slot.nullable and slot.layout is None
                and slot.item_wire_type in STRUCT_CODES and slot.item_wire_type != "uuid"):
            self.small_compact_int_array(slot, ind, out, prefetched)
            return
        n = em.var("n")
        self.length(ind, n, slot.compact, "_i32", prefetched)
        em.emit(ind, f"if not {n}: {out} = []")           # empty (aborted transactions...): the common case
        em.emit(ind, f"elif {n} < 0:")
        if slot.nullable:
            em.emit(ind + 1, f"if {n} != -1: _reject()")
            em.emit(ind + 1, f"{out} = None")
        else:
            em.emit(ind + 1, "_reject()")
        em.emit(ind, "else:")
        ind += 1
        item = slot.item_wire_type
        if slot.layout is None and item in STRUCT_CODES:
            # no explicit bound check: unpack_from refuses a count the buffer cannot hold before allocating
            width = FIXED_WIDTH[item]
            code = STRUCT_CODES[item]
            if item == "uuid":  # the format string grows with n: bound n first
                em.emit(ind, f"if {n} * 16 > blen - pos: _reject()")
                em.emit(ind, f"{out} = [_uuid(x) for x in _unpack_from('>' + '16s' * {n}, buf, pos)]")
            else:
                table = em.const(ARRAY_UNPACKERS[code], "A")
                em.emit(ind, f"if {n} < {SMALL_ARRAY}: {out} = [*{table}[{n}](buf, pos)]")
                em.emit(ind, f"else: {out} = [*_unpack_from('>%d{code}' % {n}, buf, pos)]")
            em.emit(ind, f"pos += {n} * {width}")
            return
        least = slot.layout.min_size if slot.layout is not None else 1
        em.emit(ind, f"if {n} > {MAX_ARRAY_LENGTH} or {n} * {least} > blen - pos: _reject()")
        em.emit(ind, f"{out} = []")
        append = em.var("app")
        em.emit(ind, f"{append} = {out}.append")
        if slot.layout is not None and shaped(slot.layout):
            self.shaped_items(slot.layout, ind, n, append)
            return
        em.emit(ind, f"for _ in range({n}):")
        if slot.layout is not None:
            expr = self.struct(slot.layout, ind + 1)
            em.emit(ind + 1, f"{append}({expr})")
        else:
            value = em.var("v")
            self.blob(item, slot.compact, False, ind + 1, value)
            em.emit(ind + 1, f"{append}({value})")


def _has_records(layout: Layout) -> bool:
    return any(s.kind == "records" or (s.layout is not None and _has_records(s.layout))
               for s in layout.slots + layout.tagged)


def build_decoder(layout: Layout, name: str = "decode") -> tuple[Callable, str]:
    builder = _DecoderBuilder()
    em = builder.em
    em.emit(0, f"def {name}(buf, pos, records):")
    em.emit(1, "blen = len(buf)")
    if _has_records(layout):
        # RECORDS fields are cut from a view of immutable bytes: zero-copy views of the frame until someone
        # reads them. A bytearray is copied once first (a view would pin a buffer its owner may still resize
        # or overwrite); a memoryview given by the caller is used as is.
        em.emit(1, "view = buf if type(buf) is memoryview else memoryview(buf if type(buf) is bytes else bytes(buf))")
        em.emit(1, "rec = None if records == 'raw' else _HOOKS[records].decode")
    expr = builder.struct(layout, 1)
    em.emit(1, f"return {expr}, pos")
    fn = compile_function(em.lines, em.consts, name)
    fn.many_objects = not _has_records(layout)     # a big body of this kind is many small objects
    return fn, "\n".join(em.lines)
