"""Skew: a connection heavier than one decode task's share of the capture is cut, at Kafka frame boundaries,
into ranges that separate tasks decode in parallel.

Owns where a heavy connection may be cut and how a range is made to look like a connection of its own. A cut
goes between two packets where both directions end on a frame boundary and every request sent so far has
its response (as many frames each way: nothing in flight, so no pairing crosses the cut), after the
handshake and before any FIN or RST. Only a connection that opens with a SYN and whose data segments follow
each other exactly (the bulk path's regular connection) is cut; any other keeps one task. Cuts are chosen
near equal shares of the connection's payload bytes (:func:`find_cuts`, a task per heavy connection, which
reads the 4-byte size prefixes by offset from the shared files).

A range after a cut starts with a synthetic handshake (SYN, SYN-ACK, ACK with the sequence numbers the
connection had reached), given order keys just before the cut's first packet (positions are spaced by
:data:`~.packets.POS_STEP`), so the engine decodes it as a regular connection. The numbering then treats
the ranges as one connection: their streams share the connection's stream id (the synthetic SYN's key is an
alias of the connection's first packet's), and their connection rows are merged, the handshake's packets
taken off (:func:`merge_connections`).
"""
from __future__ import annotations

import numpy as np

from .packets import KEY_DDL, POS_STEP, mapped

SEQ_MOD = 1 << 32
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
CUT_COLUMNS = (f"{KEY_DDL}, rank bigint, start bigint, "
               "pos bigint, ts bigint, client string, cport bigint, server string, sport bigint, cseq bigint, "
               "sseq bigint, bytes bigint, first_rank bigint, first_start bigint, first_pos bigint")


def find_cuts(table, paths: list[str], pieces: int) -> list[dict]:
    """Cuts of one connection's index rows into about ``pieces`` ranges (no cut: an empty list). Each cut
    names the first packet of its range, the client and server, their next sequence numbers there and the
    payload bytes of the range before it."""
    order = [("rank", "ascending"), ("start", "ascending"), ("pos", "ascending")]
    table = table.sort_by(order)
    col = {name: table.column(name).to_numpy(zero_copy_only=False) for name in
           ("rank", "start", "pos", "ts", "src", "sport", "seq", "flags", "off", "len")}
    flags, length = col["flags"].astype(np.int64), col["len"].astype(np.int64)
    if pieces < 2 or table.column("payload").null_count < table.num_rows or not len(flags):
        return []
    syn = np.nonzero(((flags & SYN) != 0) & ((flags & ACK) == 0))[0]
    synack = np.nonzero(((flags & SYN) != 0) & ((flags & ACK) != 0))[0]
    if len(syn) != 1 or len(synack) != 1 or syn[0] != 0:
        return []
    client = (col["src"][0], int(col["sport"][0]))
    side = np.array([(s, int(p)) != client for s, p in zip(col["src"].tolist(), col["sport"].tolist())])
    ends, boundary, seqs = [], [], []
    for s, at in ((0, syn[0]), (1, synack[0])):
        mine = (side == s) & (length > 0)
        base = (int(col["seq"][at]) + 1) % SEQ_MOD
        delivered = np.cumsum(np.where(side == s, length, 0))           # after each packet, this direction's
        expected = (base + delivered - length) % SEQ_MOD
        if ((col["seq"].astype(np.int64) % SEQ_MOD != expected) & mine).any():
            return []                           # a hole, overlap or retransmission: not cut
        frame_ends = _frame_ends(paths, col, np.nonzero(mine)[0], int(delivered[-1]) if len(delivered) else 0)
        if frame_ends is None:
            return []
        ends.append(delivered)
        boundary.append(np.isin(delivered, frame_ends) | (delivered == 0))
        seqs.append((base, np.searchsorted(frame_ends, delivered, side="right")))
    closing = np.nonzero((flags & (FIN | RST)) != 0)[0]
    last = int(closing[0]) if len(closing) else len(flags)
    position = np.arange(len(flags))
    ok = boundary[0] & boundary[1] & (seqs[0][1] == seqs[1][1]) & (position > max(syn[0], synack[0]) + 1) & \
        (position + 1 < last)
    total = ends[0] + ends[1]
    cuts, previous = [], 0
    for k in range(1, pieces):
        candidates = np.nonzero(ok & (total >= total[-1] * k / pieces))[0]
        if not len(candidates) or candidates[0] + 1 <= previous:
            continue
        i = int(candidates[0])
        server = (col["src"][i], int(col["sport"][i])) if side[i] else None
        cuts.append({"rank": int(col["rank"][i + 1]), "start": int(col["start"][i + 1]), "pos": int(col["pos"][i + 1]),
                     "ts": int(col["ts"][i + 1]), "cseq": int((seqs[0][0] + ends[0][i]) % SEQ_MOD),
                     "sseq": int((seqs[1][0] + ends[1][i]) % SEQ_MOD), "bytes": int(total[i]),
                     "client": client, "server": server,
                     "first": (int(col["rank"][0]), int(col["start"][0]), int(col["pos"][0]))})
        previous = i + 1
    server = next(((s, int(p)) for s, p, d in zip(col["src"].tolist(), col["sport"].tolist(), side.tolist()) if d),
                  None)
    for cut in cuts:
        cut["server"] = server
    return cuts if server is not None else []


