"""Capture files as streams of link-layer records: classic pcap and pcapng, plain or gzip-compressed.

Owns the file formats and nothing above them: no IP, no TCP, no Kafka. Theory of operation: a
:class:`_Chunks` reader pulls the file in 1 MiB chunks and hands out exact byte counts, so memory stays
constant whatever the file size. :func:`iter_link_records` sniffs the first four bytes (gzip is unwrapped
transparently) and dispatches to the pcap or pcapng walker, each yielding :class:`LinkRecord`s.

Problems with the file itself (empty, unknown magic, a broken first header) raise :class:`CaptureError`.
Problems later on (a record cut short at the end, a corrupt length mid-file) end the walk and are appended to
the ``diagnostics`` list the caller passes in: the packets before them are still delivered. A record whose
recorded (original) length disagrees with the bytes stored keeps the stored bytes and carries a diagnostic.
"""
from __future__ import annotations

import gzip
import io
import os
import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from .errors import CaptureError, NotACaptureFile

CHUNK = 1 << 20
MAX_RECORD = 16 << 20      # no link-layer record is this large; a bigger length means a corrupt file

PCAP_MAGICS = {  # magic as read little-endian -> (byte order, nanosecond resolution)
    0xA1B2C3D4: ("<", False), 0xD4C3B2A1: (">", False),
    0xA1B23C4D: ("<", True), 0x4D3CB2A1: (">", True),
}
PCAPNG_SHB = 0x0A0D0D0A
BYTE_ORDER_MAGIC = 0x1A2B3C4D
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(slots=True)
class LinkRecord:
    """One captured packet as stored: link type, timestamp (ns since the epoch), the bytes stored."""

    index: int                 # 1-based packet number in the file
    ts_ns: int
    linktype: int
    data: bytes
    orig_len: int
    interface: int = 0
    diagnostics: list[str] = field(default_factory=list)


class _Chunks:
    """Exact reads over a binary stream, buffered in large chunks."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._buf = b""
        self._pos = 0
        self.offset = 0          # file offset of the next byte handed out

    def read(self, n: int) -> bytes:
        """Exactly ``n`` bytes, or fewer only at the end of the file."""
        end = self._pos + n
        if end <= len(self._buf):
            out = self._buf[self._pos:end]
            self._pos = end
        else:
            parts = [self._buf[self._pos:]]
            have = len(parts[0])
            while have < n:
                chunk = self._stream.read(max(CHUNK, n - have))
                if not chunk:
                    break
                parts.append(chunk)
                have += len(chunk)
            joined = b"".join(parts)
            out, self._buf, self._pos = joined[:n], joined, min(n, len(joined))
        self.offset += len(out)
        return out


def open_stream(source) -> tuple[BinaryIO, bool]:
    """(binary stream, whether we opened it); gzip is detected by magic and unwrapped."""
    if isinstance(source, (str, os.PathLike)):
        try:
            stream: BinaryIO = open(source, "rb")
        except OSError as exc:
            raise CaptureError(f"cannot open capture {os.fspath(source)!r}: {exc.strerror or exc}") from None
        owned = True
    elif isinstance(source, (bytes, bytearray, memoryview)):
        stream, owned = io.BytesIO(bytes(source)), True
    else:
        stream, owned = source, False
    head = stream.peek(2)[:2] if hasattr(stream, "peek") else b""
    if not hasattr(stream, "peek"):
        stream = io.BufferedReader(stream) if isinstance(stream, io.RawIOBase) else _Peekable(stream)
        head = stream.peek(2)[:2]
    if head == GZIP_MAGIC:
        stream = gzip.GzipFile(fileobj=stream, mode="rb")
    return stream, owned


class _Peekable(io.RawIOBase):
    """Adds ``peek`` to a stream that lacks it (a plain file-like object)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._head = b""

    def peek(self, n: int = 1) -> bytes:
        if len(self._head) < n:
            self._head += self._stream.read(n - len(self._head)) or b""
        return self._head

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            out, self._head = self._head + (self._stream.read() or b""), b""
            return out
        out, self._head = self._head[:n], self._head[n:]
        if len(out) < n:
            out += self._stream.read(n - len(out)) or b""
        return out


