"""Connections, streams and frames from the packet index, in bulk and window by window (the streams and
frames stages).

Owns: which connection and direction each packet of a :class:`~kafkalab.pcap.index.PacketIndex` belongs to
(connections numbered by their first packet, as tshark numbers streams), whether a connection is *regular*,
and the frames of the regular ones. Must not know Kafka messages (frames are byte ranges) nor frame numbers.

A connection is regular when it is on a Kafka port, both directions open with one SYN, every data segment
follows the previous one exactly (no hole, overlap, retransmission or reordering), no acknowledgement covers
bytes the capture did not see, no byte follows a FIN or RST, each direction cuts into whole frames
(:func:`kafkalab.protocol.framing.frame_size`: the same rule as everywhere), and every response answers a
request the connection is waiting for (by correlation id, see :class:`Waiting`: a response that answers
none may be held for the connection's next request, which only the general path does). Irregular connections (loss,
mid-stream start, other ports) are left whole to the general path (:class:`~.analyzer.Analyzer`), behind the
same rows.

Theory of operation: :class:`Streams` takes the packet index a window at a time (see
:func:`kafkalab.pcap.index.index_windows`) and carries, per connection direction, the little it must know
across windows: its first SYN's position and sequence number, the bytes sent so far, where its FIN and the
connection's RST were, and (while the connection looks regular) the unfinished frame's segments
(:class:`Direction`). Within a window every test is a numpy expression over the window's packets (exclusive
sums of payload lengths per direction, plus what earlier windows carried, give each segment's expected
sequence number and what each acknowledgement may cover); only the frame cutting walks frame by frame,
jumping over segments with a binary search (:mod:`.segments`). Whether a connection is regular is known only at the end of
the capture, so a reader makes two passes over the windows: :meth:`Streams.classify` (pass 1) then, with a
fresh :class:`Streams` told the verdicts, :meth:`Streams.frames` (pass 2, the regular connections' frames).
Whatever the windows, the verdicts and frames are those of one window holding the whole capture. A reader
that decodes the frames anyway may leave the last rule to its decoding (``answers=False``, see
:class:`Waiting`): it then reads each request's header once, not once here and again there.

A connection's result depends on its own packets only; the one capture-wide step is numbering connections in
order of their first packet (a distributed reader numbers them the same way from each group's first packets).
"""
from __future__ import annotations

import socket
import struct
from itertools import islice
from operator import itemgetter
from typing import Iterable

import numpy as np

from kafkalab.pcap import endpoint
from kafkalab.protocol.correlation import Asked
from kafkalab.protocol.framing import SIZE_PREFIX

from .regularity import NEVER, Carried, stable_order
from .segments import Direction, span_head

REQUEST_HEAD = struct.Struct(">hhi")          # api_key, api_version, correlation_id
CORRELATION = struct.Struct(">i")            # a response's correlation id, after its size
_POSITION = itemgetter(0)
MAX_WAITING = 4096          # requests remembered per connection; a response to a forgotten one: general path

SYN, ACK = 0x02, 0x10


class Conn:
    """One connection's facts (``ends``: (ip, port) of side 0 and side 1 as integers; side 0 sent the
    connection's first packet; ``client`` is a side) and, for a regular connection, the decoder's state.
    A regular connection's row is :func:`~.capture.connection_row`'s, as the general path's connections'."""

    __slots__ = ("index", "ends", "names", "kafka_port", "client", "irregular", "packets", "payload_bytes",
                 "first_ts", "last_ts", "state", "asked", "advertised", "client_ids",
                 "client_ip", "requests", "responses", "host", "waiting")
    gaps = gap_bytes = 0            # a regular connection has no hole, and starts with its handshake
    midstream = False

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
        self.waiting: Waiting | None = None     # a decoder checking the responses' rule itself (see Waiting)


