"""The index stage of a distributed read: one read unit (a file or a byte range of one) into its TCP segments,
each keyed by its connection and its place in the capture.

Owns the packet tuple that travels through the shuffle and the global order key. A packet's order key is
``(file rank, range start, position in the range)``: sorting by it gives the order in which the single-process
engine reads the same packets (files in capture-time order, records in file order). The connection key is the
canonical two-way 4-tuple (both directions meet; the epochs of a reused 4-tuple stay together, so the engine
itself separates them by their SYNs). The link, IP and TCP layers are read by :func:`kafkalab.pcap.read_packets`:
no second decoder. The payload bytes travel with the packet through the shuffle; shuffling only the index
(file, offset, length) and reading payloads by offset in the decode task is the next step for large captures.
IP fragments of one datagram that fall into two ranges are not joined (each range's reader sees one part).
"""
from __future__ import annotations

import os

from kafkalab.pcap import CaptureError, read_packets
from kafkalab.pcap.split import ByteRange, check_range, map_file, read_layout

# (order key, ts_ns, src, sport, dst, dport, seq, ack, flags, payload, diagnostics)
Packet = tuple


def connection_key(packet: Packet) -> tuple:
    a, b = (packet[2], packet[3]), (packet[4], packet[5])
    return (a, b) if a <= b else (b, a)


def resolve_unit(unit: tuple) -> tuple:
    """A nominal range resolved to record boundaries by its own task, with whether its walk lands exactly
    on its end (the next range's start): ``(unit, resolved start, resolved end, lands)``."""
    rank, path, start, end = unit
    if start < 0:
        return unit, start, end, True
    check = check_range(ByteRange(path, start, end))
    return unit, check.range.start, check.range.end, check.lands


def read_unit(unit: tuple) -> list:
    """The unit's packets (see :data:`Packet`), and ``("note", text)`` items for what was wrong in the file."""
    rank, path, start, end = unit
    notes: list[str] = []
    if start < 0:
        source = path
    else:
        layout = read_layout(path)
        data = map_file(path)
        with open(path, "rb") as handle:
            header = handle.read(layout.first_record)
        source = header + bytes(data[start:end])
    try:
        packets = [((rank, max(start, 0), i), p.ts_ns, p.src, p.sport, p.dst, p.dport, p.seq, p.ack, p.flags,
                    bytes(p.payload), list(p.diagnostics)) for i, p in enumerate(read_packets(source, notes))]
    except CaptureError as exc:
        packets, notes = [], [str(exc)]
    name = os.path.basename(path)
    return packets + [("note", f"{name}: {note}") for note in notes]
