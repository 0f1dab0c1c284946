"""Record sets read column-wise: every record of many batches as a few numpy arrays and byte buffers.

Why: a table of a capture's records (a million rows and more) cannot afford one Python object per record.
Here the per-batch work (header, CRC-32C over a view, inflating with the codec table's capped decompressors)
is Python, and the per-record work is numpy: record boundaries are found for all batches at once, record
by record in lockstep, then each field (deltas, key, value, headers) is read for all records at once.

Only regular magic-2 batches go this way. Anything else (magic 0/1, control batches, partial tails, a CRC
mismatch, a decompression note, framing that does not add up) is handed back as the object the reference
decoder (:func:`.recordset.decode_records`) makes, so that every irregular case has exactly one reader.
Tests check that both readers agree on every batch the columnar one accepts.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from . import checksum
from .batch import CODEC_MASK, CONTROL_BIT, CRC_START, HEADER, HEADER_SIZE
from .batch_records import MIN_RECORD_SIZE
from .compression import DEFAULT_MAX_INFLATED, Codec, decompress, gzip_into, gzip_size
from .limits import Budget, default_budget
from .recordset import LOG_OVERHEAD, _entry


def decode_entry(raw, *, max_inflated: int = DEFAULT_MAX_INFLATED):
    """The reference decoder's object for one batch's wire bytes (a gathered batch that failed a check)."""
    return _entry(raw, 0, len(raw), default_budget(max_inflated), None)[0]

_PREFIX = struct.Struct(">qi")
_MAGIC_AT = 16
MANY_HEADERS = 16      # past this many headers, records left few in the lockstep are read as objects
LOCKSTEP_MIN = 64      # fewer batches than this left with records to find: walk them one by one
PAD = 64                # zero bytes after the records: reads a little past a record's end stay in the buffer


@dataclass
class Batches:
    """Regular v2 batches gathered for one columnar pass: their headers and their record bytes, inflated,
    one after the other in ``region``; a batch whose bytes repeat an earlier one's of the same pass (a Fetch
    response giving back what a Produce request sent: only the base offset and leader epoch, outside the
    checksum, differ) shares that one's record bytes: it is neither inflated nor copied again."""
    heads: list            # HEADER tuples (base_offset ... record_count)
    tags: list             # the caller's tag for each batch (where it came from)
    starts: list           # where each batch's records start in ``region``
    raws: list             # each batch's wire bytes (a view), to decode as an object if a record fails a check
    region: bytearray      # may be longer than ``size``: a buffer reused from pass to pass
    size: int = 0          # bytes of ``region`` in use
    ends: list = field(default_factory=list)      # where each batch's records end in ``region``
    twins: dict = field(default_factory=dict)     # (CRC, length) -> the first batch of this pass with them

    @classmethod
    def empty(cls, region: bytearray | None = None) -> "Batches":
        """No batches; ``region``: the buffer of an earlier pass to fill again (its pages are already
        mapped: a fresh one per pass costs page faults on every pass)."""
        return cls([], [], [], [], region if region is not None else bytearray())

    def __len__(self) -> int:
        return len(self.heads)

    def append(self, body) -> None:
        end = self.size + len(body)
        self.reserve(len(body))
        self.region[self.size:end] = body
        self.size = end

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more bytes after the ``size`` in use."""
        end = self.size + extra
        if end > len(self.region):
            try:
                self.region += bytes(end - len(self.region))
            except BufferError:          # still viewed by an earlier pass's arrays: start a new buffer
                self.region = self.region[:self.size] + bytes(end - self.size)


def gather(data, tag: Any, into: Batches, *, max_inflated: int = DEFAULT_MAX_INFLATED,
           budget: Budget | None = None) -> list:
    """Walk one record set: regular v2 batches are appended to ``into`` (with ``tag``); every other entry
    is returned, in order, as ``(index in into, object)`` (the object from the reference decoder), so a
    caller can put its rows where that entry was. ``budget`` (pass one to share it between the record sets
    of a frame; default: a fresh one per set, as :func:`.recordset.decode_records`) is spent as the reference
    decoder spends it: a batch claiming more records than it leaves is not inflated but handed to the
    reference decoder, which says "budget exceeded"."""
    buf = data if isinstance(data, (bytes, memoryview)) else memoryview(data)
    if budget is None:
        budget = default_budget(max_inflated)
    others = []
    pos, end = 0, len(buf)
    while pos < end:
        size = _regular(buf, pos, end, tag, into, budget)
        if not size:
            obj, size = _entry(buf, pos, end, budget, None)
            others.append((len(into), obj))
        pos += size
    return others


def _regular(buf, pos: int, end: int, tag, into: Batches, budget: Budget) -> int:
    """Bytes taken by the batch at ``pos`` if it is regular (and then added to ``into``), else 0."""
    if end - pos < HEADER_SIZE or buf[pos + _MAGIC_AT] != 2:
        return 0
    length = _PREFIX.unpack_from(buf, pos)[1]
    stop = pos + LOG_OVERHEAD + length
    if length < HEADER_SIZE - LOG_OVERHEAD or stop > end:
        return 0
    head = HEADER.unpack_from(buf, pos)
    attrs, count = head[5], head[12]
    if attrs & CONTROL_BIT or count < 0 or checksum.crc32c(buf[pos + CRC_START:stop]) != head[4]:
        return 0
    if count > budget.max_records or count > budget.records:
        return 0                      # the reference decoder says "budget exceeded"
    codec = attrs & CODEC_MASK
    twin = _twin(buf, pos, stop, head, into)
    if twin is not None and not (codec and twin[1] - twin[0] > budget.inflate_limit()):
        if codec:
            budget.spend_inflated(twin[1] - twin[0])
        budget.records -= count
        _add(into, head, tag, buf[pos:stop], *twin)
        return stop - pos
    body = buf[pos + HEADER_SIZE:stop]
    placed = _inflated_in_place(body, into, budget) if codec == Codec.GZIP else 0
    if codec and not placed:
        try:
            body, notes = decompress(codec, body, magic=2, limit=budget.inflate_limit())
        except Exception:             # noqa: BLE001 - the reference decoder says what is wrong
            return 0
        if notes:
            return 0
    size = placed or len(body)
    if count * MIN_RECORD_SIZE > size:
        return 0
    if codec:
        budget.spend_inflated(size)
    budget.records -= count
    start = into.size
    if placed:
        into.size += placed
    else:
        into.append(body)
    into.twins.setdefault((head[4], stop - pos), len(into.heads))
    _add(into, head, tag, buf[pos:stop], start, into.size)
    return stop - pos


def _add(into: Batches, head: tuple, tag, raw, start: int, end: int) -> None:
    into.heads.append(head)
    into.tags.append(tag)
    into.raws.append(raw)
    into.starts.append(start)
    into.ends.append(end)


def _twin(buf, pos: int, stop: int, head: tuple, into: Batches) -> tuple[int, int] | None:
    """(start, end) in ``into.region`` of the records of an earlier batch of this pass whose checksummed
    bytes are those of the batch at ``pos`` (compared, not assumed from the CRC), or None."""
    earlier = into.twins.get((head[4], stop - pos))
    if earlier is None or bytes(into.raws[earlier][CRC_START:]) != bytes(buf[pos + CRC_START:stop]):
        return None
    return into.starts[earlier], into.ends[earlier]


def _inflated_in_place(body, into: Batches, budget: Budget) -> int:
    """A gzip batch's records inflated straight into ``into.region`` after the bytes in use (not yet counted
    in): their size, or 0 where the codec table's decompressor must decide (see
    :func:`.compression.gzip_into`)."""
    size = gzip_size(body)
    if not 0 < size <= budget.inflate_limit():
        return 0
    into.reserve(size)
    with memoryview(into.region) as region:
        return size if gzip_into(body, region[into.size:into.size + size]) else 0


@dataclass
class RecordColumns:
    """The records of the batches ``ok`` says were read (the rest failed a check: read them as objects).

    Per kept batch: ``batch`` (index into the gathered batches) and ``count``. Per record, in batch order:
    ``offset_delta``, ``timestamp_delta``, and for key, value and each header key and value a start and a
    length in ``region`` (length -1: null). ``header_counts`` gives each record's number of headers; the
    header arrays list the headers of all records in order."""
    ok: Any
    batch: Any
    count: Any
    offset_delta: Any
    timestamp_delta: Any
    key: tuple
    value: tuple
    header_counts: Any
    header_key: tuple
    header_value: tuple
    region: Any             # numpy uint8 view of the gathered bytes (with PAD zero bytes at the end)


def read_columns(batches: Batches) -> RecordColumns:
    """Read every record of every gathered batch, vectorised over all of them (records that twin batches
    share, see :class:`Batches`, are read once)."""
    import numpy as np

    batches.append(bytes(PAD))
    u = np.frombuffer(batches.region, dtype=np.uint8, count=batches.size)
    nb = len(batches)
    heads = batches.heads
    counts = np.fromiter((h[12] for h in heads), dtype=np.int64, count=nb)
    starts = np.array(batches.starts, dtype=np.int64)
    ends = np.array(batches.ends, dtype=np.int64)
    _, first, which = np.unique(starts, return_index=True, return_inverse=True)   # twins share their records
    walk = _Walk(u, counts[first])
    rec_start, rec_end = walk.boundaries(starts[first], ends[first])
    ts, od, key, value, hcount, hkey, hvalue, hrec = walk.fields(rec_start, rec_end)
    ok = ~walk.bad_batches(len(first))[which]
    if len(first) < nb:                 # each batch takes its records' reads, in batch order (twins: again)
        rec = _ranges(walk.first[which], counts)
        header = _ranges(np.concatenate(([0], np.cumsum(hcount)))[rec], hcount[rec])
        ts, od, hcount = ts[rec], od[rec], hcount[rec]
        key, value = (key[0][rec], key[1][rec]), (value[0][rec], value[1][rec])
        hkey, hvalue = (hkey[0][header], hkey[1][header]), (hvalue[0][header], hvalue[1][header])
        hrec = np.repeat(np.arange(len(rec)), hcount)
    keep = ok[np.repeat(np.arange(nb), counts)]
    idx = np.flatnonzero(ok)
    hkeep = keep[hrec] if len(hrec) else np.zeros(0, dtype=bool)
    return RecordColumns(ok=ok, batch=idx, count=counts[idx], offset_delta=od[keep], timestamp_delta=ts[keep],
                         key=(key[0][keep], key[1][keep]), value=(value[0][keep], value[1][keep]),
                         header_counts=hcount[keep], header_key=(hkey[0][hkeep], hkey[1][hkeep]),
                         header_value=(hvalue[0][hkeep], hvalue[1][hkeep]), region=u)


def _ranges(firsts, counts):
    """The indices ``firsts[i] .. firsts[i] + counts[i] - 1`` for every i, one after the other."""
    import numpy as np

    before = np.concatenate(([0], np.cumsum(counts)))[:-1]
    return np.repeat(firsts - before, counts) + np.arange(int(counts.sum()))


class _Walk:
    """The vectorised reads over ``u``. Each read returns a mask of the positions it found wrong; a record
    with anything wrong marks its batch bad (that batch is then read as an object)."""

    def __init__(self, u, counts) -> None:
        import numpy as np

        self.np = np
        self.u = u
        self.region = memoryview(u)           # fast scalar reads for _walk_one
        self.last = len(u) - 1
        self.counts = counts
        self.first = np.concatenate(([0], np.cumsum(counts)))[:-1]
        self.batch_of = np.repeat(np.arange(len(counts)), counts)
        self.bad = np.zeros(len(self.batch_of), dtype=bool)          # per record
        self.bad_batch = np.zeros(len(counts), dtype=bool)

    def varints(self, p, max_bytes: int):
        """(zigzag-decoded values, sizes, too-long mask) of the varints starting at positions ``p``."""
        np = self.np
        p = np.minimum(p, self.last)
        b = self.u[p]
        value = (b & 0x7F).astype(np.uint64)
        size = np.ones(len(p), dtype=np.int64)
        wrong = np.zeros(len(p), dtype=bool)
        more = np.flatnonzero(b >= 0x80)
        shift = 7
        while len(more):
            if shift >= 7 * max_bytes:
                wrong[more] = True
                break
            b = self.u[np.minimum(p[more] + size[more], self.last)]
            value[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
            size[more] += 1
            more = more[b >= 0x80]
            shift += 7
        signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
        return signed, size, wrong

    def boundaries(self, starts, ends):
        """(start, end) of every record's body (after its length varint), batch by batch in lockstep."""
        np = self.np
        total = len(self.bad)
        rec_start = np.zeros(total, dtype=np.int64)
        rec_end = np.zeros(total, dtype=np.int64)
        pos = starts.copy()
        active = np.flatnonzero(self.counts > 0)
        k = 0
        while len(active) >= LOCKSTEP_MIN:
            p = pos[active]
            length, size, wrong = self.varints(p, 5)
            self.bad_batch[active[wrong | (length < MIN_RECORD_SIZE - 1)]] = True
            at = self.first[active] + k
            rec_start[at] = p + size
            rec_end[at] = p + size + np.maximum(length, 0)
            pos[active] = rec_end[at]
            k += 1
            active = active[self.counts[active] > k]
        for b in active.tolist():       # the few batches with many more records: one by one
            pos[b] = self._walk_one(b, k, int(pos[b]), int(ends[b]), rec_start, rec_end)
        self.bad_batch |= pos != ends
        return rec_start, rec_end

    def _walk_one(self, b: int, k: int, p: int, end: int, rec_start, rec_end) -> int:
        """Record boundaries of batch ``b`` from its ``k``-th record on, in Python (cheaper than a numpy
        step per record when few batches are left); returns where the walk stopped."""
        u = self.region
        starts, ends = [], []
        for _ in range(int(self.counts[b]) - k):
            if p >= end:
                self.bad_batch[b] = True
                break
            value, shift, q = 0, 0, p
            while True:
                byte = u[q]
                q += 1
                value |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80 or shift >= 35:
                    break
            length = (value >> 1) ^ -(value & 1)
            if byte >= 0x80 or length < MIN_RECORD_SIZE - 1:
                self.bad_batch[b] = True
                break
            starts.append(q)
            p = q + length
            ends.append(p)
        at = int(self.first[b]) + k
        rec_start[at:at + len(starts)] = starts
        rec_end[at:at + len(ends)] = ends
        return p

    def fields(self, start, end):
        np = self.np
        ts, size, wrong = self.varints(start + 1, 10)          # after the attributes byte
        p = start + 1 + size
        od, size, wrong2 = self.varints(p, 5)
        p = p + size
        key, p, wrong3 = self.blob(p, end)
        value, p, wrong4 = self.blob(p, end)
        hcount, size, wrong5 = self.varints(p, 5)
        p = p + size
        implausible = (hcount < 0) | (hcount * 2 > end - p)        # a header takes two bytes at least
        self.bad |= wrong | wrong2 | wrong3 | wrong4 | wrong5 | implausible | (p > end)
        hcount = np.where(implausible, 0, hcount)
        hkey, hvalue, hrec = self.headers(p, hcount, end)
        return ts, od, key, value, hcount, hkey, hvalue, hrec

    def blob(self, p, end):
        """((start, length), next position, wrong mask) of varint-length byte strings at ``p`` (-1: null)."""
        np = self.np
        length, size, wrong = self.varints(p, 5)
        data = p + size
        nxt = data + np.maximum(length, 0)
        return (data, length), nxt, wrong | (length < -1) | (nxt > end)

    def headers(self, p, hcount, end):
        """Headers of all records, in record order: key and value (start, length), and each one's record."""
        np = self.np
        n = int(hcount.sum())
        hk_s, hk_l, hv_s, hv_l = (np.zeros(n, dtype=np.int64) for _ in range(4))
        first = np.concatenate(([0], np.cumsum(hcount)))[:-1]
        hrec = np.repeat(np.arange(len(hcount)), hcount)
        pos = p.copy()
        active = np.flatnonzero(hcount > 0)
        j = 0
        while len(active):
            if len(active) < LOCKSTEP_MIN and j >= MANY_HEADERS:     # a few records with very many headers:
                self.bad[active] = True                             # their batches are read as objects
                break
            (ks, kl), q, wrong = self.blob(pos[active], end[active])
            (vs, vl), q, wrong2 = self.blob(q, end[active])
            self.bad[active[wrong | wrong2 | (kl < 0)]] = True       # a header key is never null
            at = first[active] + j
            hk_s[at], hk_l[at], hv_s[at], hv_l[at] = ks, kl, vs, vl
            pos[active] = q
            j += 1
            active = active[hcount[active] > j]
        self.bad |= pos != end
        return (hk_s, hk_l), (hv_s, hv_l), hrec

    def bad_batches(self, nb: int):
        np = self.np
        bad = self.bad_batch.copy()
        if self.bad.any():
            bad[np.unique(self.batch_of[self.bad])] = True
        return bad