class Waiting:
    """The correlation ids a connection's requests wait on, as the rule that a regular connection's every
    response answers a waiting request counts them: every request whose header can be paired by (see
    :class:`~kafkalab.protocol.correlation.Asked`), whether it expects a response or not (that takes its
    body: Produce with acks=0), at most ``MAX_WAITING`` (the oldest forgotten). Pass 1 applies the rule
    (``Streams._answers``), or a decoder, which knows the headers anyway, as it pairs."""

    __slots__ = ("ids",)

    def __init__(self) -> None:
        self.ids: dict[int, None] = {}          # an ordered set

    def asked(self, correlation_id: int) -> None:
        """A request with a header that can be paired by."""
        ids = self.ids
        ids[correlation_id] = None
        if len(ids) > MAX_WAITING:              # never answered (acks=0): forget the oldest
            del ids[next(iter(ids))]

    def answers(self, correlation_id: int) -> bool:
        """Whether a response with this id answers a waiting request (which then waits no more)."""
        return self.ids.pop(correlation_id, True) is None


def streams(index, data, kafka_ports: Iterable[int]) -> tuple[list[Conn], np.ndarray, list[tuple]]:
    """The two passes over one window holding a whole capture: (connections, the connection number of each
    packet, the regular connections' frames in the order they complete; see :meth:`Streams.frames`)."""
    first = Streams(kafka_ports)
    first.classify(index, data)
    conns = first.finish()
    second = Streams(kafka_ports, conns)
    conn_of, frames, _ = second.frames(index, data)
    return conns, conn_of, frames


