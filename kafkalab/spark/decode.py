"""The decode stage of a distributed read: one group of connections, decoded by kafkalab's own engine, with
everything the global numbering needs.

A group holds every packet of a set of connections (see :mod:`.pipeline` for which connections share a
group). Its packets, sorted by their global order key, are fed to :func:`kafkalab.read_capture` as packets
whose timestamps are their positions (1 s, 2 s, ...): every time the engine reports then says which packet it
came from, and a frame's time names the packet that completed it. After the group's packets comes a *marker
connection* (a handshake and one complete ApiVersions request on addresses no capture uses): the frame it
completes is numbered after every frame completed by a real packet and before everything completed only at
the end of the capture, which tells the two kinds apart. The real timestamps are put back afterwards, with
times and latencies computed from them as the engine computes them (seconds as floats; frame and exchange
times by :func:`kafkalab.dissect.columns.epoch_micros`; latency ``round((response - request) * 1000, 6)`` ms).

What comes out, per group (``g``): ``("stream", first packet's order key, (g, local stream))`` for every
TCP connection; ``("fkey", sort key, (g, local frame))``; the rows of the four tables keyed by local numbers;
``("topics", unresolved topic ids, known topic ids)``.
"""
from __future__ import annotations

import struct

import numpy as np

from kafkalab.dissect.columns import epoch_micros
from kafkalab.pcap import ACK, PSH, SYN, TcpPacket

SECOND = 1_000_000_000
_MARK_CLIENT, _MARK_SERVER = ("0.0.0.1", 1), ("0.0.0.2", 9092)
_MARK_REQUEST = struct.pack(">ihhih", 10, 18, 0, 0x7EAD, -1)      # ApiVersions v0, null client id


def _marker(first: int) -> list[TcpPacket]:
    (c, cp), (s, sp) = _MARK_CLIENT, _MARK_SERVER
    ts = [(first + k) * SECOND for k in range(4)]
    return [TcpPacket(first, ts[0], c, cp, s, sp, 100, 0, SYN, b"", []),
            TcpPacket(first + 1, ts[1], s, sp, c, cp, 500, 101, SYN | ACK, b"", []),
            TcpPacket(first + 2, ts[2], c, cp, s, sp, 101, 501, ACK, b"", []),
            TcpPacket(first + 3, ts[3], c, cp, s, sp, 101, 501, ACK | PSH, _MARK_REQUEST, [])]


def _py(value):
    """A table value as a plain Python value (None for nulls, lists for arrays, int ns for times)."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.value
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_py(v) for v in value]
    if isinstance(value, dict):
        return {k: _py(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _rows(table) -> list[dict]:
    columns = list(table.columns)
    return [dict(zip(columns, map(_py, values))) for values in table.itertuples(index=False, name=None)]


def decode_group(group, packets: list, ports) -> list:
    from kafkalab.capture.capture import read_capture

    packets = sorted(packets, key=lambda p: p[0])
    n = len(packets)
    feed = [TcpPacket(i + 1, (i + 1) * SECOND, p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], list(p[10]))
            for i, p in enumerate(packets)] + _marker(n + 1)
    cap = read_capture(feed, ports)
    keys = [p[0] for p in packets]
    real = [p[1] / 1e9 for p in packets]          # the engine's float seconds
    conns = [c for c in cap._analyzer.connections if c.first_ts <= n]     # the marker's is left out
    out: list = [("stream", keys[int(c.first_ts) - 1], (group, c.index)) for c in conns]
    # a connection's last time: the latest real time among its packets (the engine keeps the maximum)
    last_real = {}
    for c in conns:
        ends = {c.endpoints[0], c.endpoints[1]}
        first, last = int(c.first_ts) - 1, int(c.last_ts) - 1
        last_real[c.index] = max(real[i] for i in range(first, last + 1)
                                 if {(packets[i][2], packets[i][3]), (packets[i][4], packets[i][5])} == ends)
    first_real = {c.index: real[int(c.first_ts) - 1] for c in conns}
    synthetic_last = {c.index: c.last_ts for c in conns}

    frames = cap.frames
    marker_stream = max(c.index for c in cap._analyzer.connections)
    marks = frames.index[frames["stream"] == marker_stream]
    marker_number = int(frames["frame"][marks[0]]) if len(marks) else len(frames) + 1
    ts_of: dict[int, float] = {}
    completing = 0
    known = set(cap._analyzer.topic_names)          # topic ids the group's Metadata responses named
    unresolved = {topic_id for f in cap.frame_list if f.topic_ids
                  for topic_id, name in f.topic_ids.items() if name is None}
    for row in _rows(frames):
        number = row["frame"]
        if row["stream"] == marker_stream:
            continue
        t = round(row["time"] / 1e9 * 1e6) / 1e6        # the frame's synthetic time (integer seconds)
        if number < marker_number:
            completing = max(completing, int(t) - 1)
            ts_of[number] = real[int(t) - 1]
            sort_key = (0, keys[completing], number)
        else:
            ts_of[number] = last_real[row["stream"]] if t == synthetic_last[row["stream"]] else real[int(t) - 1]
            sort_key = (1, row["stream"], number)
        out.append(("fkey", sort_key, (group, number)))
        row["time"] = epoch_micros(ts_of[number]) * 1000
        out.append(("frame", (group, number), row))
    for row_key in list(out):
        if row_key[0] != "frame":
            continue
        row = row_key[2]
        partner = row["request_frame"] if row["kind"] == "response" else row["response_frame"]
        if partner is not None and row["latency_ms"] is not None and partner in ts_of:
            request, response = (partner, row["frame"]) if row["kind"] == "response" else (row["frame"], partner)
            row["latency_ms"] = round((ts_of[response] - ts_of[request]) * 1000.0, 6)
    for row in _rows(cap.exchanges):
        if row["stream"] == marker_stream:
            continue
        row["request_time"] = epoch_micros(ts_of[row["request_frame"]]) * 1000
        if row["response_frame"] is not None:
            row["response_time"] = epoch_micros(ts_of[row["response_frame"]]) * 1000
            row["latency_ms"] = round((ts_of[row["response_frame"]] - ts_of[row["request_frame"]]) * 1000.0, 6)
        out.append(("exchange", (group, row["request_frame"]), row))
    for j, row in enumerate(_rows(cap.records)):
        out.append(("record", (group, row["frame"], j), row))
    for row in _rows(cap.connections):
        if row["stream"] == marker_stream:
            continue
        row["first_time"] = int(first_real[row["stream"]] * 1e9)
        row["last_time"] = int(last_real[row["stream"]] * 1e9)
        out.append(("conn", (group, row["stream"]), row))
    out.append(("topics", unresolved, known))
    return out
