"""Test-side builders of capture files, written from the format specifications independently of the reader:
classic pcap in any byte order/resolution, pcapng with several interfaces, link-layer wrappers, and
captures of the golden frames (tests/golden) through TcpPcapWriter."""
from __future__ import annotations

import json
import struct
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def pcap_bytes(records, *, linktype=1, order="<", nanos=False, snaplen=262144) -> bytes:
    """records: (ts_seconds_float, data[, orig_len])."""
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = bytearray(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for rec in records:
        ts, data = rec[0], rec[1]
        orig = rec[2] if len(rec) > 2 else len(data)
        sec = int(ts)
        frac = round((ts - sec) * (1e9 if nanos else 1e6))
        out += struct.pack(order + "IIII", sec, frac, len(data), orig) + data
    return bytes(out)


def _block(order, block_type, body):
    body += b"\0" * (-len(body) % 4)
    total = len(body) + 12
    return struct.pack(order + "II", block_type, total) + body + struct.pack(order + "I", total)


def pcapng_bytes(interfaces, packets, *, order="<") -> bytes:
    """interfaces: [(linktype, tsresol byte or None)]; packets: (iface, ts_units, data, kind) kind in
    'epb'|'spb'|'pb'. Adds a comment option and a name-resolution block to be skipped."""
    out = bytearray(_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
    for linktype, tsresol in interfaces:
        options = b""
        comment = b"iface"
        options += struct.pack(order + "HH", 2, len(comment)) + comment + b"\0" * (-len(comment) % 4)
        if tsresol is not None:
            options += struct.pack(order + "HHB3x", 9, 1, tsresol)
        options += struct.pack(order + "HH", 0, 0)
        out += _block(order, 1, struct.pack(order + "HHI", linktype, 0, 0) + options)
    out += _block(order, 4, struct.pack(order + "HH", 0, 0))          # empty name resolution block
    for iface, units, data, kind in packets:
        if kind == "epb":
            body = struct.pack(order + "IIIII", iface, units >> 32, units & 0xFFFFFFFF, len(data), len(data))
            out += _block(order, 6, body + data + b"\0" * (-len(data) % 4) + struct.pack(order + "HH", 0, 0))
        elif kind == "pb":
            body = struct.pack(order + "HHIIII", iface, 0, units >> 32, units & 0xFFFFFFFF, len(data), len(data))
            out += _block(order, 2, body + data)
        else:
            out += _block(order, 3, struct.pack(order + "I", len(data)) + data)
    return bytes(out)


def golden_manifest() -> list[dict]:
    return json.loads((GOLDEN / "manifest.json").read_text())["files"]


def golden_conversations(clients=None):
    """[(client, connection number, [(manifest entry, frame bytes)])] in manifest order."""
    groups: dict[tuple, list] = {}
    for entry in golden_manifest():
        if clients and entry["client"] not in clients:
            continue
        groups.setdefault((entry["client"], entry["connection"]), []).append(
            (entry, (GOLDEN / entry["file"]).read_bytes()))
    return [(client, conn, items) for (client, conn), items in groups.items()]


def write_golden_pcap(path, *, server_port=9092, clients=None, start=1_700_000_000.0, mss=None):
    """One TCP connection per (client, connection) of the golden corpus; returns the conversations."""
    from kafkalab.pcap import TcpPcapWriter

    conversations = golden_conversations(clients)
    kwargs = {} if mss is None else {"mss": mss}
    ts = start
    with TcpPcapWriter(path, **kwargs) as writer:
        for index, (_, _, items) in enumerate(conversations):
            conn = writer.open_connection(("10.0.0.1", 40000 + index), ("10.0.0.2", server_port), ts)
            for entry, raw in items:
                ts += 0.001
                writer.send(conn, entry["direction"] == "request", raw, ts)
            ts += 0.001
            writer.close(conn, ts)
    return conversations
