"""The packet index: a capture file's TCP segments as columns, built over the mapped file with numpy.

Owns the first stage of the capture pipeline (bytes → packet index → streams → frames → exchanges → rows):
where every TCP segment of a classic pcap or pcapng file is, and what its headers say, as arrays: time,
addresses and ports, sequence and acknowledgement numbers, flags, and the payload's offset and length in the
file. Nothing is copied out of the file; later stages slice payloads from the same buffer.

Theory of operation: the walk from record to record is a small loop (each record's length says where the next
begins: pcapng block lengths, pcap stored lengths); everything else is vectorised over all records at once.
The link-layer header is skipped by a per-packet offset (Ethernet, Linux cooked SLL/SLL2, BSD loopback, raw
IP), then the IPv4 and TCP headers are read with fancy indexing into the file's bytes. Records this does not
cover (IPv6, VLAN tags, IP fragments, snapped or damaged packets, other link types) are listed in
:attr:`PacketIndex.others` with what the general :class:`~.layers.PacketDecoder` needs to read them, so the
index never has to be right about the rare cases. Must not know TCP streams or Kafka.

A distributed reader indexes one byte range of a file in place (``start``/``stop``, see
:mod:`kafkalab.pcap.split`): the file's head is read as usual, then the walk starts on the range's first record
and stops at the first record at or after ``stop``, and :attr:`PacketIndex.end` says where, which is how the
reader proves that its range meets the next one without walking the records a second time.
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .fast import LINKS
from .files import MAX_RECORD, PCAP_MAGICS, PCAPNG_SHB, _Interface, _interface_options

_SHB_BYTES = b"\x0a\x0d\x0d\x0a"
WINDOW = 32 << 20            # file bytes looked at before their pages are let go (see release)


class NotIndexable(Exception):
    """The file is not one the index reads (gzip, damaged, obsolete pcapng blocks): read it packet by packet."""


@dataclass
class Records:
    """Every packet record of a file: where its data starts, its time, stored and original lengths, snap
    length and link type (int64 arrays, one entry per record, in file order)."""

    start: np.ndarray
    ts_ns: np.ndarray
    stored: np.ndarray
    original: np.ndarray
    snaplen: np.ndarray
    linktype: np.ndarray
    end: int = -1                # the file position after the last record walked (where the walk stopped)


@dataclass
class PacketIndex:
    """The TCP segments the index read, in file order (``number`` is the record's 1-based number), and the
    numbers of the records left to the general decoder (``others``)."""

    number: np.ndarray
    ts_ns: np.ndarray
    src: np.ndarray              # IPv4 address as an integer
    sport: np.ndarray
    dst: np.ndarray
    dport: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    flags: np.ndarray
    payload_start: np.ndarray    # offset in the file
    payload_length: np.ndarray
    payload_head: np.ndarray     # the payload's first 4 bytes as a big-endian integer (-1: fewer than 4)
    records: Records
    others: np.ndarray           # 0-based record positions the general decoder must read
    record_base: int = 0         # the file position of ``records``' first record (a window's)

    def __len__(self) -> int:
        return len(self.number)

    @property
    def end(self) -> int:
        """Where the walk over the records stopped: the end of the file, or for a range (``stop``) the first
        record start at or after it (see :func:`kafkalab.pcap.split.walk_end`)."""
        return self.records.end


def pcap_records(data) -> Records:
    """The records of a classic pcap file."""
    return _concat(list(_pcap_windows(data)))


def _pcap_windows(data, window: int | None = None, start: int | None = None,
                  stop: int | None = None) -> Iterator[Records]:
    """The records of a classic pcap file, a window of about ``window`` (default ``WINDOW``) file bytes at a
    time: all of them, or those whose header starts in ``[start, stop)`` (``start`` a record boundary)."""
    window = window or WINDOW
    order, nanos = PCAP_MAGICS[struct.unpack_from("<I", data)[0]]
    major, _, _, _, snaplen, linktype = struct.unpack_from(order + "HHiIII", data, 4)
    if major != 2:
        raise NotIndexable("pcap version")
    unpack = struct.Struct(order + "I").unpack_from        # a record's stored length (at +8): the walk
    n = len(data)
    pos, stop = start or 24, n if stop is None else min(stop, n)
    while pos + 16 <= n and pos < stop:
        offsets: list[int] = []
        add = offsets.append
        last = min(n - 16, pos + window - 16, stop - 1)     # where the window's last record header may start
        while pos <= last:                      # (lengths are checked below, all at once)
            pos += 16
            add(pos)
            pos += unpack(data, pos - 8)[0]
        begin = np.array(offsets, dtype=np.int64)
        seconds, fraction, stored, original = (_gather(data, begin + k, 4, order) for k in (-16, -12, -8, -4))
        if len(stored) and int(stored.max()) > MAX_RECORD:
            raise NotIndexable("corrupt record length")
        if pos > n or (pos < stop and pos + 16 > n and pos != n):    # truncated: the general reader reports it
            raise NotIndexable("truncated")
        count = len(begin)
        yield Records(begin, seconds * 1_000_000_000 + fraction * (1 if nanos else 1000), stored, original,
                      np.full(count, snaplen, dtype=np.int64), np.full(count, linktype & 0x0FFFFFFF, dtype=np.int64),
                      pos)
    if pos != n and pos < stop:
        raise NotIndexable("truncated")
    if start is not None and pos == start:     # an empty range still says where its walk stopped
        empty = np.zeros(0, dtype=np.int64)
        yield Records(empty, empty, empty, empty, empty, empty, pos)


def _pcapng_windows(data, window: int | None = None, start: int | None = None,
                    stop: int | None = None) -> Iterator[Records]:
    """The records of a pcapng file, a window of about ``window`` (default ``WINDOW``) file bytes at a time:
    all of them, or those whose block starts in ``[start, stop)`` (``start`` a block boundary after the
    file's head, which is read first: the section header and the interface blocks right after it). A range
    holding a section header or interface block is not indexed: its packets may need what the head does not
    say (:func:`kafkalab.pcap.split.walk_end` finds that such a range does not land)."""
    window = window or WINDOW
    order = "<"
    interfaces: list[_Interface] = []
    columns: list[list[int]] = [[], [], [], [], [], []]    # start, time, stored, original, snaplen, linktype
    pos, n = 0, len(data)
    stop = n if stop is None else min(stop, n)
    in_head = start is not None
    limit = (start or 0) + window
    while pos < stop:
        if pos + 12 > n:
            raise NotIndexable("truncated")
        if in_head and pos and struct.unpack_from(order + "I", data, pos)[0] != 1:
            in_head, pos = False, start         # the head read: on to the range
            continue
        if data[pos:pos + 4] == _SHB_BYTES:                     # section header: byte order, new interfaces
            if pos and start is not None:
                raise NotIndexable("a section header inside a range")
            bom = data[pos + 8:pos + 12]
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else ""
            if not order:
                raise NotIndexable("byte order")
            interfaces = []
        kind, total = struct.unpack_from(order + "II", data, pos)
        if total < 12 or total % 4 or total > MAX_RECORD or pos + total > n or \
                struct.unpack_from(order + "I", data, pos + total - 4)[0] != total:
            raise NotIndexable("damaged block")
        if kind == 1:
            if start is not None and not in_head:
                raise NotIndexable("an interface block inside a range")
            if total < 20:
                raise NotIndexable("damaged interface block")
            linktype, _, snaplen = struct.unpack_from(order + "HHI", data, pos + 8)
            interfaces.append(_interface_options(_Interface(linktype, snaplen), data[pos + 8:pos + total - 4], 8,
                                                 order))
        elif kind == 6:
            if total < 32:
                raise NotIndexable("damaged packet block")
            iface, high, low, captured, orig = struct.unpack_from(order + "IIIII", data, pos + 8)
            if iface >= len(interfaces) or captured > total - 32:
                raise NotIndexable("damaged packet block")
            info = interfaces[iface]
            if info.ts_problem((high << 32) | low):     # the general reader annotates such a packet
                raise NotIndexable("timestamp out of range")
            for column, value in zip(columns, (pos + 28, info.ts_ns((high << 32) | low), captured, orig,
                                               info.snaplen, info.linktype)):
                column.append(value)
        elif kind in (2, 3):                    # obsolete and simple packet blocks
            raise NotIndexable("obsolete packet blocks")
        pos += total
        if in_head and pos >= stop:             # nothing but the head before the range's end
            in_head, pos = False, max(pos, start)
        if pos >= limit:
            yield Records(*(np.array(column, dtype=np.int64) for column in columns), end=pos)
            columns = [[], [], [], [], [], []]
            limit = pos + window
    yield Records(*(np.array(column, dtype=np.int64) for column in columns), end=pos)


def _concat(parts: list[Records]) -> Records:
    return Records(*(_joined([getattr(part, name) for part in parts])
                     for name in ("start", "ts_ns", "stored", "original", "snaplen", "linktype")),
                   end=parts[-1].end if parts else -1)


def _record_windows(data, window: int | None = None, start: int | None = None,
                    stop: int | None = None) -> Iterator[Records]:
    if len(data) < 24:
        raise NotIndexable("too short")
    magic = struct.unpack_from("<I", data)[0]
    if magic in PCAP_MAGICS:
        return _pcap_windows(data, window, start, stop)
    if magic == PCAPNG_SHB:
        return _pcapng_windows(data, window, start, stop)
    raise NotIndexable("not a pcap or pcapng file")


def packet_index(data, start: int | None = None, stop: int | None = None) -> PacketIndex:
    """The packet index of a whole capture file held in ``data`` (bytes or a read-only map), or of the
    records whose header starts in ``[start, stop)`` of it (``start`` a record boundary; numbers count from
    the range's first record; :attr:`PacketIndex.end` says where the walk stopped): the windows of
    :func:`index_windows` joined."""
    windows = list(index_windows(data, start=start, stop=stop))
    records = _concat([w.records for w in windows])
    columns = [_joined([getattr(w, name) for w in windows]) for name in _COLUMNS]
    return PacketIndex(*columns, records=records, others=_joined([w.others for w in windows]))


_COLUMNS = ("number", "ts_ns", "src", "sport", "dst", "dport", "seq", "ack", "flags", "payload_start",
            "payload_length", "payload_head")


def index_windows(data, window: int | None = None, start: int | None = None,
                  stop: int | None = None) -> Iterator[PacketIndex]:
    """The packet index of a capture file, a window of about ``window`` (default ``WINDOW``) file bytes at a
    time (record
    numbers and ``others`` count from the file's start), each window's pages let go once read: the
    index of a capture larger than memory is built window by window, and later stages may work on one
    window at a time."""
    base = 0
    for records in _record_windows(data, window, start, stop):
        keep, columns = _index(data, records, base)
        fast = np.zeros(len(records.start), dtype=bool)
        fast[keep - base] = True
        local = keep - base
        window = PacketIndex(keep + 1, records.ts_ns[local], *columns, records=records,
                             others=np.nonzero(~fast)[0] + base, record_base=base)
        base += len(records.start)
        if len(records.start):
            release(data, int(records.start[-1]))
        yield window


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def release(data, upto: int) -> None:
    """Let the pages of a mapped file before ``upto`` go (they stay in the page cache, not in this process's
    memory): a read touches every page once, and without this a capture's whole size counts as memory."""
    if isinstance(data, mmap.mmap) and upto >= mmap.PAGESIZE:
        data.madvise(mmap.MADV_DONTNEED, 0, upto - upto % mmap.PAGESIZE)


def _index(data, records: Records, base: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The TCP segments among ``records`` (numbered from ``base`` in the file): (their positions, [src, sport,
    dst, dport, seq, ack, flags, payload start, payload length, payload head])."""
    u8 = np.frombuffer(data, dtype=np.uint8)
    start, stored = records.start, records.stored
    link_ip, link_ok = _link_layers(u8, records)
    ip = start + link_ip
    room = link_ok & (ip + 40 <= start + stored)            # an IPv4 and a TCP header fit in what is stored
    ip = np.where(room, ip, 0)                              # (other records' bytes are never looked at)
    version_ihl = _gather(u8, ip, 1)
    ihl = (version_ihl & 0x0F) * 4
    total = _gather(u8, ip + 2, 2)
    tcp = ip + ihl
    tcp_safe = np.where(room, tcp, 0)
    header_length = (_gather(u8, np.minimum(tcp_safe + 12, len(u8) - 1), 1) >> 4) * 4
    fast = (room & (stored == records.original) & ((stored <= records.snaplen) | (records.snaplen == 0))
            & (version_ihl >> 4 == 4) & (ihl >= 20) & (_gather(u8, ip + 9, 1) == 6)
            & ((_gather(u8, ip + 6, 2) & 0x3FFF) == 0) & (total >= ihl + 20) & (ip + total <= start + stored)
            & (tcp + 20 <= ip + total) & (header_length >= 20) & (tcp + header_length <= ip + total))
    keep = np.nonzero(fast)[0]
    ip, tcp, total, header_length = ip[keep], tcp[keep], total[keep], header_length[keep]
    payload_start = tcp + header_length
    payload_length = ip + total - payload_start
    long_enough = payload_length >= 4
    head = np.where(long_enough, _gather(u8, np.where(long_enough, payload_start, 0), 4), -1)
    return keep + base, [
        _gather(u8, ip + 12, 4), _gather(u8, tcp, 2), _gather(u8, ip + 16, 4), _gather(u8, tcp + 2, 2),
        _gather(u8, tcp + 4, 4), _gather(u8, tcp + 8, 4), _gather(u8, tcp + 13, 1) & 0x3F, payload_start,
        payload_length, head]


def _link_layers(u8: np.ndarray, records: Records) -> tuple[np.ndarray, np.ndarray]:
    """Per record: the offset of the IP header in its data, and whether the link layer says IPv4 there."""
    linktypes, stored = records.linktype, records.stored
    offset = np.zeros(len(linktypes), dtype=np.int64)
    ok = np.zeros(len(linktypes), dtype=bool)
    for linktype in np.unique(linktypes).tolist():
        if linktype not in LINKS:
            continue
        check_at, accepted, ip_offset = LINKS[linktype]
        mine = linktypes == linktype
        offset[mine] = ip_offset
        start = np.where(mine & (stored >= ip_offset + 1), records.start, 0)
        if accepted:
            width = len(accepted[0])
            value = _gather(u8, start + check_at, width, ">")
            good = np.isin(value, [int.from_bytes(a, "big") for a in accepted])
        else:                                   # raw IP: the version nibble says
            good = (_gather(u8, start, 1) >> 4) == 4
        ok |= mine & good & (stored >= ip_offset + 40)
    return offset, ok


def _gather(buf, at: np.ndarray, width: int, order: str = ">") -> np.ndarray:
    """The ``width``-byte unsigned integers at offsets ``at`` of ``buf`` (unaligned), as int64."""
    u8 = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
    if width in (2, 4) and len(u8) >= width and u8.strides == (1,):
        # the bytes seen as ``width``-byte integers starting at every offset: one gather instead of one per byte
        words = np.ndarray((len(u8) - width + 1,), dtype=f"{order}u{width}", buffer=u8, strides=(1,))
        return words[at].astype(np.int64)
    shifts = range(8 * (width - 1), -1, -8) if order == ">" else range(0, 8 * width, 8)
    value = np.zeros(len(at), dtype=np.int64)
    for j, shift in enumerate(shifts):
        value |= u8[at + j].astype(np.int64) << shift
    return value
