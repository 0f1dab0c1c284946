"""Capture files: a streaming pcap/pcapng reader down to TCP segments, and a pcap writer.

A format library: it knows link layers, IP and TCP headers, nothing about TCP streams or Kafka, and imports
nothing from the rest of kafkalab. ``read_packets(path)`` yields :class:`TcpPacket`s in file order;
``iter_link_records`` the raw records; :class:`TcpPcapWriter` synthesises captures.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator

from .errors import CaptureError, NotACaptureFile
from .fast import LINKS, fast_pcap_packets
from .files import PCAP_MAGICS, LinkRecord, iter_link_records, open_stream
from .layers import ACK, FIN, PSH, RST, SYN, PacketDecoder, TcpPacket, endpoint
from .writer import TcpConnection, TcpPcapWriter, checksum


def read_packets(source, diagnostics: list[str] | None = None) -> Iterator[TcpPacket]:
    """Every TCP segment in a capture (path, bytes or binary file), in file order; other packets skipped.
    File-level problems found after the header are appended to ``diagnostics``."""
    notes = [] if diagnostics is None else diagnostics
    decoder = PacketDecoder()
    stream, owned = open_stream(source)
    try:
        header = _classic_header(stream)
        if header is not None:
            yield from fast_pcap_packets(stream, *header, decoder, notes)
        else:
            decode = decoder.decode
            for record in iter_link_records(stream, notes):
                packet = decode(record)
                if packet is not None:
                    yield packet
    except (OSError, EOFError, zlib.error) as exc:
        notes.append(f"capture file damaged: {exc}")
    finally:
        if owned:
            stream.close()
    if decoder.pending_fragments():
        notes.append(f"{decoder.pending_fragments()} IP datagrams had fragments missing")


def _classic_header(stream) -> tuple | None:
    """(byte order, nanoseconds, snap length, link type) of a classic pcap file whose link type the fast
    path knows, consuming its 24-byte header; else None, consuming nothing."""
    try:
        head = stream.peek(24)[:24]
    except (OSError, EOFError, zlib.error):
        return None
    if len(head) < 24:
        return None
    magic = struct.unpack_from("<I", head)[0]
    if magic not in PCAP_MAGICS:
        return None
    order, nanos = PCAP_MAGICS[magic]
    major, _, _, _, snaplen, linktype_field = struct.unpack_from(order + "HHiIII", head, 4)
    linktype = linktype_field & 0x0FFFFFFF
    if major != 2 or linktype not in LINKS:
        return None
    if len(stream.read(24)) < 24:
        raise OSError("capture file shorter than its header")
    return order, nanos, snaplen, linktype


__all__ = ["CaptureError", "NotACaptureFile", "LinkRecord", "iter_link_records", "PacketDecoder", "TcpPacket", "endpoint",
           "read_packets", "TcpConnection", "TcpPcapWriter", "checksum", "FIN", "SYN", "RST", "PSH", "ACK"]
