"""Whether a connection's packets are regular, judged a window of the packet index at a time (part of the
streams stage, see :mod:`.streams`).

Owns: the TCP tests of a regular connection (both directions open with one SYN, every data segment follows
the previous one exactly, no acknowledgement covers bytes the capture did not see, no byte after a FIN or
RST, a SYN on known addresses only as an exact repeat) and what they carry across windows (:class:`Carried`).
Each test is a numpy expression over the window's packets: exclusive sums of payload lengths per direction,
plus the bytes earlier windows carried, give each segment's expected sequence number and what each
acknowledgement may cover. Must not know frames or Kafka.
"""
from __future__ import annotations

import numpy as np

SEQ_MOD = 1 << 32
HALF = 1 << 31
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
NEVER = np.iinfo(np.int64).max


class NotRegular(Exception):
    """The capture reuses a connection's addresses for a new connection: the general path numbers it."""


class Carried:
    """Pass 1's facts carried across windows, per stream (2 * connection + side) and per connection."""

    def __init__(self) -> None:
        self.first_syn = np.zeros(0, dtype=np.int64)        # per stream: position of its first SYN
        self.syn_seq = np.zeros(0, dtype=np.int64)          # ... that SYN's sequence number
        self.syn_count = np.zeros(0, dtype=np.int64)
        self.fin_at = np.zeros(0, dtype=np.int64)           # ... position of its first FIN
        self.delivered = np.zeros(0, dtype=np.int64)        # ... payload bytes sent so far
        self.rst_at = np.zeros(0, dtype=np.int64)           # per connection: position of its first RST
        self.any_fin = np.zeros(0, dtype=bool)
        self.first_data = np.zeros(0, dtype=np.int64)       # ... of its first payload byte
        self.first_end = np.zeros(0, dtype=np.int64)        # ... of its first FIN or RST
        self.first_packet = np.zeros(0, dtype=np.int64)
        self.bad = np.zeros(0, dtype=bool)

    def grow(self, count: int, first_packets: np.ndarray) -> None:
        more = count - len(self.rst_at)
        for name in ("first_syn", "fin_at"):
            setattr(self, name, np.concatenate([getattr(self, name), np.full(2 * more, NEVER, dtype=np.int64)]))
        for name in ("syn_seq", "syn_count", "delivered"):
            setattr(self, name, np.concatenate([getattr(self, name), np.zeros(2 * more, dtype=np.int64)]))
        for name in ("rst_at", "first_data", "first_end"):
            setattr(self, name, np.concatenate([getattr(self, name), np.full(more, NEVER, dtype=np.int64)]))
        self.any_fin = np.concatenate([self.any_fin, np.zeros(more, dtype=bool)])
        self.bad = np.concatenate([self.bad, np.zeros(more, dtype=bool)])
        self.first_packet = np.concatenate([self.first_packet, first_packets])

    def check(self, index, conn_of, stream, position) -> None:
        """The regularity tests on one window's packets, given what earlier windows carried; then carry."""
        flags, length, seq = index.flags, index.payload_length, index.seq
        streams, conns = len(self.first_syn), len(self.rst_at)
        n = len(stream)
        syn, fin, rst = (flags & SYN) != 0, (flags & FIN) != 0, (flags & RST) != 0
        first_syn = np.minimum(self.first_syn, _first(stream, syn, streams, position))
        new_syn = (first_syn != self.first_syn)
        if new_syn.any():
            at = np.searchsorted(position, first_syn[new_syn])
            self.syn_seq[new_syn] = seq[at]
        self.first_syn = first_syn
        fin_at = self.fin_at = np.minimum(self.fin_at, _first(stream, fin, streams, position))
        rst_at = self.rst_at = np.minimum(self.rst_at, _first(conn_of, rst, conns, position))
        self.first_data = np.minimum(self.first_data, _first(conn_of, length > 0, conns, position))
        self.first_end = np.minimum(self.first_end, _first(conn_of, fin | rst, conns, position))
        self.any_fin[conn_of[fin]] = True
        bad = self.bad
        reopened = syn & ((flags & ACK) == 0) & (position != self.first_packet[conn_of])
        if reopened.any():                                  # a SYN again: a repeat, or a new connection
            self._reopened(index, conn_of, stream, position, np.nonzero(reopened)[0])
        self.syn_count += np.bincount(stream[syn], minlength=streams)
        bad[conn_of[syn & (length > 0)]] = True
        base = (self.syn_seq + 1) % SEQ_MOD
        sending = (length > 0) | fin
        bad[conn_of[sending & ((first_syn[stream] >= position) | (position > fin_at[stream])
                               | (position > rst_at[conn_of]))]] = True
        delivered = self.delivered[stream] + _delivered_before(stream, length, streams)
        expected = (base[stream] + delivered) % SEQ_MOD     # a FIN too: bytes lost just before it are a hole
        bad[conn_of[sending & ~syn & (seq != expected)]] = True
        peer = stream ^ 1
        acked = ((flags & ACK) != 0) & (first_syn[peer] < position) & (fin_at[peer] >= position) & \
            (rst_at[conn_of] >= position)
        peer_delivered = self.delivered[peer] + _peer_delivered(stream, length, np.arange(n), acked)
        delta = (index.ack - base[peer] - peer_delivered + HALF) % SEQ_MOD - HALF
        bad[conn_of[acked & (delta > 0)]] = True
        self.delivered += np.bincount(stream, weights=length, minlength=streams).astype(np.int64)

    def _reopened(self, index, conn_of, stream, position, where: np.ndarray) -> None:
        """A SYN on known addresses: an exact repeat of the direction's own SYN, on a Kafka port, before any
        data, FIN or RST, is harmless (the connection goes to the general path); anything else may open a new
        connection there, which would change the numbering of every later connection."""
        for i in where.tolist():
            c, s, p = int(conn_of[i]), int(stream[i]), int(position[i])
            if (self.first_data[c] < p or self.first_end[c] < p or self.first_syn[s] >= p
                    or int(index.seq[i]) != int(self.syn_seq[s])):
                raise NotRegular
            self.bad[c] = True


