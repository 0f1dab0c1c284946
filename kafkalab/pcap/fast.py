"""The fast path of :func:`~kafkalab.pcap.read_packets` for classic pcap files.

Owns: walking a classic pcap file straight to :class:`~.layers.TcpPacket`s in one loop over large chunks, for
the packets that make up nearly every capture (Ethernet, Linux cooked SLL/SLL2, BSD null/loopback or raw IP;
an unfragmented IPv4 datagram stored whole; TCP). Every other record (IPv6, VLAN tags, IP fragments or
options-only oddities, records carrying diagnostics, anything cut short) is handed to the general
:class:`~.layers.PacketDecoder` as a :class:`~.files.LinkRecord`, so the results are exactly those of the
general path: this module only skips the intermediate objects. File-level problems (truncation, corrupt
lengths) are reported with the same diagnostics as :func:`~.files.iter_link_records`.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterator

from .files import CHUNK, MAX_RECORD, LinkRecord, _check_lengths
from .layers import PacketDecoder, TcpPacket

_TCP = struct.Struct(">HHIIH")
_IPV4 = struct.Struct(">B1xH2xH1xB2x4s4s")     # version/IHL, total length, flags/fragment, protocol, addresses
_IPV4_ETHERTYPE = b"\x08\x00"

# linktype -> (offset of the bytes that must say "IPv4", the accepted values, offset of the IP header)
LINKS: dict[int, tuple[int, tuple[bytes, ...], int]] = {
    1: (12, (_IPV4_ETHERTYPE,), 14),                          # Ethernet (VLAN-tagged frames: general path)
    113: (14, (_IPV4_ETHERTYPE,), 16),                        # Linux cooked SLL
    276: (0, (_IPV4_ETHERTYPE,), 20),                         # Linux cooked SLL2
    0: (0, (b"\x02\x00\x00\x00", b"\x00\x00\x00\x02"), 4),   # BSD null (host byte order)
    108: (0, (b"\x00\x00\x00\x02",), 4),                      # OpenBSD loop (network order)
    101: (0, (), 0), 12: (0, (), 0), 228: (0, (), 0),         # raw IP / raw IPv4
}


def fast_pcap_packets(stream: BinaryIO, order: str, nanos: bool, snaplen: int, linktype: int,
                      decoder: PacketDecoder, diagnostics: list[str]) -> Iterator[TcpPacket]:
    """TCP packets of a classic pcap ``stream`` positioned just after its 24-byte file header."""
    check_at, accepted, ip_offset = LINKS[linktype]
    check_len = len(accepted[0]) if accepted else 0
    record_header = struct.Struct(order + "IIII").unpack_from
    tcp_header = _TCP.unpack_from
    ip_header = _IPV4.unpack_from
    scale = 1 if nanos else 1000
    names = decoder._ip_names
    name_of = decoder._name
    decode = decoder.decode
    buf = b""
    pos = 0
    offset = 24                      # file offset of buf[0]
    index = 0
    read = stream.read
    while True:
        left = len(buf) - pos
        if left < 16:
            more = read(CHUNK)
            if not more:
                if left:
                    diagnostics.append(f"file truncated in the header of packet {index + 1} "
                                       f"(byte {offset + pos})")
                return
            offset += pos
            buf = buf[pos:] + more
            pos = 0
            continue
        seconds, fraction, stored, orig = record_header(buf, pos)
        if stored > MAX_RECORD:
            diagnostics.append(f"packet {index + 1} claims {stored} stored bytes at byte {offset + pos}: "
                               "corrupt file, reading stopped")
            return
        end = pos + 16 + stored
        if end > len(buf):
            parts = [buf[pos:]]
            have = len(buf) - pos
            while have < 16 + stored:
                more = read(max(CHUNK, 16 + stored - have))
                if not more:
                    break
                parts.append(more)
                have += len(more)
            offset += pos
            buf, pos = b"".join(parts), 0
            if have < 16 + stored:                    # cut short by the end of the file
                index += 1
                data = buf[16:]
                record = LinkRecord(index, seconds * 1_000_000_000 + fraction * scale, linktype, data, orig)
                record.diagnostics.append(f"file truncated: {len(data)} of {stored} bytes of the packet stored")
                diagnostics.append(f"file truncated in packet {index} (byte {offset})")
                packet = decode(record)
                if packet is not None:
                    yield packet
                return
            continue
        index += 1
        start = pos + 16
        pos = end
        ts_ns = seconds * 1_000_000_000 + fraction * scale
        ip = start + ip_offset
        if (orig < stored or stored > snaplen > 0 or ip + 40 > end or
                (check_len and buf[start + check_at:start + check_at + check_len] not in accepted)):
            packet = _general(buf, start, end, index, ts_ns, linktype, orig, stored, snaplen, decode)
            if packet is not None:
                yield packet
            continue
        version_ihl, total, fragment, protocol, raw_src, raw_dst = ip_header(buf, ip)
        ihl = (version_ihl & 0x0F) * 4
        ip_end = ip + total
        tcp = ip + ihl
        if version_ihl >> 4 != 4 or protocol != 6 or ihl < 20 or tcp + 20 > ip_end or ip_end > end or \
                fragment & 0x3FFF:
            packet = _general(buf, start, end, index, ts_ns, linktype, orig, stored, snaplen, decode)
            if packet is not None:
                yield packet
            continue
        sport, dport, seq, ack, offset_flags = tcp_header(buf, tcp)
        header_length = (offset_flags >> 12) * 4
        if header_length < 20:
            packet = _general(buf, start, end, index, ts_ns, linktype, orig, stored, snaplen, decode)
            if packet is not None:
                yield packet
            continue
        src = names.get(raw_src) or name_of(raw_src)
        dst = names.get(raw_dst) or name_of(raw_dst)
        yield TcpPacket(index, ts_ns, src, sport, dst, dport, seq, ack, offset_flags & 0x3F,
                        buf[tcp + header_length:ip_end], [])


def _general(buf: bytes, start: int, end: int, index: int, ts_ns: int, linktype: int, orig: int, stored: int,
             snaplen: int, decode) -> TcpPacket | None:
    record = LinkRecord(index, ts_ns, linktype, buf[start:end], orig)
    _check_lengths(record, stored, snaplen)
    return decode(record)
