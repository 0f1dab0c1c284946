"""Cutting one capture file into byte ranges that separate readers can walk on their own.

Owns: where a reader that starts at an arbitrary byte of a pcap or pcapng file may begin. A distributed job
cuts a large file into nominal ranges of equal size; each range's reader needs the first *record boundary* at
or after its nominal start, and stops at the boundary at or after its nominal end, so that neighbouring
readers meet exactly and every record belongs to one range: the range its header starts in. Must not know
IP, TCP or Kafka.

Theory of operation. Nothing in a capture marks where a record starts, so a boundary is recognised by what
follows it. A candidate offset is accepted when the record there is plausible and so are the next
:data:`CHAIN` records reached by hopping over their lengths (or the hops end exactly at the end of the file):

* classic pcap: the stored length is within the snap length (or 256 KiB when the header gives none), the
  recorded length is not below it, the sub-second part is below one second, and each timestamp lies within a
  day of the first one's;
* pcapng: blocks start on 4-byte boundaries, have a known type and a length that is a multiple of 4, and
  repeat their length in their last 4 bytes, which makes a false chain very unlikely.

A range's reader is given the file's *head* followed by its own records, as a capture of its own. For classic
pcap the head is the 24-byte file header. For pcapng it is the Section Header Block and the Interface
Description Blocks that directly follow it: packet blocks name their interface by its number in the section,
and the interface gives the link type and timestamp resolution, so every range needs them all. That holds
only when the file is one section whose interfaces are all described up front; a range that meets another
section header or interface block does not land (:func:`walk_end`), and the file is read whole.

A chance chain inside packet data is still possible in principle (a capture stored inside a capture). Callers
detect it: each range's reader resolves its own start (:func:`find_boundary`), walks its records from there
and reports where its walk stopped (:func:`walk_end`, or the packet index's walk over the range); the ranges
of a file hold every record exactly once only when each walk stops exactly on the next range's start
(:func:`ranges_meet`): the first range starts on a proven boundary, and each walk proves the next. Where they
do not, the caller reads the file as one range.
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from .errors import CaptureError
from .files import MAX_RECORD, PCAP_MAGICS, PCAPNG_SHB

CHAIN = 8                           # records after the candidate that must be plausible too
MAX_PCAP_SNAP = 256 * 1024          # the largest stored length when the header's snap length says nothing
DAY_SECONDS = 86_400
WINDOW = 64 * 1024                  # bytes screened at once for candidates (doubling while none is found)
_PCAPNG_TYPES = frozenset({1, 2, 3, 4, 5, 6, 0x0A, 0xBAD, 0x40000BAD, PCAPNG_SHB})


@dataclass(frozen=True, slots=True)
class Layout:
    """What a range reader needs from the head of its file: the format, byte order and where records begin."""
    path: str
    size: int
    format: str                     # "pcap" or "pcapng"
    order: str                      # "<" or ">"
    first_record: int               # offset of the first record after the head (pcap: 24; pcapng: the first
                                    # block after the section header and the interface blocks right after it)
    snaplen: int = 0                # classic pcap only
    nanos: bool = False             # classic pcap only
    interfaces: int = 0             # pcapng only: interface blocks in the head (0: a damaged head)


@dataclass(frozen=True, slots=True)
class ByteRange:
    """Records whose header starts in ``[start, end)`` of ``path``; ``start`` and ``end`` are boundaries."""
    path: str
    start: int
    end: int


def read_layout(path: str | os.PathLike) -> Layout:
    """The file's format and first record; raises :class:`CaptureError` for anything that is not pcap/pcapng."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(24)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise CaptureError(f"cannot open capture {path!r}: {exc.strerror or exc}") from None
    if len(head) < 4:
        raise CaptureError(f"not a capture file: {path!r} has only {len(head)} bytes")
    magic = struct.unpack("<I", head[:4])[0]
    if magic in PCAP_MAGICS:
        if len(head) < 24:
            raise CaptureError(f"pcap file {path!r} truncated in its 24-byte header")
        order, nanos = PCAP_MAGICS[magic]
        snaplen = struct.unpack_from(order + "I", head, 16)[0]
        return Layout(path, size, "pcap", order, 24, snaplen, nanos)
    if magic == PCAPNG_SHB:
        if len(head) < 12:
            raise CaptureError(f"pcapng file {path!r} truncated in its first block")
        order = "<" if head[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        first, interfaces = _pcapng_head(path, order, size)
        return Layout(path, size, "pcapng", order, first, interfaces=interfaces)
    raise CaptureError(f"not a pcap or pcapng file: {path!r} (magic {head[:4].hex()})")


def _pcapng_head(path: str, order: str, size: int) -> tuple[int, int]:
    """Where the head of a pcapng file ends (its section header, then the interface blocks right after it)
    and how many interface blocks it holds; ``(0, 0)`` when those blocks' lengths are not sound."""
    pair = struct.Struct(order + "II")
    with open(path, "rb") as handle:
        position, interfaces = 0, 0
        while position + 12 <= size:
            handle.seek(position)
            block_type, total = pair.unpack(handle.read(8))
            if position and block_type != 1:
                break
            if total < 12 or total % 4 or total > MAX_RECORD or position + total > size:
                return 0, 0
            handle.seek(position + total - 4)
            if struct.unpack(order + "I", handle.read(4))[0] != total:
                return 0, 0
            interfaces += position > 0
            position += total
    return position, interfaces


def plan_ranges(layout: Layout, target_bytes: int) -> list[ByteRange]:
    """Nominal ranges of about ``target_bytes`` covering the file's records (boundaries found later, per range)."""
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    body = layout.size - layout.first_record
    count = max(1, -(-body // target_bytes))
    cuts = [layout.first_record + body * k // count for k in range(count)] + [layout.size]
    return [ByteRange(layout.path, cuts[k], cuts[k + 1]) for k in range(count)]


def find_boundary(data, layout: Layout, offset: int) -> int:
    """The first record boundary at or after ``offset`` (``layout.size`` when there is none before the end)."""
    if offset <= layout.first_record:
        return layout.first_record
    plausible = _pcap_chain if layout.format == "pcap" else _pcapng_chain
    if layout.format == "pcapng":
        offset += -offset % 4
    window = WINDOW
    while offset < layout.size:
        end = min(layout.size, offset + window)
        for candidate in _candidates(data, layout, offset, end):
            if plausible(data, layout, int(candidate)):
                return int(candidate)
        offset, window = end, window * 2
    return layout.size


def walk_end(data, layout: Layout, start: int, nominal_end: int) -> int:
    """Where a reader starting on the boundary ``start`` stops: the first record start at or after
    ``nominal_end``, found by hopping over record lengths (``layout.size`` at the end of the file); ``-1``
    when it cannot get there as a reader of the range would: a record's length is impossible or runs past the
    end of the file (the file is damaged there), or, in pcapng, a section header or interface block lies on
    the way (the range's reader, given only the file's head, would not see it before the packets after it).

    This is the plain walk, one record at a time; :func:`kafkalab.pcap.index.packet_index` over
    ``[start, nominal_end)`` walks the same way while it indexes, and says where it stopped
    (:attr:`~kafkalab.pcap.index.PacketIndex.end`) or refuses the range, so a reader needs this only for a
    range the index refuses."""
    position = start
    while position < nominal_end:
        length = _record_length(data, layout, position)
        if length is None or _redefines_head(data, layout, position):
            return -1
        position += length
    return position if position <= layout.size else -1


def ranges_meet(nominal: list[ByteRange], walked: list[tuple[int, int]]) -> bool:
    """Whether the ranges of one file, each walked by its own reader, hold every record exactly once:
    ``walked[k]`` is range ``k``'s resolved start (:func:`find_boundary` of its nominal start) and where its
    walk stopped (:func:`walk_end`). They do when the first starts where the file's records do, each walk
    stops exactly on the next range's start (so every start is a true boundary, proven by the walk from the
    one before), and the last stops at the end of the file. Otherwise a start was a false boundary (a capture
    carried as packet data), the file is damaged, or a pcapng range redefines the head: read the file whole."""
    if len(nominal) != len(walked) or not walked:
        return False
    starts = [start for start, _ in walked]
    ends = [end for _, end in walked]
    return (starts[0] == nominal[0].start and ends[-1] == nominal[-1].end and min(ends) >= 0
            and all(end == start for end, start in zip(ends, starts[1:])))


def _redefines_head(data, layout: Layout, position: int) -> bool:
    """Whether the pcapng block at ``position`` is a section header or interface block: one the range's
    reader would not see before the range's packets that follow it (they were given the file's head only)."""
    return (layout.format == "pcapng"
            and struct.unpack_from(layout.order + "I", data, position)[0] in (1, PCAPNG_SHB))


def map_file(path: str) -> mmap.mmap | bytes:
    """The file's bytes, mapped read-only (an empty file maps as ``b""``)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


# ---------------------------------------------------------------- the plausibility of a chain of records

def _candidates(data, layout: Layout, start: int, end: int) -> np.ndarray:
    """Offsets in ``[start, end)`` whose first header fields are plausible, screened with numpy at every
    offset at once (pcap: every byte; pcapng: every fourth), so the chain check runs on a handful."""
    reach = min(layout.size, end + 16)
    raw = np.frombuffer(data, dtype=np.uint8, count=reach - start, offset=start).astype(np.uint32)
    dtype_order = layout.order == "<"

    def word(at: int) -> np.ndarray:       # the uint32 at offset + at, for every candidate offset
        count = end - start
        parts = [raw[at + k:at + k + count] for k in range(4)]
        if len(parts[3]) < count:
            parts = [np.pad(p, (0, count - len(p))) for p in parts]
        if dtype_order:
            return parts[0] | parts[1] << 8 | parts[2] << 16 | parts[3] << 24
        return parts[3] | parts[2] << 8 | parts[1] << 16 | parts[0] << 24

    if layout.format == "pcap":
        second = 1_000_000_000 if layout.nanos else 1_000_000
        limit = layout.snaplen if 0 < layout.snaplen <= MAX_RECORD else MAX_PCAP_SNAP
        stored, recorded = word(8), word(12)
        ok = (word(4) < second) & (stored <= limit) & (recorded >= stored)
        return start + np.flatnonzero(ok)
    total = word(4)
    ok = (total >= 12) & (total % 4 == 0) & (total <= MAX_RECORD)
    ok[(np.arange(start, end) % 4) != 0] = False
    return start + np.flatnonzero(ok)


def _record_length(data, layout: Layout, position: int) -> int | None:
    """Bytes from this record's start to the next one's, or None when the header cannot be a record's."""
    if layout.format == "pcap":
        if position + 16 > layout.size:
            return None
        stored = struct.unpack_from(layout.order + "I", data, position + 8)[0]
        return 16 + stored if stored <= MAX_RECORD else None
    if position + 12 > layout.size:
        return None
    total = struct.unpack_from(layout.order + "I", data, position + 4)[0]
    return total if 12 <= total <= MAX_RECORD and total % 4 == 0 else None


def _pcap_chain(data, layout: Layout, position: int) -> bool:
    header = struct.Struct(layout.order + "IIII")
    limit = layout.snaplen if 0 < layout.snaplen <= MAX_RECORD else MAX_PCAP_SNAP
    second = 1_000_000_000 if layout.nanos else 1_000_000
    first_seconds = None
    for _ in range(CHAIN + 1):
        if position == layout.size:
            return True
        if position + 16 > layout.size:
            return False
        seconds, fraction, stored, recorded = header.unpack_from(data, position)
        if stored > limit or recorded < stored or fraction >= second or position + 16 + stored > layout.size:
            return False
        if first_seconds is None:
            first_seconds = seconds
        elif abs(seconds - first_seconds) > DAY_SECONDS:
            return False
        position += 16 + stored
    return True


def _pcapng_chain(data, layout: Layout, position: int) -> bool:
    pair = struct.Struct(layout.order + "II")
    for _ in range(CHAIN + 1):
        if position == layout.size:
            return True
        if position + 12 > layout.size:
            return False
        block_type, total = pair.unpack_from(data, position)
        if (block_type not in _PCAPNG_TYPES or total < 12 or total % 4 or total > MAX_RECORD
                or position + total > layout.size):
            return False
        if struct.unpack_from(layout.order + "I", data, position + total - 4)[0] != total:
            return False
        position += total
    return True


__all__ = ["ByteRange", "Layout", "CHAIN", "find_boundary", "map_file", "plan_ranges", "ranges_meet", "read_layout",
           "walk_end"]
