"""Start-up recovery of one segment: which stored batches can be proven intact, and which bytes cannot.

Owns: the scan of a segment file's bytes. Must not know: the index, files, logging (the partition log acts on
the verdict). A batch is kept only when everything about it is proven: its CRC (v2: CRC-32C over attributes..
end; legacy: CRC-32 over magic..end) and, since a v2 CRC does not cover the base offset, length or magic, a
sane header (:func:`~kafkalab.protocol.records.batch.header_problem`) and offsets that fit in between its
neighbours'. Damage in the middle does not cost what follows it: the scan first tries the damaged batch's
own length (a flipped byte inside a batch leaves the next one where it was), else looks byte by byte for the
next provable batch. Only the tail after the last provable batch is cut off, as Kafka does with a torn write.

Theory: pass one collects the batches that prove intact by CRC and header, in file order, resynchronising
after damage (a candidate position is tested cheaply - magic byte, length in range - before a CRC). Pass two
keeps the longest run of them whose offsets strictly increase (patience sorting, n log n): a base offset
damaged outside the CRC stands out against its neighbours.
"""
from __future__ import annotations

import bisect
import struct
import zlib
from typing import NamedTuple

import crc32c

from kafkalab.protocol.records.batch import header_problem

_PREFIX = struct.Struct(">qi")
_V2_LAST_DELTA = struct.Struct(">i")
_LEGACY_MIN = {0: 14, 1: 22}


class Kept(NamedTuple):
    position: int
    size: int
    base_offset: int
    last_offset: int
    magic: int


class Damaged(NamedTuple):
    start: int
    end: int
    reason: str


class Scan(NamedTuple):
    kept: list[Kept]
    damaged: list[Damaged]     # stretches between kept batches that prove nothing (skipped, not deleted)
    tail: int                  # where the last provable batch ends: what follows is cut off


def scan_segment(data, after_offset: int = -1) -> Scan:
    """Every provable batch of ``data`` (offsets above ``after_offset`` and increasing), the damaged
    stretches between them and where the provable part ends."""
    candidates, unproven = _candidates(data)
    kept = _longest_increasing(candidates, after_offset)
    chosen = {k.position for k in kept}
    reasons = dict(unproven)
    reasons.update((c.position, "offsets out of order with the batches around it")
                   for c in candidates if c.position not in chosen)
    damaged: list[Damaged] = []
    pos = 0
    tail = kept[-1].position + kept[-1].size if kept else 0
    for k in kept + [Kept(tail, 0, 0, 0, 0)]:
        if k.position > pos:
            damaged.append(Damaged(pos, k.position, reasons.get(pos, "unreadable bytes")))
        pos = k.position + k.size
    return Scan(kept, damaged, tail)


def _candidates(data) -> tuple[list[Kept], list[tuple[int, str]]]:
    """Batches whose CRC and header prove them intact, in file order (offsets not yet judged), and where
    unprovable stretches start and why."""
    candidates: list[Kept] = []
    unproven: list[tuple[int, str]] = []
    pos, end = 0, len(data)
    while pos < end:
        entry, reason = _prove(data, pos)
        if entry is not None:
            candidates.append(entry)
            pos += entry.size
            continue
        unproven.append((pos, reason))
        found = _resync(data, pos)
        if found is None:
            break
        pos = found
    return candidates, unproven


def _longest_increasing(candidates: list[Kept], after_offset: int) -> list[Kept]:
    """The longest run of candidates (in file order) whose offset ranges strictly increase: a batch whose
    base offset (outside the CRC) was damaged stands out against its neighbours and is left out."""
    tails: list[int] = []           # tails[k]: the smallest last offset ending a run of k + 1 batches
    ends: list[int] = []            # index of the candidate that ends that run
    parent: list[int] = []
    for i, c in enumerate(candidates):
        if c.base_offset <= after_offset:
            parent.append(-1)
            continue
        k = bisect.bisect_left(tails, c.base_offset)
        parent.append(ends[k - 1] if k else -1)
        if k == len(tails):
            tails.append(c.last_offset)
            ends.append(i)
        elif c.last_offset < tails[k]:
            tails[k], ends[k] = c.last_offset, i
    run, i = [], ends[-1] if ends else -1
    while i >= 0:
        run.append(candidates[i])
        i = parent[i]
    return run[::-1]


def _prove(data, pos: int) -> tuple[Kept | None, str]:
    """(the batch at ``pos`` if it proves intact, else why not)."""
    if len(data) - pos < 17:
        return None, "a torn entry (shorter than a header)"
    base, length = _PREFIX.unpack_from(data, pos)
    magic, size = data[pos + 16], 12 + length
    if length < _LEGACY_MIN[0] or pos + size > len(data):
        return None, f"impossible length {length}"
    if magic == 2:
        problem = header_problem(data, pos, size)
        if problem:
            return None, problem
        if struct.unpack_from(">I", data, pos + 17)[0] != crc32c.crc32c(memoryview(data)[pos + 21:pos + size]):
            return None, "CRC-32C mismatch"
        last_offset = base + _V2_LAST_DELTA.unpack_from(data, pos + 23)[0]
    elif magic in (0, 1):
        if length < _LEGACY_MIN[magic] or struct.unpack_from(">I", data, pos + 12)[0] != \
                zlib.crc32(memoryview(data)[pos + 16:pos + size]):
            return None, "legacy message CRC mismatch"
        last_offset = base
    else:
        return None, f"unknown magic {magic}"
    return Kept(pos, size, base, last_offset, magic), ""


def _resync(data, pos: int) -> int | None:
    """Where the next provable batch after the damaged one at ``pos`` starts, or None."""
    if len(data) - pos >= 12:
        guess = pos + 12 + _PREFIX.unpack_from(data, pos)[1]
        if pos < guess < len(data) and _prove(data, guess)[0] is not None:
            return guess
    for candidate in range(pos + 1, len(data) - 16):
        if data[candidate + 16] in (0, 1, 2) and _prove(data, candidate)[0] is not None:
            return candidate
    return None
