"""Connections, streams and frames from the packet index, in bulk (the streams and frames stages).

Owns: which connection and direction each packet of a :class:`~kafkalab.pcap.index.PacketIndex` belongs to
(connections numbered by their first packet, as tshark numbers streams), whether a connection is *regular*,
and the frames of the regular ones. Must not know Kafka messages (frames are byte ranges) nor frame numbers.

A connection is regular when it is on a Kafka port, both directions open with one SYN, every data segment
follows the previous one exactly (no hole, overlap, retransmission or reordering), no acknowledgement covers
bytes the capture did not see, no byte follows a FIN or RST, and each direction cuts into whole frames
(:func:`kafkalab.protocol.framing.frame_size`: the same rule as everywhere). Every one of these tests is a numpy
expression over all packets at once (exclusive sums of payload lengths per direction give each segment's
expected sequence number and what each acknowledgement may cover); only the frame cutting walks frame by frame,
jumping over segments with a binary search. Irregular connections (loss, mid-stream start, other ports) are
left whole to the general path (:class:`~.analyzer.Analyzer`), behind the same rows.

A connection's result depends on its own packets only; the one capture-wide step is numbering connections in
order of their first packet (a distributed reader numbers them the same way from each group's first packets).
"""
from __future__ import annotations

import socket
from bisect import bisect_left
from typing import Iterable

import numpy as np

from kafkalab.pcap import endpoint
from kafkalab.pcap.index import WINDOW, release
from kafkalab.protocol.correlation import Asked
from kafkalab.protocol.framing import MAX_FRAME_SIZE, PREFIX, frame_size

SEQ_MOD = 1 << 32
HALF = 1 << 31
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
NEVER = np.iinfo(np.int64).max
RELEASE_FRAMES = 512        # frames cut between letting the file's pages go (each read maps up to 64 KiB)


class NotRegular(Exception):
    """The capture reuses a connection's addresses for a new connection: the general path numbers it."""


class Conn:
    """One connection's facts (``ends``: (ip, port) of side 0 and side 1 as integers; side 0 sent the
    connection's first packet; ``client`` is a side) and, for a regular connection, the decoder's state."""

    __slots__ = ("index", "ends", "names", "kafka_port", "client", "irregular", "packets", "payload_bytes",
                 "first_ts", "last_ts", "state", "asked", "advertised", "client_ids",
                 "client_ip", "requests", "responses", "host")

    def __init__(self, index: int, a: tuple, b: tuple, kafka_port: bool) -> None:
        self.index = index
        self.ends = (a, b)
        self.names = (endpoint(_dotted(a[0]), a[1]), endpoint(_dotted(b[0]), b[1]))
        self.kafka_port = kafka_port
        self.client: int | None = None
        self.irregular = True                   # until the connection is found regular
        self.packets = [0, 0]
        self.payload_bytes = [0, 0]
        self.first_ts = self.last_ts = 0.0
        self.state = "open"
        self.asked = Asked()                    # in flight: (index, frame, api key, version, client id, ts)
        self.advertised: list[tuple[int, int]] = []
        self.client_ids: list[str] = []
        self.client_ip = ""
        self.requests = self.responses = 0      # frames sent by the client, by the server
        self.host: dict | None = None           # the capture-wide requests of the client's host


def streams(index, data, kafka_ports: Iterable[int]) -> tuple[list[Conn], np.ndarray, list[tuple]]:
    """(connections, the connection number of each packet, the regular connections' frames in the order
    they complete). A frame is (packet position, connection, side, stream offset, start, end) with its bytes
    at data[start:end], or (packet position, connection, side, stream offset, 0, 0, span) when they span
    segments (see :func:`span_ranges`); the packet is the one holding the frame's last byte."""
    ports = np.array(sorted(set(kafka_ports)), dtype=np.int64)
    a = (index.src << 16) | index.sport
    b = (index.dst << 16) | index.dport
    conn_of, first = _connections(a, b)
    side = (a != a[first][conn_of]).astype(np.int64)
    flags, length = index.flags, index.payload_length
    conns = []
    on_port = np.isin(index.sport[first], ports) | np.isin(index.dport[first], ports)
    for number, (at, kafka_port) in enumerate(zip(first.tolist(), on_port.tolist())):
        conns.append(Conn(number, _end(index.src, index.sport, at), _end(index.dst, index.dport, at), kafka_port))
    stream = conn_of * 2 + side
    count = len(conns)
    _counters(conns, index, conn_of, stream, first, count)
    client = _clients(index, conn_of, side, flags, first, ports, count)
    irregular = ~on_port | (client < 0) | _irregular(index, conn_of, stream, first, on_port, count)
    frames: list[tuple] = []
    released = 0
    for c in np.nonzero(~irregular)[0].tolist():
        conn = conns[c]
        conn.client = int(client[c])
        conn.irregular = False
        for s in (0, 1):
            regular = _cut(data, index, np.nonzero(stream == 2 * c + s)[0], conn, s, frames)
            if len(frames) > released + RELEASE_FRAMES and len(data) > 4 * WINDOW:
                release(data, len(data))        # the pages read for size prefixes (and those mapped around them)
                released = len(frames)
            if not regular:
                conn.irregular = True
                break
    frames = [f for f in frames if not f[1].irregular]
    frames.sort(key=lambda frame: frame[0])                 # stable: a packet's frames stay in stream order
    return conns, conn_of, frames


