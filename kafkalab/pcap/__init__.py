"""Capture files: a streaming pcap/pcapng reader down to TCP segments, and a pcap writer.

A format library: it knows link layers, IP and TCP headers, nothing about TCP streams or Kafka, and imports
nothing from the rest of kafkalab. ``read_packets(path)`` yields :class:`TcpPacket`s in file order;
``iter_link_records`` the raw records; :class:`TcpPcapWriter` synthesises captures.
"""
from __future__ import annotations

from typing import Iterator

from .errors import CaptureError
from .files import LinkRecord, iter_link_records
from .layers import ACK, FIN, PSH, RST, SYN, PacketDecoder, TcpPacket, endpoint
from .writer import TcpConnection, TcpPcapWriter, checksum


def read_packets(source, diagnostics: list[str] | None = None) -> Iterator[TcpPacket]:
    """Every TCP segment in a capture (path, bytes or binary file), in file order; other packets skipped.
    File-level problems found after the header are appended to ``diagnostics``."""
    decoder = PacketDecoder()
    decode = decoder.decode
    for record in iter_link_records(source, diagnostics):
        packet = decode(record)
        if packet is not None:
            yield packet
    if diagnostics is not None and decoder.pending_fragments():
        diagnostics.append(f"{decoder.pending_fragments()} IP datagrams had fragments missing")


__all__ = ["CaptureError", "LinkRecord", "iter_link_records", "PacketDecoder", "TcpPacket", "endpoint",
           "read_packets", "TcpConnection", "TcpPcapWriter", "checksum", "FIN", "SYN", "RST", "PSH", "ACK"]
