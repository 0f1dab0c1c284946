"""Record sets: the ``records`` bytes of Produce/Fetch, a run of batches/messages of any magic.

Every entry starts with offset int64 + length int32, and the magic byte sits at the same place (byte 16) in
all three formats, which is what makes mixed-magic sets walkable. A Fetch response may cut the last entry
anywhere (the broker fills up to max_bytes): that tail is a normal *partial batch*, reported with
``partial=True`` and no diagnostic on the object. Anything else odd becomes a diagnostic; nothing raises.
"""
from __future__ import annotations

import struct
from typing import Any, Iterator, NamedTuple

from ..tree import FieldNode
from . import batch as v2
from . import checksum
from . import legacy
from .build import from_dict
from .compression import DEFAULT_MAX_INFLATED
from .limits import BUDGET_EXCEEDED, Budget, default_budget
from .model import LegacyMessage, RecordBatch, with_raw
from .tracing import Trace

_PREFIX = struct.Struct(">qi")
LOG_OVERHEAD = 12  # offset + length
_MAGIC_AT = 16


def decode_records(data: bytes | memoryview, *, max_inflated: int | None = None,
                   budget: Budget | None = None) -> list[RecordBatch | LegacyMessage]:
    """Every batch/message in ``data``; never raises on data problems (see ``diagnostics``/``partial``).
    ``budget`` (default: the frame's inside :func:`~.limits.frame_budget`, else a fresh one) caps what all
    batches may cost together."""
    return _walk(data, budget or default_budget(max_inflated), None)


class BatchHead(NamedTuple):
    """A whole, regular v2 batch as a count of records needs it: its header's record count and whether its
    CRC matches (the fields of :class:`RecordBatch` that frame columns and summaries read)."""
    base_offset: int
    record_count: int
    crc_ok: bool
    partial: bool = False


def batch_heads(data: bytes | memoryview) -> list:
    """The batches of ``data`` as :class:`BatchHead` objects when every entry is a whole v2 batch with room
    for its header (headers read and CRCs checked, nothing inflated, no object per record); otherwise exactly
    :func:`decode_records`, so that every irregular set has the reference decoder's objects and notes.

    Why: counting the records of a capture's every Produce and Fetch costs a header and a checksum per
    batch; a batch object per batch (its bytes copied, its records ready to decode) costs several times that."""
    if not data:
        return []
    heads: list = []
    buf = data if isinstance(data, (bytes, memoryview)) else memoryview(data)
    return heads if _regular(buf, 0, len(buf), heads) is not None else decode_records(data)


