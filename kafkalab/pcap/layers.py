"""From link-layer bytes to TCP segments: Ethernet (802.1Q/QinQ), Linux SLL/SLL2, BSD null/loop, raw IP;
IPv4 (fragments reassembled) and IPv6 (extension headers, fragments reassembled); the TCP header.

Owns the packet layers below TCP's payload and nothing about streams or Kafka. Theory of operation: a
:class:`PacketDecoder` is fed :class:`~kafkalab.pcap.files.LinkRecord`s and returns a :class:`TcpPacket`
(or None for anything that is not TCP). Each link type is one small function in ``LINK_DECODERS`` returning
(ethertype, offset); each IP version one function. IP fragments are held, bounded, in the decoder until
complete. Short or inconsistent headers never raise: the packet is dropped or carries a diagnostic.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

from .files import LinkRecord

ETH_IPV4, ETH_IPV6 = 0x0800, 0x86DD
VLAN_TAGS = (0x8100, 0x88A8, 0x9100)
PROTO_TCP = 6
IPV6_EXTENSIONS = {0, 43, 60, 135, 139, 140}      # hop-by-hop, routing, dest opts, mobility, HIP, shim6
IPV6_FRAGMENT, IPV6_AH, IPV6_NONE = 44, 51, 59
MAX_FRAGMENT_SETS = 256

FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


@dataclass(slots=True)
class TcpPacket:
    """One TCP segment: addresses as strings, sequence numbers, flags and the payload bytes stored."""

    index: int
    ts_ns: int
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    diagnostics: list[str] = field(default_factory=list)

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9

    @property
    def src_endpoint(self) -> str:
        return endpoint(self.src, self.sport)

    @property
    def dst_endpoint(self) -> str:
        return endpoint(self.dst, self.dport)


def endpoint(ip: str, port: int) -> str:
    """"ip:port", IPv6 addresses in brackets as URLs write them."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


# ---------------------------------------------------------------- link layers: (ethertype, offset) or None

def _ethernet(data: bytes, pos: int = 0):
    if len(data) < pos + 14:
        return None
    ethertype = int.from_bytes(data[pos + 12:pos + 14], "big")
    pos += 14
    while ethertype in VLAN_TAGS and len(data) >= pos + 4:
        ethertype = int.from_bytes(data[pos + 2:pos + 4], "big")
        pos += 4
    return ethertype, pos


def _sll(data: bytes):
    return (int.from_bytes(data[14:16], "big"), 16) if len(data) >= 16 else None


def _sll2(data: bytes):
    return (int.from_bytes(data[0:2], "big"), 20) if len(data) >= 20 else None


def _null(data: bytes, order: str = "<"):
    """BSD loopback: a 4-byte address family in the capturing host's byte order (LOOP: network order)."""
    if len(data) < 4:
        return None
    family = struct.unpack_from(order + "I", data, 0)[0]
    if family > 0xFFFF:            # written on a host of the other byte order
        family = struct.unpack_from(("<" if order == ">" else ">") + "I", data, 0)[0]
    if family == 2:
        return ETH_IPV4, 4
    if family in (10, 24, 28, 30):
        return ETH_IPV6, 4
    return None


def _raw(data: bytes):
    if not data:
        return None
    version = data[0] >> 4
    return ({4: ETH_IPV4, 6: ETH_IPV6}.get(version, -1), 0)


LINK_DECODERS = {
    1: _ethernet, 113: _sll, 276: _sll2, 0: _null, 108: lambda d: _null(d, ">"),
    101: _raw, 12: _raw, 14: _raw, 228: _raw, 229: _raw,
}