def iter_link_records(source, diagnostics: list[str] | None = None) -> Iterator[LinkRecord]:
    """Every record of a pcap or pcapng file (path, bytes or binary file object), in file order."""
    diagnostics = [] if diagnostics is None else diagnostics
    stream, owned = open_stream(source)
    try:
        chunks = _Chunks(stream)
        try:
            head = chunks.read(4)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise CaptureError(f"cannot read capture: {exc}") from None
        if not head:
            raise NotACaptureFile("empty capture file (0 bytes)")
        if len(head) < 4:
            raise NotACaptureFile(f"not a capture file: only {len(head)} bytes")
        magic = struct.unpack("<I", head)[0]
        try:
            if magic in PCAP_MAGICS:
                yield from _pcap_records(chunks, *PCAP_MAGICS[magic], diagnostics)
            elif magic == PCAPNG_SHB:
                yield from _pcapng_records(chunks, head, diagnostics)
            else:
                raise NotACaptureFile(f"not a pcap or pcapng file (magic {head.hex()})")
        except (OSError, EOFError, gzip.BadGzipFile, zlib_error()) as exc:
            diagnostics.append(f"capture file damaged at byte {chunks.offset}: {exc}")
    finally:
        if owned:
            stream.close()


def zlib_error():
    import zlib
    return zlib.error


# ---------------------------------------------------------------- classic pcap

def _pcap_records(chunks: _Chunks, order: str, nanos: bool, diagnostics: list[str]) -> Iterator[LinkRecord]:
    header = chunks.read(20)
    if len(header) < 20:
        raise CaptureError(f"pcap file truncated in its 24-byte header ({4 + len(header)} bytes)")
    major, minor, _, _, snaplen, linktype_field = struct.unpack(order + "HHiIII", header)
    if major != 2:
        raise CaptureError(f"unsupported pcap version {major}.{minor}")
    linktype = linktype_field & 0x0FFFFFFF
    scale = 1 if nanos else 1000
    record_header = struct.Struct(order + "IIII")
    index = 0
    while True:
        start = chunks.offset
        raw = chunks.read(16)
        if not raw:
            return
        index += 1
        if len(raw) < 16:
            diagnostics.append(f"file truncated in the header of packet {index} (byte {start})")
            return
        seconds, fraction, incl_len, orig_len = record_header.unpack(raw)
        if incl_len > MAX_RECORD:
            diagnostics.append(f"packet {index} claims {incl_len} stored bytes at byte {start}: "
                               "corrupt file, reading stopped")
            return
        data = chunks.read(incl_len)
        record = LinkRecord(index, seconds * 1_000_000_000 + fraction * scale, linktype, data, orig_len)
        if len(data) < incl_len:
            record.diagnostics.append(f"file truncated: {len(data)} of {incl_len} bytes of the packet stored")
            diagnostics.append(f"file truncated in packet {index} (byte {start})")
            yield record
            return
        _check_lengths(record, incl_len, snaplen)
        yield record


def _check_lengths(record: LinkRecord, stored: int, snaplen: int) -> None:
    if record.orig_len < stored:
        record.diagnostics.append(f"recorded length {record.orig_len} is less than the {stored} bytes stored "
                                  "(the stored bytes are used)")
    if snaplen and stored > snaplen:
        record.diagnostics.append(f"{stored} bytes stored, more than the snap length {snaplen}")
    if stored == 0:
        record.diagnostics.append("zero-length packet")


# ---------------------------------------------------------------- pcapng

@dataclass(slots=True)
class _Interface:
    linktype: int
    snaplen: int
    units_per_second: int = 1_000_000
    offset_seconds: int = 0

    def ts_ns(self, units: int) -> int:
        """Nanoseconds since the epoch, or 0 when the stamp (one flipped bit away) lies beyond what a
        nanosecond int64 - numpy, Arrow, pandas - can hold: :meth:`ts_problem` says why."""
        ns = self._ns(units)
        return ns if TS_NS_RANGE[0] <= ns <= TS_NS_RANGE[1] else 0

    def ts_problem(self, units: int) -> str | None:
        ns = self._ns(units)
        if TS_NS_RANGE[0] <= ns <= TS_NS_RANGE[1]:
            return None
        return f"timestamp {units} (x 1/{self.units_per_second} s) is out of range: shown as 0 (1970-01-01)"

    def _ns(self, units: int) -> int:
        per = self.units_per_second
        ns = units * 1_000_000_000 // per if per != 1_000_000_000 else units
        return ns + self.offset_seconds * 1_000_000_000


TS_NS_RANGE = (-(1 << 63) + 1, (1 << 63) - 1)      # int64 nanoseconds (-(1 << 63) is pandas' NaT)