def regular_count(buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> int | None:
    """How many records the batches of ``buf[pos:end]`` hold, where every entry is a whole v2 batch with
    room for its header and a CRC that matches (the count :func:`batch_heads` gives such a set); None for
    any other set. ``buf``: a memoryview where it is large (CRCs are computed over slices of it).

    Why: a frame description reads nothing else of such a set, so frames whose other bytes are alike can
    share one description (see ``kafkalab.dissect.shapes.RecordsShape``)."""
    return _regular(buf, pos, len(buf) if end is None else end, None)


def _regular(buf, pos: int, end: int, heads: list | None) -> int | None:
    """The record count of ``buf[pos:end]`` (batches' counts above 0) where each entry is a whole v2 batch
    with room for its header, else None; with ``heads``, each batch's :class:`BatchHead` is appended to it,
    else a CRC that does not match gives None too."""
    head_size, crc_start, unpack, crc = v2.HEADER_SIZE, v2.CRC_START, v2.HEADER.unpack_from, checksum.crc32c
    total = 0
    while pos < end:
        if end - pos < head_size or buf[pos + _MAGIC_AT] != 2:
            return None
        head = unpack(buf, pos)
        stop = pos + LOG_OVERHEAD + head[1]
        if head[1] < head_size - LOG_OVERHEAD or stop > end:
            return None
        ok = crc(buf[pos + crc_start:stop]) == head[4]
        if heads is not None:
            heads.append(BatchHead(head[0], head[12], ok))
        elif not ok:
            return None
        if head[12] > 0:
            total += head[12]
        pos = stop
    return total


def trace_records(data: bytes | memoryview, parent: FieldNode, base: int, path: str, *,
                  max_inflated: int | None = None, budget: Budget | None = None) -> None:
    """Append one node per batch to ``parent`` (paths ``{path}[i]...``; offsets shifted by ``base``); past
    the budget's node limit the rest is one "budget exceeded" leaf."""
    budget = budget or default_budget(max_inflated)
    _walk(data, budget, Trace(parent, path, base, budget))


def _walk(data, budget: Budget, tr: Trace | None) -> list[RecordBatch | LegacyMessage]:
    buf = data if isinstance(data, (bytes, bytearray)) else memoryview(data).cast("B")
    out: list[RecordBatch | LegacyMessage] = []
    pos, end, i = 0, len(buf), 0
    while pos < end:
        if tr is not None and tr.exhausted():
            tr.rest("unannotated", pos, end, f"{BUDGET_EXCEEDED}: tree node limit reached, batches {i}.. "
                                             "not annotated")
            break
        btr = tr.child(f"[{i}]", "record_batch", pos, path=f"{tr.path}[{i}]") if tr is not None else None
        entry, size = _entry(buf, pos, end, budget, btr)
        if btr is not None:
            btr.node.name = "message" if isinstance(entry, LegacyMessage) else "record_batch"
            btr.node.wire_type = btr.node.name
            btr.end(pos + size)
        out.append(entry)
        pos += size
        i += 1
    return out


def _entry(buf, pos: int, end: int, budget: Budget, tr: Trace | None):
    """(object, bytes consumed) for the entry at ``pos``."""
    left = end - pos
    if left < LOG_OVERHEAD:
        return _partial(buf, pos, end, None, tr), left
    offset, length = _PREFIX.unpack_from(buf, pos)
    if length < legacy.MIN_MESSAGE_SIZE[0]:
        message = f"malformed: length {length} at byte {pos} is too small for any batch; {left} trailing bytes"
        if tr is not None:
            tr.leaf("base_offset", "int64", pos, pos + 8, offset)
            tr.leaf("batch_length", "int32", pos + 8, pos + 12, length)
            tr.rest("trailing", pos + 12, end, message)
            tr.note(message)
        obj = RecordBatch(base_offset=offset, batch_length=length, magic=-1, crc_ok=False, diagnostics=(message,))
        return with_raw(obj, bytes(buf[pos:end])), left
    if LOG_OVERHEAD + length > left:
        return _partial(buf, pos, end, length, tr), left
    stop = pos + LOG_OVERHEAD + length
    magic = buf[pos + _MAGIC_AT]
    if magic == 2:
        return v2.decode(buf, pos, stop, max_inflated=budget.max_inflated, tr=tr, budget=budget), stop - pos
    if magic in (0, 1):
        return legacy.decode(buf, pos, stop, max_inflated=budget.max_inflated, tr=tr, budget=budget), stop - pos
    message = f"malformed: unknown magic {magic}"
    if tr is not None:
        tr.leaf("base_offset", "int64", pos, pos + 8, offset)
        tr.leaf("batch_length", "int32", pos + 8, pos + 12, length)
        tr.rest("unparsed", pos + 12, stop, message)
        tr.note(message)
    obj = RecordBatch(base_offset=offset, batch_length=length, magic=magic, crc_ok=False, diagnostics=(message,))
    return with_raw(obj, bytes(buf[pos:stop])), stop - pos


def _partial(buf, pos: int, end: int, length: int | None, tr: Trace | None):
    """The cut-off tail of a Fetch response: typed by its magic when that byte made it in."""
    left = end - pos
    offset = _PREFIX.unpack_from(buf, pos)[0] if left >= 12 else -1
    magic = buf[pos + _MAGIC_AT] if left > _MAGIC_AT else -1
    raw = bytes(buf[pos:end])
    note = f"partial batch ({left} of {'?' if length is None else LOG_OVERHEAD + length} bytes)"
    if tr is not None:
        p = pos
        if left >= 12:
            tr.leaf("base_offset", "int64", pos, pos + 8, offset)
            tr.leaf("batch_length", "int32", pos + 8, pos + 12, length)
            p = pos + 12
        tr.rest("partial", p, end)
        tr.note(note)
    if magic in (0, 1):
        obj = LegacyMessage(offset=offset, message_size=length or 0, magic=magic, partial=True)
    else:
        obj = RecordBatch(base_offset=offset, batch_length=length or 0, magic=magic if magic == 2 else -1,
                          partial=True)
    return with_raw(obj, raw)


# --- encoding ---------------------------------------------------------------------------------------------

def encode_records(value: bytes | list | None) -> bytes | None:
    """Bytes pass through; objects re-encode (byte-identically when decoded and untouched); dicts in the
    ``to_dict()`` form and nested lists (``build_batch`` of an uncompressed legacy set) are accepted."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    parts: list[bytes] = []
    stack = [iter(value if isinstance(value, (list, tuple)) else [value])]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        if isinstance(item, (list, tuple)):
            stack.append(iter(item))
            continue
        if isinstance(item, dict):
            item = from_dict(item)
        parts.append(encode_entry(item))
    return b"".join(parts)


def encode_entry(entry: RecordBatch | LegacyMessage | Any) -> bytes:
    if isinstance(entry, (bytes, bytearray, memoryview)):
        return bytes(entry)
    if entry.raw is not None:
        return entry.raw
    if isinstance(entry, LegacyMessage):
        return legacy.encode(entry)
    return v2.encode(entry)


# --- cheap walks for the broker ---------------------------------------------------------------------------

class BatchBounds(NamedTuple):
    """Where an entry sits in a raw record set and what its header says (nothing inflated)."""
    position: int       # byte position of the entry in the record set
    size: int           # bytes, including the 12-byte offset/length prefix
    base_offset: int    # v2: base offset; legacy: the message (wrapper) offset
    last_offset: int    # v2: base + last_offset_delta; legacy: the message offset (KIP-31: last inner)
    magic: int          # -1 when the tail is too short to tell
    record_count: int | None  # v2: header count; legacy: 1 uncompressed, None for a wrapper
    partial: bool


def iter_batches(data: bytes | bytearray | memoryview) -> Iterator[BatchBounds]:
    """Entry boundaries of a record set without decoding records or checking CRCs. Stops after a partial
    tail or an impossible length."""
    buf = data if isinstance(data, (bytes, bytearray)) else memoryview(data).cast("B")
    pos, end = 0, len(buf)
    while pos < end:
        left = end - pos
        if left < LOG_OVERHEAD + 5:
            yield BatchBounds(pos, left, -1, -1, -1, None, True)
            return
        offset, length = _PREFIX.unpack_from(buf, pos)
        magic = buf[pos + _MAGIC_AT]
        if length < legacy.MIN_MESSAGE_SIZE[0] or LOG_OVERHEAD + length > left:
            yield BatchBounds(pos, left, offset, offset, magic, None, True)
            return
        if magic == 2 and length >= v2.HEADER_SIZE - LOG_OVERHEAD:
            last_delta = struct.unpack_from(">i", buf, pos + 23)[0]
            count = struct.unpack_from(">i", buf, pos + 57)[0]
            yield BatchBounds(pos, LOG_OVERHEAD + length, offset, offset + last_delta, 2, count, False)
        else:
            wrapper = magic in (0, 1) and buf[pos + 17] & legacy.CODEC_MASK
            yield BatchBounds(pos, LOG_OVERHEAD + length, offset, offset, magic, None if wrapper else 1, False)
        pos += LOG_OVERHEAD + length


def assign_offsets(data: bytes | bytearray, first_offset: int, counts: list[int] | None = None) -> tuple[bytes, int]:
    """What a broker does on append: give the entries consecutive offsets from ``first_offset``.

    v2 batches and magic 1 wrappers are patched in place (their offsets sit outside the CRC and, for magic 1
    wrappers, inner offsets are relative - KIP-31). Uncompressed legacy messages likewise. A magic 0 wrapper
    keeps absolute offsets inside the compressed payload, so it is rebuilt (as the broker recompresses it).
    ``counts`` (records per entry, as a validating caller counted them) saves inflating magic 1 wrappers
    again. Returns (new bytes, next offset).
    """
    out = bytearray(data)
    pieces: list[bytes] = []
    nxt = first_offset
    for i, b in enumerate(iter_batches(out)):
        chunk = out[b.position:b.position + b.size]
        if b.partial:
            pieces.append(bytes(chunk))
            break
        if b.magic == 2:
            struct.pack_into(">q", chunk, 0, nxt)
            nxt += b.last_offset - b.base_offset + 1
        elif b.record_count == 1 or b.magic == 1:
            count = b.record_count or (counts[i] if counts else _wrapper_count(chunk))
            struct.pack_into(">q", chunk, 0, nxt + count - 1)
            nxt += count
        else:
            chunk, nxt = _renumber_magic0_wrapper(chunk, nxt)
        pieces.append(bytes(chunk))
    return b"".join(pieces), nxt


def _wrapper_count(chunk) -> int:
    _, count = legacy.validate(chunk, 0, len(chunk), max_inflated=DEFAULT_MAX_INFLATED, max_records=1 << 62)
    return max(count, 1)


def _renumber_magic0_wrapper(chunk, first: int) -> tuple[bytes, int]:
    return legacy.renumber_wrapper(chunk, first, max_inflated=DEFAULT_MAX_INFLATED)
