"""TCP reassembly of one direction of one connection: sequence numbers in, ordered stream bytes out.

Owns: the mapping from 32-bit sequence numbers to 64-bit stream offsets (ISN from the SYN, or the first
segment seen when a capture starts mid-connection; wrap-around unwrapped against the delivery point), the
out-of-order segments held for later, retransmissions and overlaps (bytes already delivered are trimmed; the
first copy of a byte wins), FIN/RST, and deciding when missing bytes are lost for good. Must not know what
the bytes mean (Kafka lives above). Sans-IO: methods return lists of events.

Theory of operation: ``delivered`` is the stream offset of the next byte owed to the reader. A segment that
starts at or before it is trimmed and delivered, then any held segments that have become contiguous. A
segment beyond it is held (sorted by start). A hole becomes a :class:`GapDetected` when waiting cannot help:
the peer has acknowledged bytes past the hole (so the sender will not retransmit them and the capture just
missed them) and ``reorder_packets`` more of its packets (data one way, acknowledgements the other) went by without filling it, more than
``max_held`` bytes are waiting behind it, or the stream ends (FIN, RST, end of capture). The few packets of
grace are for captures whose order is not the wire's (several queues or interfaces merged, offloads): there
an acknowledgement can be recorded just before the data it acknowledges. Offsets count payload bytes only:
the SYN and FIN flags take no offset.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

SEQ_MOD = 1 << 32
HALF = 1 << 31
DEFAULT_MAX_HELD = 8 << 20
DEFAULT_REORDER_PACKETS = 4


@dataclass(frozen=True, slots=True)
class DataReceived:
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class GapDetected:
    offset: int
    length: int
    reason: str


@dataclass(frozen=True, slots=True)
class StreamEnded:
    offset: int
    reason: str          # "FIN", "RST" or "end of capture"


class HalfStream:
    """One direction's byte stream (see the module docstring)."""

    def __init__(self, max_held: int = DEFAULT_MAX_HELD, reorder_packets: int = DEFAULT_REORDER_PACKETS) -> None:
        self.max_held = max_held
        self.reorder_packets = reorder_packets
        self._hole_age: int | None = None     # packets since the peer acknowledged bytes not yet delivered
        self.base: int | None = None          # sequence number of stream offset 0
        self.midstream = False                # True when no SYN was seen before the data
        self.delivered = 0
        self.acked = 0                        # highest offset the peer acknowledged
        self.fin_offset: int | None = None
        self.ended = False
        self.gaps = 0
        self.gap_bytes = 0
        self.retransmitted_bytes = 0
        self._starts: list[int] = []          # held out-of-order segments, sorted by start
        self._held: list[bytes] = []
        self.held_bytes = 0

    # ------------------------------------------------------------ inputs

    def syn(self, seq: int) -> None:
        if self.base is None or (self.delivered == 0 and not self._starts):
            self.base = (seq + 1) % SEQ_MOD
            self.midstream = False

    def offset_of(self, seq: int) -> int:
        """The stream offset of ``seq``, unwrapped to the value nearest the delivery point."""
        expected = (self.base + self.delivered) % SEQ_MOD
        delta = (seq - expected + HALF) % SEQ_MOD - HALF
        return self.delivered + delta

    def segment(self, seq: int, payload: bytes, fin: bool = False) -> list:
        if self.ended:
            return []
        if self.base is None:
            if not payload and not fin:
                return []
            self.base, self.midstream = seq, True
        start = self.offset_of(seq)
        events: list = []
        if fin:
            self.fin_offset = start + len(payload)
        if payload:
            self._accept(start, payload, events)
        self._age_hole(events)
        self._check_end(events)
        return events

    def peer_ack(self, ack: int, answered: bool = False) -> list:
        """The other side acknowledged up to ``ack``: holes below it will never be retransmitted. ``answered``:
        the acknowledgement came with data, so the peer has moved on and the holes are given up at once
        (what it says may answer what lies behind them)."""
        if self.base is None or self.ended:
            return []
        offset = self.offset_of(ack)
        if offset > self.acked:
            self.acked = offset
        events: list = []
        if answered:
            self._give_up(events)
        else:
            self._age_hole(events)
        return events

    def reset(self) -> list:
        return self.finish("RST")

    def finish(self, reason: str = "end of capture") -> list:
        """The stream is over: deliver what is held, reporting every hole, then :class:`StreamEnded`."""
        if self.ended:
            return []
        events: list = []
        while self._starts:
            if self._starts[0] > self.delivered:
                self._skip_to(self._starts[0], f"lost segment (missing at {reason})", events)
            self._drain(events)
        end = max(self.acked, self.fin_offset or 0) if reason != "RST" else self.delivered
        if end > self.delivered and self.base is not None:
            self._skip_to(end, "lost segment at the end (acknowledged, not captured)", events)
        self.ended = True
        events.append(StreamEnded(self.delivered, reason))
        return events

    # ------------------------------------------------------------ internals

    def _accept(self, start: int, payload: bytes, events: list) -> None:
        end = start + len(payload)
        if end <= self.delivered:
            self.retransmitted_bytes += len(payload)
            return
        if start <= self.delivered:
            if start < self.delivered:
                self.retransmitted_bytes += self.delivered - start
                payload = payload[self.delivered - start:]
            self.delivered += len(payload)
            events.append(DataReceived(self.delivered - len(payload), payload))
            if self._starts:
                self._drain(events)
            return
        index = bisect.bisect_right(self._starts, start)
        self._starts.insert(index, start)
        self._held.insert(index, payload)
        self.held_bytes += len(payload)
        while self.held_bytes > self.max_held and self._starts:
            self._skip_to(self._starts[0], "lost segment (too much data waiting behind it)", events)
            self._drain(events)

    def _age_hole(self, events: list) -> None:
        """Count this packet against a hole the peer has acknowledged; past the grace, skip the holes below
        the acknowledged offset (bytes arriving later are retransmissions of what is given up)."""
        if self.acked <= self.delivered:
            self._hole_age = None
            return
        if self._hole_age is None:
            self._hole_age = 0
            return
        if self._hole_age < self.reorder_packets:
            self._hole_age += 1
            if self._hole_age < self.reorder_packets:
                return
        self._give_up(events)

    def _give_up(self, events: list) -> None:
        """Skip the holes below the acknowledged offset."""
        while self._starts and self.delivered < self._starts[0] <= self.acked:
            self._skip_to(self._starts[0], "lost segment (acknowledged, not captured)", events)
            self._drain(events)
        if self.acked <= self.delivered:
            self._hole_age = None

    def _drain(self, events: list) -> None:
        """Deliver held segments that have become contiguous with the delivery point."""
        while self._starts and self._starts[0] <= self.delivered:
            start = self._starts.pop(0)
            payload = self._held.pop(0)
            self.held_bytes -= len(payload)
            end = start + len(payload)
            if end <= self.delivered:
                self.retransmitted_bytes += len(payload)
                continue
            if start < self.delivered:
                self.retransmitted_bytes += self.delivered - start
                payload = payload[self.delivered - start:]
            self.delivered += len(payload)
            events.append(DataReceived(self.delivered - len(payload), payload))

    def _skip_to(self, offset: int, reason: str, events: list) -> None:
        if offset <= self.delivered:
            return
        events.append(GapDetected(self.delivered, offset - self.delivered, reason))
        self.gaps += 1
        self.gap_bytes += offset - self.delivered
        self.delivered = offset

    def _check_end(self, events: list) -> None:
        if self.fin_offset is not None and self.delivered >= self.fin_offset and not self._starts:
            self.ended = True
            events.append(StreamEnded(self.delivered, "FIN"))