def _connections(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each packet's connection (numbered by first packet) and each connection's first packet."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((high, low))                         # stable: equal keys keep packet order
    new = np.ones(len(order), dtype=bool)
    new[1:] = (low[order][1:] != low[order][:-1]) | (high[order][1:] != high[order][:-1])
    group = np.cumsum(new) - 1
    first_of_group = order[new]                             # the first packet of each group
    rank = np.empty(len(first_of_group), dtype=np.int64)
    rank[np.argsort(first_of_group, kind="stable")] = np.arange(len(first_of_group))
    conn_of = np.empty(len(order), dtype=np.int64)
    conn_of[order] = rank[group]
    return conn_of, np.sort(first_of_group)


def _counters(conns: list[Conn], index, conn_of: np.ndarray, stream: np.ndarray, first: np.ndarray,
              count: int) -> None:
    packets = np.bincount(stream, minlength=2 * count).tolist()
    payload = np.bincount(stream, weights=index.payload_length, minlength=2 * count).astype(np.int64).tolist()
    last_ns = np.zeros(count, dtype=np.int64)
    np.maximum.at(last_ns, conn_of, index.ts_ns)
    first_ts = index.ts_ns[first].tolist()
    rst = np.bincount(conn_of, weights=(index.flags & RST) > 0, minlength=count).tolist()
    fin = np.bincount(conn_of, weights=(index.flags & FIN) > 0, minlength=count).tolist()
    for c, conn in enumerate(conns):
        conn.packets = packets[2 * c:2 * c + 2]
        conn.payload_bytes = payload[2 * c:2 * c + 2]
        conn.first_ts = first_ts[c] / 1e9
        conn.last_ts = int(last_ns[c]) / 1e9
        conn.state = "RST" if rst[c] else "FIN" if fin[c] else "open"


def _clients(index, conn_of, side, flags, first, ports, count: int) -> np.ndarray:
    """The client side of each connection (-1: unknown): the Kafka port's other end when the capture starts
    after the handshake, else the side the first SYN names."""
    client = np.full(count, -1, dtype=np.int64)
    no_syn_first = (flags[first] & SYN) == 0
    client[no_syn_first] = np.where(np.isin(index.dport[first[no_syn_first]], ports), 0, 1)
    syn_at = _first(conn_of, (flags & SYN) != 0, count)
    has_syn = syn_at != NEVER
    syn_at = syn_at[has_syn]
    named = np.full(count, -1, dtype=np.int64)
    named[has_syn] = np.where(flags[syn_at] & ACK, 1 - side[syn_at], side[syn_at])
    return np.where(no_syn_first, client, named)


def _irregular(index, conn_of, stream, first, on_port, count: int) -> np.ndarray:
    """Connections that are not regular (see the module docstring), judged from their packets at once."""
    flags, length = index.flags, index.payload_length
    n = len(stream)
    position = np.arange(n)
    bad = np.zeros(count, dtype=bool)
    syn = (flags & SYN) != 0
    first_syn = _first(stream, syn, 2 * count)
    syn_count = np.bincount(stream[syn], minlength=2 * count)
    reopened = syn & ((flags & ACK) == 0) & (position != first[conn_of])
    if reopened.any():                                      # a SYN again: a repeat, or a new connection
        _reopened(index, conn_of, stream, first_syn, on_port, np.nonzero(reopened)[0], bad)
    bad |= (syn_count[0::2] != 1) | (syn_count[1::2] != 1)
    bad[conn_of[syn & (length > 0)]] = True
    base = (index.seq[np.minimum(first_syn, n - 1)] + 1) % SEQ_MOD          # per stream
    fin_at = _first(stream, (flags & FIN) != 0, 2 * count)
    rst_at = _first(conn_of, (flags & RST) != 0, count)
    sending = (length > 0) | ((flags & FIN) != 0)
    bad[conn_of[sending & ((first_syn[stream] >= position) | (position > fin_at[stream])
                           | (position > rst_at[conn_of]))]] = True
    delivered = _delivered_before(stream, length, 2 * count)
    expected = (base[stream] + delivered) % SEQ_MOD          # a FIN too: bytes lost just before it are a hole
    bad[conn_of[sending & ~syn & (index.seq != expected)]] = True
    peer = stream ^ 1
    acked = ((flags & ACK) != 0) & (first_syn[peer] < position) & (fin_at[peer] >= position) & \
        (rst_at[conn_of] >= position)
    peer_delivered = _peer_delivered(stream, length, position, acked)
    delta = (index.ack - base[peer] - peer_delivered + HALF) % SEQ_MOD - HALF
    bad[conn_of[acked & (delta > 0)]] = True
    return bad


def _first(group: np.ndarray, mask: np.ndarray, count: int) -> np.ndarray:
    """Per group, the position of its first packet where ``mask`` holds (NEVER when none)."""
    out = np.full(count, NEVER, dtype=np.int64)
    where = np.nonzero(mask)[0]
    groups, at = np.unique(group[where], return_index=True)
    out[groups] = where[at]
    return out


def _delivered_before(stream: np.ndarray, length: np.ndarray, count: int) -> np.ndarray:
    """Per packet, the payload bytes its direction sent before it."""
    order = np.argsort(stream, kind="stable")
    running = np.cumsum(length[order]) - length[order]
    starts = np.searchsorted(stream[order], np.arange(count))
    stream_base = np.concatenate([running, [0]])[starts]
    out = np.empty(len(stream), dtype=np.int64)
    out[order] = running - stream_base[stream[order]]
    return out


def _peer_delivered(stream, length, position, asking) -> np.ndarray:
    """Per packet (where ``asking``), the payload bytes the other direction had sent before it."""
    out = np.zeros(len(stream), dtype=np.int64)
    if not asking.any():
        return out
    order = np.lexsort((position, stream))
    key = stream[order] * (len(stream) + 1) + position[order]
    total = np.cumsum(length[order])
    starts = np.searchsorted(stream[order], np.arange(stream.max() + 2))
    at = np.nonzero(asking)[0]
    peer = stream[at] ^ 1
    upto = np.searchsorted(key, peer * (len(stream) + 1) + at)          # peer packets before ``at``
    begin = starts[np.minimum(peer, len(starts) - 1)]
    before_stream = np.where(begin > 0, total[np.maximum(begin - 1, 0)], 0)
    out[at] = np.where(upto > begin, total[np.maximum(upto - 1, 0)] - before_stream, 0)
    return out


def _reopened(index, conn_of, stream, first_syn, on_port, where: np.ndarray, bad: np.ndarray) -> None:
    """A SYN on known addresses: an exact repeat of the direction's own SYN, on a Kafka port, before any data,
    FIN or RST, is harmless (the connection goes to the general path); anything else may open a new
    connection there, which would change the numbering of every later connection."""
    for p in where.tolist():
        c, s = int(conn_of[p]), int(stream[p])
        before = conn_of[:p] == c
        if (not on_port[c] or index.payload_length[:p][before].any() or (index.flags[:p][before] & (FIN | RST)).any()
                or first_syn[s] >= p or index.seq[p] != index.seq[first_syn[s]]):
            raise NotRegular
        bad[c] = True


def _cut(data, index, packets: np.ndarray, conn: Conn, side: int, frames: list) -> bool:
    """The frames of one direction of a regular connection; False when it does not cut into whole frames."""
    length = index.payload_length[packets]
    keep = length > 0
    packets, length = packets[keep], length[keep]
    if not len(packets):
        return True
    starts = index.payload_start[packets].tolist()
    lengths = length.tolist()
    ends = np.cumsum(length).tolist()                       # stream offset after each segment
    positions = packets.tolist()
    total = ends[-1]
    pos = k = 0
    while pos < total:
        if pos + PREFIX > total:
            return False
        k = bisect_left(ends, pos + 1, k)                   # the segment holding byte ``pos``
        offset = starts[k] + pos - (ends[k] - lengths[k])
        if pos + PREFIX <= ends[k]:
            size = frame_size(data, offset)
        else:
            size = frame_size(_span(data, starts, lengths, ends, k, pos, pos + PREFIX))
        if size < 0 or size > MAX_FRAME_SIZE or pos + PREFIX + size > total:
            return False
        end = pos + PREFIX + size
        last = bisect_left(ends, end, k)                    # the segment holding the frame's last byte
        if last == k:
            frames.append((positions[k], conn, side, pos, offset, offset + PREFIX + size))
        else:
            span = (starts, lengths, k, last, offset, starts[last] + end - (ends[last] - lengths[last]))
            frames.append((positions[last], conn, side, pos, 0, 0, span))
        pos, k = end, last
    return True


def span_ranges(span: tuple) -> list[tuple[int, int]]:
    """The file ranges holding a frame that spans segments, in order: the span is (the direction's segment
    starts and lengths, first and last segment, where the frame starts in the first, ends in the last)."""
    starts, lengths, k, last, head, tail = span
    return [(head, starts[k] + lengths[k]), *((starts[j], starts[j] + lengths[j]) for j in range(k + 1, last)),
            (starts[last], tail)]


def span_bytes(view: memoryview, span: tuple) -> bytes:
    """A frame that spans segments, joined (one copy) from a view of the file."""
    return b"".join([view[a:b] for a, b in span_ranges(span)])


def _span(data, starts, lengths, ends, k: int, pos: int, end: int) -> bytes:
    """Stream bytes [pos, end) that cross segment boundaries, from segment ``k`` on."""
    out = b""
    while pos < end:
        at = starts[k] + pos - (ends[k] - lengths[k])
        take = min(end, ends[k]) - pos
        out += data[at:at + take]
        pos += take
        k += 1
    return out


def _end(ips: np.ndarray, ports: np.ndarray, at: int) -> tuple[int, int]:
    return int(ips[at]), int(ports[at])


def _dotted(value: int) -> str:
    return socket.inet_ntoa(value.to_bytes(4, "big"))