class PacketDecoder:
    """Stateful (IP fragments) decoder of link records into TCP packets."""

    def __init__(self) -> None:
        self._fragments: dict[tuple, _FragmentSet] = {}
        self._ip_names: dict[bytes, str] = {}
        self.unknown_linktypes: set[int] = set()

    def decode(self, record: LinkRecord) -> TcpPacket | None:
        link = LINK_DECODERS.get(record.linktype)
        if link is None:
            self.unknown_linktypes.add(record.linktype)
            return None
        found = link(record.data)
        if found is None:
            return None
        ethertype, pos = found
        data = record.data
        if ethertype == ETH_IPV4:
            return self._ipv4(record, data, pos)
        if ethertype == ETH_IPV6:
            return self._ipv6(record, data, pos)
        return None

    def _name(self, raw: bytes) -> str:
        name = self._ip_names.get(raw)
        if name is None:
            name = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
            if len(self._ip_names) < 65536:
                self._ip_names[raw] = name
        return name

    def _ipv4(self, record: LinkRecord, data: bytes, pos: int) -> TcpPacket | None:
        if len(data) < pos + 20 or data[pos] >> 4 != 4:
            return None
        ihl = (data[pos] & 0x0F) * 4
        total, ident, frag = struct.unpack_from(">HHH", data, pos + 2)
        proto = data[pos + 9]
        if proto != PROTO_TCP or ihl < 20:
            return None
        src, dst = data[pos + 12:pos + 16], data[pos + 16:pos + 20]
        end = min(len(data), pos + total) if total >= ihl else len(data)
        payload = data[pos + ihl:end]
        notes: list[str] = []
        if total > len(data) - pos:
            notes.append(f"IPv4 packet cut short: {len(data) - pos} of {total} bytes captured")
        if frag & 0x3FFF:                    # MF set or a non-zero fragment offset
            key = (4, src, dst, ident)
            payload = self._reassemble(key, (frag & 0x1FFF) * 8, bool(frag & 0x2000), payload, notes)
            if payload is None:
                return None
        return self._tcp(record, self._name(src), self._name(dst), payload, notes)

    def _ipv6(self, record: LinkRecord, data: bytes, pos: int) -> TcpPacket | None:
        if len(data) < pos + 40 or data[pos] >> 4 != 6:
            return None
        length = struct.unpack_from(">H", data, pos + 4)[0]
        header = data[pos + 6]
        src, dst = data[pos + 8:pos + 24], data[pos + 24:pos + 40]
        end = min(len(data), pos + 40 + length) if length else len(data)
        notes: list[str] = []
        if length and pos + 40 + length > len(data):
            notes.append(f"IPv6 packet cut short: {len(data) - pos - 40} of {length} payload bytes captured")
        at = pos + 40
        fragment = None
        while header != PROTO_TCP:
            if at + 8 > end:
                return None
            if header in IPV6_EXTENSIONS:
                header, at = data[at], at + (data[at + 1] + 1) * 8
            elif header == IPV6_AH:
                header, at = data[at], at + (data[at + 1] + 2) * 4
            elif header == IPV6_FRAGMENT:
                offset_flags, ident = struct.unpack_from(">HI", data, at + 2)
                fragment = ((offset_flags >> 3) * 8, bool(offset_flags & 1), ident)
                header, at = data[at], at + 8
            else:
                return None                  # no next header, or not TCP
        payload = data[at:end]
        if fragment is not None and (fragment[0] or fragment[1]):
            payload = self._reassemble((6, src, dst, fragment[2]), fragment[0], fragment[1], payload, notes)
            if payload is None:
                return None
        return self._tcp(record, self._name(src), self._name(dst), payload, notes)

    def _reassemble(self, key: tuple, offset: int, more: bool, payload: bytes, notes: list[str]) -> bytes | None:
        """The whole datagram once every fragment is in, else None (held; bounded memory)."""
        pending = self._fragments.get(key)
        if pending is None:
            if len(self._fragments) >= MAX_FRAGMENT_SETS:
                self._fragments.pop(next(iter(self._fragments)))
            pending = self._fragments[key] = _FragmentSet()
        whole = pending.add(offset, more, payload)
        if whole is None:
            return None
        del self._fragments[key]
        notes.append(f"reassembled from {pending.count} IP fragments")
        return whole

    def pending_fragments(self) -> int:
        """Datagrams whose fragments never all arrived (report at the end of a capture)."""
        return len(self._fragments)

    def _tcp(self, record: LinkRecord, src: str, dst: str, segment: bytes, notes: list[str]) -> TcpPacket | None:
        if len(segment) < 20:
            return None
        sport, dport, seq, ack, offset_flags = struct.unpack_from(">HHIIH", segment, 0)
        header_length = (offset_flags >> 12) * 4
        if header_length < 20:
            notes.append(f"bogus TCP header length {header_length}")
            header_length = 20
        if record.diagnostics:
            notes = record.diagnostics + notes
        return TcpPacket(record.index, record.ts_ns, src, sport, dst, dport, seq, ack, offset_flags & 0x3F,
                         segment[header_length:], notes)


class _FragmentSet:
    __slots__ = ("parts", "total", "count")

    def __init__(self) -> None:
        self.parts: dict[int, bytes] = {}
        self.total: int | None = None
        self.count = 0

    def add(self, offset: int, more: bool, payload: bytes) -> bytes | None:
        self.parts[offset] = payload
        self.count += 1
        if not more:
            self.total = offset + len(payload)
        if self.total is None:
            return None
        out = bytearray()
        for start in sorted(self.parts):
            if start > len(out):
                return None
            out[start:] = b""
            out += self.parts[start]
        return bytes(out[:self.total]) if len(out) >= self.total else None