def _frame_ends(paths, col, packets: np.ndarray, total: int):
    """Stream offsets where this direction's frames end (None when its bytes do not cut into whole frames)."""
    from kafkalab.protocol.framing import MAX_FRAME_SIZE, PREFIX

    if not len(packets):
        return np.zeros(0, dtype=np.int64)
    lengths = col["len"][packets].astype(np.int64)
    stops = np.cumsum(lengths)
    ends, pos = [], 0
    while pos < total:
        if pos + PREFIX > total:
            return None
        size = int.from_bytes(_stream_bytes(paths, col, packets, lengths, stops, pos, PREFIX), "big", signed=True)
        if size < 0 or size > MAX_FRAME_SIZE or pos + PREFIX + size > total:
            return None
        pos += PREFIX + size
        ends.append(pos)
    return np.array(ends, dtype=np.int64)


def _stream_bytes(paths, col, packets, lengths, stops, pos: int, count: int) -> bytes:
    out = b""
    k = int(np.searchsorted(stops, pos, side="right"))
    while len(out) < count:
        at = pos + len(out) - (int(stops[k]) - int(lengths[k]))
        p = packets[k]
        data = mapped(paths[int(col["rank"][p])])
        offset = int(col["off"][p]) + at
        out += data[offset:offset + min(count - len(out), int(lengths[k]) - at)]
        k += 1
    return out


def handshake_rows(cut: dict) -> list[dict]:
    """The synthetic SYN, SYN-ACK and ACK opening the range that starts at ``cut`` (index rows)."""
    (client, cport), (server, sport) = cut["client"], cut["server"]
    cseq, sseq = cut["cseq"], cut["sseq"]
    rows = [(client, cport, server, sport, (cseq - 1) % SEQ_MOD, 0, SYN),
            (server, sport, client, cport, (sseq - 1) % SEQ_MOD, cseq, SYN | ACK),
            (client, cport, server, sport, cseq, sseq, ACK)]
    return [{"rank": cut["rank"], "start": cut["start"], "pos": cut["pos"] - POS_STEP + 1 + k, "ts": cut["ts"],
             "src": src, "sport": sp, "dst": dst, "dport": dp, "seq": seq, "ack": ack, "flags": flags, "off": -1,
             "len": 0} for k, (src, sp, dst, dp, seq, ack, flags) in enumerate(rows)]


def range_of(rows, cuts: list[dict]) -> np.ndarray:
    """The range of each of a cut connection's index rows: the number of its cuts at or before the row (by
    order key)."""
    rank, start, pos = (rows.column(name).to_numpy().astype(np.int64) for name in ("rank", "start", "pos"))
    found = np.zeros(rows.num_rows, dtype=np.int64)
    for c in cuts:
        found += (rank > c["rank"]) | ((rank == c["rank"]) & ((start > c["start"]) | (
            (start == c["start"]) & (pos >= c["pos"]))))
    return found


def merge_connections(rows):
    """The connection rows of each stream's ranges as one (the rows of a connection that was not cut are
    kept as they are: one part, no handshake taken off)."""
    from pyspark.sql import functions as F

    parts = F.count("*") - 1                    # synthetic handshakes: two client packets, one server packet
    by_time = F.array_sort(F.collect_list(F.struct("first_time", "client_ids", "state")))
    states = F.transform(by_time, lambda x: x["state"])
    return rows.groupBy("stream").agg(
        F.first("client").alias("client"), F.first("server").alias("server"),
        F.min("first_time").alias("first_time"), F.max("last_time").alias("last_time"),
        F.sum("client_bytes").alias("client_bytes"), F.sum("server_bytes").alias("server_bytes"),
        (F.sum("client_packets") - 2 * parts).alias("client_packets"),
        (F.sum("server_packets") - parts).alias("server_packets"),
        F.sum("requests").alias("requests"), F.sum("responses").alias("responses"),
        F.array_distinct(F.flatten(F.transform(by_time, lambda x: x["client_ids"]))).alias("client_ids"),
        F.sum("gaps").alias("gaps"), F.sum("gap_bytes").alias("gap_bytes"),
        F.bool_or("midstream").alias("midstream"),
        F.when(F.array_contains(states, "RST"), "RST").when(F.array_contains(states, "FIN"), "FIN")
         .otherwise("open").alias("state"))