def _pcapng_records(chunks: _Chunks, first: bytes, diagnostics: list[str]) -> Iterator[LinkRecord]:
    order = "<"
    interfaces: list[_Interface] = []
    index = 0
    block_type_raw = first
    while True:
        start = chunks.offset - 4
        head = chunks.read(8)
        if len(head) < 8:
            if head or block_type_raw:
                _truncated(diagnostics, start, index, first_block=start == 0)
            return
        if struct.unpack("<I", block_type_raw)[0] == PCAPNG_SHB:
            bom = struct.unpack("<I", head[4:])[0]
            if bom == BYTE_ORDER_MAGIC:
                order = "<"
            elif bom == 0x4D3C2B1A:
                order = ">"
            else:
                raise_or_note(start, diagnostics, f"pcapng section header with a bad byte-order magic "
                                                  f"{head[4:].hex()} at byte {start}")
                return
            interfaces = []
        block_type = struct.unpack(order + "I", block_type_raw)[0]
        total = struct.unpack(order + "I", head[:4])[0]
        if total < 16 or total % 4 or total > MAX_RECORD:
            raise_or_note(start, diagnostics, f"pcapng block at byte {start} has an impossible length {total}")
            return
        body = head[4:] + chunks.read(total - 16)
        trailer = chunks.read(4)
        if len(body) < total - 12 or len(trailer) < 4:
            _truncated(diagnostics, start, index + 1, first_block=start == 0)
            return
        if struct.unpack(order + "I", trailer)[0] != total:
            diagnostics.append(f"pcapng block at byte {start}: trailing length differs from the leading one")
        record = _pcapng_block(block_type, body, order, interfaces, index + 1)
        if record is not None:
            index += 1
            yield record
        block_type_raw = chunks.read(4)
        if not block_type_raw:
            return
        if len(block_type_raw) < 4:
            _truncated(diagnostics, chunks.offset, index + 1, first_block=False)
            return


def raise_or_note(start: int, diagnostics: list[str], message: str) -> None:
    if start == 0:
        raise CaptureError(message)
    diagnostics.append(message + ", reading stopped")


def _truncated(diagnostics: list[str], start: int, index: int, first_block: bool) -> None:
    if first_block:
        raise CaptureError("pcapng file truncated in its first block")
    diagnostics.append(f"file truncated in a block at byte {start} (packet {index} or later)")


def _pcapng_block(block_type: int, body: bytes, order: str, interfaces: list[_Interface],
                  index: int) -> LinkRecord | None:
    """A packet for EPB/SPB/PB blocks; IDBs update ``interfaces``; every other block is skipped."""
    if block_type == 1 and len(body) >= 8:
        linktype, _, snaplen = struct.unpack_from(order + "HHI", body, 0)
        interfaces.append(_interface_options(_Interface(linktype, snaplen), body, 8, order))
        return None
    if block_type == 6 and len(body) >= 20:
        iface, high, low, captured, orig = struct.unpack_from(order + "IIIII", body, 0)
        return _packet(index, interfaces, iface, (high << 32) | low, body, 20, captured, orig)
    if block_type == 2 and len(body) >= 20:
        iface, _, high, low, captured, orig = struct.unpack_from(order + "HHIIII", body, 0)
        return _packet(index, interfaces, iface, (high << 32) | low, body, 20, captured, orig)
    if block_type == 3 and len(body) >= 4:
        orig = struct.unpack_from(order + "I", body, 0)[0]
        snaplen = interfaces[0].snaplen if interfaces else 0
        captured = min(orig, len(body) - 4, snaplen or orig)
        record = _packet(index, interfaces, 0, None, body, 4, captured, orig)
        return record
    return None


def _packet(index: int, interfaces: list[_Interface], iface: int, units: int | None, body: bytes, at: int,
            captured: int, orig: int) -> LinkRecord:
    notes: list[str] = []
    if captured > len(body) - at:
        notes.append(f"block claims {captured} captured bytes, {len(body) - at} present (the stored bytes "
                     "are used)")
        captured = len(body) - at
    if iface < len(interfaces):
        info = interfaces[iface]
    else:
        info = _Interface(-1, 0)
        notes.append(f"packet refers to undeclared interface {iface}")
    if units is not None and info.ts_problem(units):
        notes.append(info.ts_problem(units))
    record = LinkRecord(index, info.ts_ns(units) if units is not None else 0, info.linktype,
                        body[at:at + captured], orig, iface, notes)
    _check_lengths(record, captured, info.snaplen)
    return record


def _interface_options(info: _Interface, body: bytes, pos: int, order: str) -> _Interface:
    """if_tsresol (9) and if_tsoffset (14); every other option is skipped by its length."""
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(order + "HH", body, pos)
        value = body[pos + 4:pos + 4 + length]
        if code == 0 or len(value) < length:
            break
        if code == 9 and length >= 1:
            resol = value[0]
            exponent = resol & 0x7F
            if resol & 0x80:
                info.units_per_second = 1 << min(exponent, 62)
            else:
                info.units_per_second = 10 ** min(exponent, 18)
        elif code == 14 and length >= 8:
            info.offset_seconds = struct.unpack_from(order + "q", value, 0)[0]
        pos += 4 + length + (-length % 4)
    return info