def _first(group: np.ndarray, mask: np.ndarray, count: int, position: np.ndarray) -> np.ndarray:
    """Per group, the position of its first packet where ``mask`` holds (NEVER when none). ``position``:
    increasing (packet order), so the first is the least (found without sorting the groups)."""
    out = np.full(count, NEVER, dtype=np.int64)
    where = np.nonzero(mask)[0]
    np.minimum.at(out, group[where], position[where])
    return out


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``, by a radix sort where the keys fit 16 bits (stream and connection
    numbers, whose stable order a window's every pass needs): many times faster than the merge sort numpy
    uses for 64-bit keys, and the same order (a stable order is the one order of its keys)."""
    if len(keys) and 0 <= keys.min() and keys.max() < 1 << 16:
        keys = keys.astype(np.uint16)
    return np.argsort(keys, kind="stable")


def _delivered_before(stream: np.ndarray, length: np.ndarray, count: int) -> np.ndarray:
    """Per packet, the payload bytes its direction sent before it (in the window)."""
    order = stable_order(stream)
    running = np.cumsum(length[order]) - length[order]
    starts = np.searchsorted(stream[order], np.arange(count))
    stream_base = np.concatenate([running, [0]])[starts]
    out = np.empty(len(stream), dtype=np.int64)
    out[order] = running - stream_base[stream[order]]
    return out


def _peer_delivered(stream, length, position, asking) -> np.ndarray:
    """Per packet (where ``asking``), the payload bytes the other direction had sent before it (in the
    window). ``position``: increasing (packet order), so that ordering by stream then position is ordering
    by stream, stably."""
    out = np.zeros(len(stream), dtype=np.int64)
    if not asking.any():
        return out
    order = stable_order(stream)
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