class Streams:
    """The streams stage over the windows of one capture, in order (see the module docstring). ``known``:
    the connections pass 1 found, with their verdicts (pass 2). ``answers=False``: pass 1 leaves the rule on
    responses (:class:`Waiting`) to the decoder, which must then apply it."""

    def __init__(self, kafka_ports: Iterable[int], known: list[Conn] | None = None, answers: bool = True) -> None:
        self.ports = np.array(sorted(set(kafka_ports)), dtype=np.int64)
        self.conns: list[Conn] = list(known or [])
        self._ids: dict[tuple[int, int], int] = {}              # (low end, high end) -> connection number
        for conn in self.conns:
            a, b = ((x << 16) | port for x, port in conn.ends)
            self._ids[(min(a, b), max(a, b))] = conn.index
        self._end0 = np.array([(c.ends[0][0] << 16) | c.ends[0][1] for c in self.conns], dtype=np.int64)
        self._base = 0                                          # packets in earlier windows
        self._directions: dict[int, Direction] = {}             # stream (2 * connection + side) -> its cutter
        self._carried = Carried()
        self._waiting: dict[int, Waiting] = {}     # connection -> its requests waiting (see Waiting)
        self._check_answers = answers

    # ------------------------------------------------------------ both passes

    def _assign(self, index) -> tuple[np.ndarray, np.ndarray]:
        """Each packet's connection number and side; connections first seen here are numbered in order."""
        a = (index.src << 16) | index.sport
        b = (index.dst << 16) | index.dport
        local, first = _connections(a, b)
        low, high = np.minimum(a, b)[first].tolist(), np.maximum(a, b)[first].tolist()
        ids = np.empty(len(first), dtype=np.int64)
        new = []
        for j, key in enumerate(zip(low, high)):
            number = self._ids.get(key)
            if number is None:
                number = self._ids[key] = len(self.conns) + len(new)
                new.append(int(first[j]))
            ids[j] = number
        if new:
            self._open(index, new)
        conn_of = ids[local]
        return conn_of, (a != self._end0[conn_of]).astype(np.int64)

    def _open(self, index, at: list[int]) -> None:
        where = np.array(at, dtype=np.int64)
        on_port = (np.isin(index.sport[where], self.ports) | np.isin(index.dport[where], self.ports)).tolist()
        flags = index.flags[where].tolist()
        for p, kafka_port, flag in zip(at, on_port, flags):
            conn = Conn(len(self.conns), _end(index.src, index.sport, p), _end(index.dst, index.dport, p),
                        kafka_port)
            # the client: the side the first SYN names, else the Kafka port's other end
            conn.client = (1 if flag & ACK else 0) if flag & SYN else (0 if index.dport[p] in self.ports else 1)
            conn.first_ts = int(index.ts_ns[p]) / 1e9
            self.conns.append(conn)
        self._end0 = np.concatenate([self._end0, (index.src[where] << 16) | index.sport[where]])
        self._carried.grow(len(self.conns), self._base + where)

    def _direction(self, stream: int) -> Direction:
        direction = self._directions.get(stream)
        if direction is None:
            direction = self._directions[stream] = Direction()
        return direction

    # ------------------------------------------------------------ pass 1

    def classify(self, index, data, frames: list | None = None) -> np.ndarray:
        """Pass 1 over one window: connections, counters, and what makes a connection irregular; returns each
        packet's connection number. With ``frames``, the frames of the connections regular so far are cut
        into it as :meth:`frames` would (a reader that keeps the windows need not cut them again nor number
        their packets' connections: see ``cut`` there)."""
        n = len(index)
        if not n:
            return np.zeros(0, dtype=np.int64)
        conn_of, side = self._assign(index)
        stream = conn_of * 2 + side
        carried = self._carried
        position = self._base + np.arange(n)
        carried.check(index, conn_of, stream, position)
        _count(self.conns, index, conn_of, stream)
        bad = carried.bad
        length = index.payload_length
        cut: list = [] if frames is None else frames
        start = len(cut)
        order = stable_order(stream)
        sorted_streams = stream[order]
        present = _distinct(sorted_streams)
        bounds = np.searchsorted(sorted_streams, np.append(present, present[-1] + 1))
        for j, s in enumerate(present.tolist()):
            c = s >> 1
            if bad[c] or not self.conns[c].kafka_port:
                continue
            packets = order[bounds[j]:bounds[j + 1]]
            packets = packets[length[packets] > 0]
            if len(packets) and not self._direction(s).walk(data, index, packets, self.conns[c], s & 1, cut):
                bad[c] = True
        cut[start:] = sorted(cut[start:], key=_POSITION)          # stable: a packet's frames in stream order
        if self._check_answers:
            self._answers(cut, start, data, bad)
        self._base += n
        return conn_of

    def _answers(self, frames: list, start: int, data, bad: np.ndarray) -> None:
        """A connection whose server sends a response no request of it is waiting for (by correlation id) is
        not regular: such a response may have to wait for the connection's next request to be read (see
        ``KafkaSession._hold_unpaired``), which the general path does."""
        waiting_of = self._waiting
        request_head, correlation = REQUEST_HEAD.unpack_from, CORRELATION.unpack_from
        size_of = SIZE_PREFIX.unpack_from
        skip = set(np.nonzero(bad)[0].tolist())         # connections found irregular (a set: read per frame)
        for frame in islice(frames, start, None):
            conn = frame[1]
            c = conn.index
            if c in skip:
                continue
            if len(frame) == 6:                 # the header read in place (a frame's bytes: start, end)
                buf, at, size = data, frame[4] + 4, frame[5] - frame[4] - 4
            else:                               # in place too where the first segment holds it
                buf, at = span_head(data, frame[6], 12)
                size = size_of(buf, at)[0]      # the size prefix: what the frame was cut by
                at += 4
            waiting = waiting_of.get(c)
            if waiting is None:
                waiting = waiting_of[c] = Waiting()
            if frame[2] == conn.client:
                if size >= 8:
                    api_key, api_version, correlation_id = request_head(buf, at)
                    if api_key >= 0 and api_version >= 0 and correlation_id >= 0:
                        waiting.asked(correlation_id)
            elif not waiting.answers(correlation(buf, at)[0] if size >= 4 else -1):
                bad[c] = True
                skip.add(c)

    def finish(self) -> list[Conn]:
        """The end of pass 1: every connection's verdict (``irregular``) and its regular facts."""
        carried = self._carried
        bad = carried.bad.copy()
        count = len(self.conns)
        bad |= (carried.syn_count[0::2] != 1) | (carried.syn_count[1::2] != 1)
        for s, direction in self._directions.items():
            if direction.pending():
                bad[s >> 1] = True
        for c, conn in enumerate(self.conns):
            conn.irregular = bool(bad[c]) or not conn.kafka_port
            conn.state = "RST" if carried.rst_at[c] != NEVER else "FIN" if carried.any_fin[c] else "open"
        assert count == len(bad)
        return self.conns

    # ------------------------------------------------------------ pass 2

    def frames(self, index, data, cut: tuple | None = None) -> tuple[np.ndarray, list[tuple], list[int]]:
        """Pass 2 over one window: (each packet's connection number, the regular connections' frames completed
        in this window in the order they complete, the positions of the irregular connections' packets).
        Positions count from the window's first packet. A frame is (packet position, connection, side, stream
        offset, start, end) with its bytes at data[start:end], or (packet position, connection, side, stream
        offset, 0, 0, span) when they span segments (see :func:`.segments.span_ranges`); the packet is the one holding
        the frame's last byte. ``cut``: (the frames pass 1 cut in this window, its packets' connection
        numbers), when it was asked to: then every window is one pass 1 kept."""
        n = len(index)
        if not n:
            return np.zeros(0, dtype=np.int64), [], []
        irregular = np.array([c.irregular for c in self.conns], dtype=bool)
        if cut is not None:                     # in packet order already (see classify)
            frames, conn_of = cut
            if irregular.any():
                frames = [frame for frame in frames if not frame[1].irregular]
            self._base += n
            return conn_of, frames, np.nonzero(irregular[conn_of])[0].tolist()
        conn_of, side = self._assign(index)
        stream = conn_of * 2 + side
        frames: list[tuple] = []
        regular = ~irregular[conn_of] & (index.payload_length > 0)
        where = np.nonzero(regular)[0]
        order = where[stable_order(stream[where])]
        sorted_streams = stream[order]
        if len(order):
            present = _distinct(sorted_streams)
            bounds = np.searchsorted(sorted_streams, np.append(present, present[-1] + 1))
            for j, s in enumerate(present.tolist()):
                self._direction(s).walk(data, index, order[bounds[j]:bounds[j + 1]], self.conns[s >> 1], s & 1,
                                        frames)
        frames.sort(key=_POSITION)                              # stable: a packet's frames stay in stream order
        self._base += n
        return conn_of, frames, np.nonzero(irregular[conn_of])[0].tolist()


