"""The record walk of the bulk reader: where every packet of a classic pcap or pcapng file starts, with its
timestamp and lengths, as arrays, in one pass over the file's bytes. Anything outside what the bulk reader
handles raises :class:`Bail`, and the general pipeline reads the file instead."""
from __future__ import annotations

import struct

from kafkalab.pcap.files import MAX_RECORD, PCAP_MAGICS


class Bail(Exception):
    """The file is not one the bulk reader handles: the general pipeline reads it."""


def pcap_records(data: bytes):
    """(packet data offsets, timestamps in ns, stored lengths, original lengths, snap lengths) of every
    record of a classic pcap file of Ethernet packets, as int64 arrays."""
    import numpy as np

    order, nanos = PCAP_MAGICS[struct.unpack_from("<I", data)[0]]
    major, _, _, _, snaplen, linktype = struct.unpack_from(order + "HHiIII", data, 4)
    if major != 2 or linktype & 0x0FFFFFFF != 1:
        raise Bail
    unpack = struct.Struct(order + "I").unpack_from        # a record's stored length (at +8): the walk
    offsets = []
    add_offset = offsets.append
    pos, n = 24, len(data)
    while pos + 16 <= n:
        stored = unpack(data, pos + 8)[0]
        if stored > MAX_RECORD:
            raise Bail
        add_offset(pos + 16)
        pos += 16 + stored
    if pos != n or not offsets:                 # truncated, or no packets: the general reader reports it
        raise Bail
    body = np.array(offsets, dtype=np.int64)
    # the record headers' four fields, gathered with numpy (records need not be aligned)
    u8 = np.frombuffer(data, dtype=np.uint8)
    shifts = (0, 8, 16, 24) if order == "<" else (24, 16, 8, 0)
    fields = []
    for k in (-16, -12, -8, -4):
        value = np.zeros(len(body), dtype=np.int64)
        for j, shift in enumerate(shifts):
            value |= u8[body + (k + j)].astype(np.int64) << shift
        fields.append(value)
    ts_ns = fields[0] * 1_000_000_000 + fields[1] * (1 if nanos else 1000)
    return body, ts_ns, fields[2], fields[3], np.full(len(offsets), snaplen, dtype=np.int64)

def pcapng_records(data: bytes):
    """The same for a pcapng file whose packets are all Enhanced Packet Blocks on Ethernet interfaces (any
    other packet block, a damaged block or another link type: the general reader)."""
    import numpy as np

    from kafkalab.pcap.files import _Interface, _interface_options

    order = "<"
    interfaces: list = []
    offsets, stamps, stored, original, snaplens = [], [], [], [], []
    pos, n = 0, len(data)
    while pos < n:
        if pos + 12 > n:
            raise Bail
        if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":           # section header: byte order, new interfaces
            bom = data[pos + 8:pos + 12]
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else None
            if order is None:
                raise Bail
            interfaces = []
        kind, total = struct.unpack_from(order + "II", data, pos)
        if total < 12 or total % 4 or total > MAX_RECORD or pos + total > n or \
                struct.unpack_from(order + "I", data, pos + total - 4)[0] != total:
            raise Bail
        if kind == 1:
            if total < 20:
                raise Bail
            linktype, _, snaplen = struct.unpack_from(order + "HHI", data, pos + 8)
            interfaces.append(_interface_options(_Interface(linktype, snaplen), data[pos + 8:pos + total - 4], 8,
                                                 order))
        elif kind == 6:
            if total < 32:
                raise Bail
            iface, high, low, captured, orig = struct.unpack_from(order + "IIIII", data, pos + 8)
            if iface >= len(interfaces) or interfaces[iface].linktype != 1 or captured > total - 32:
                raise Bail
            info = interfaces[iface]
            if info.ts_problem((high << 32) | low):     # the general reader annotates the packet
                raise Bail
            offsets.append(pos + 28)
            stamps.append(info.ts_ns((high << 32) | low))
            stored.append(captured)
            original.append(orig)
            snaplens.append(info.snaplen)
        elif kind in (2, 3):                    # obsolete and simple packet blocks
            raise Bail
        pos += total
    if not offsets:
        raise Bail
    return (np.array(offsets, dtype=np.int64), np.array(stamps, dtype=np.int64), np.array(stored, dtype=np.int64),
            np.array(original, dtype=np.int64), np.array(snaplens, dtype=np.int64))