def _count(conns: list[Conn], index, conn_of: np.ndarray, stream: np.ndarray) -> None:
    """Add one window's packets to the connections' counters."""
    present = np.flatnonzero(np.bincount(conn_of))             # the connections present, in order
    count = int(present[-1]) + 1
    packets = np.bincount(stream, minlength=2 * count).tolist()
    payload = np.bincount(stream, weights=index.payload_length, minlength=2 * count).astype(np.int64).tolist()
    last_ns = np.zeros(count, dtype=np.int64)
    np.maximum.at(last_ns, conn_of, index.ts_ns)
    for c in present.tolist():
        conn = conns[c]
        conn.packets = [conn.packets[0] + packets[2 * c], conn.packets[1] + packets[2 * c + 1]]
        conn.payload_bytes = [conn.payload_bytes[0] + payload[2 * c], conn.payload_bytes[1] + payload[2 * c + 1]]
        conn.last_ts = max(conn.last_ts, int(last_ns[c]) / 1e9)


def _distinct(ordered: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``np.unique`` without its sort)."""
    if not len(ordered):
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


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


def _end(ips: np.ndarray, ports: np.ndarray, at: int) -> tuple[int, int]:
    return int(ips[at]), int(ports[at])


def _dotted(value: int) -> str:
    return socket.inet_ntoa(value.to_bytes(4, "big"))
