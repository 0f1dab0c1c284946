"""One TCP connection: both directions' reassembly, who the client is, and per-direction statistics.

Owns the TCP-level facts of a connection (endpoints, roles from the handshake, state open/FIN/RST, bytes,
packets, gaps). Must not know Kafka. ``packet()`` turns a segment into (sender, event) pairs from
:mod:`.reassembly`; acknowledgements are passed to the *other* direction, which is how bytes the peer
acknowledged but the capture never saw become gaps right away.
"""
from __future__ import annotations

from kafkalab.pcap import ACK, FIN, RST, SYN, TcpPacket, endpoint

from .reassembly import HalfStream

Endpoint = tuple[str, int]


class Connection:
    def __init__(self, index: int, first: Endpoint, second: Endpoint, ts: float) -> None:
        self.index = index
        self.endpoints = (first, second)
        self.halves = {first: HalfStream(), second: HalfStream()}
        self.client: Endpoint | None = None
        self.syn_seq: dict[Endpoint, int] = {}
        self.first_ts = self.last_ts = ts
        self.state = "open"
        self.payload_bytes = {first: 0, second: 0}
        self.packets = {first: 0, second: 0}

    @property
    def names(self) -> dict[Endpoint, str]:
        """Each side's "ip:port"."""
        return {side: endpoint(*side) for side in self.endpoints}

    def other(self, endpoint: Endpoint) -> Endpoint:
        return self.endpoints[1] if endpoint == self.endpoints[0] else self.endpoints[0]

    @property
    def server(self) -> Endpoint | None:
        return None if self.client is None else self.other(self.client)

    def is_new_syn(self, packet: TcpPacket) -> bool:
        """A SYN (not SYN-ACK) that opens a new connection on this 5-tuple rather than repeating one."""
        if packet.flags & (SYN | ACK) != SYN:
            return False
        sender = (packet.src, packet.sport)
        if self.state != "open":
            return True
        previous = self.syn_seq.get(sender)
        if previous is not None:
            return previous != packet.seq
        return any(half.delivered for half in self.halves.values())

    def packet(self, packet: TcpPacket) -> list:
        sender = (packet.src, packet.sport)
        receiver = self.other(sender)
        half, peer = self.halves[sender], self.halves[receiver]
        self.last_ts = max(self.last_ts, packet.ts_ns / 1e9)
        self.packets[sender] += 1
        self.payload_bytes[sender] += len(packet.payload)
        flags = packet.flags
        events: list = []
        seq = packet.seq
        if flags & SYN:
            self.syn_seq.setdefault(sender, seq)
            half.syn(seq)
            if self.client is None:
                self.client = sender if not flags & ACK else receiver
            seq = (seq + 1) & 0xFFFFFFFF
        if flags & ACK and packet.payload:      # an answer: what the peer acknowledged comes first
            events.extend((receiver, e) for e in peer.peer_ack(packet.ack, answered=True))
        if packet.payload or flags & FIN:
            events.extend((sender, e) for e in half.segment(seq, packet.payload, bool(flags & FIN)))
        if flags & ACK and not packet.payload:
            events.extend((receiver, e) for e in peer.peer_ack(packet.ack))
        if flags & RST:
            self.state = "RST"
            events.extend((sender, e) for e in half.reset())
            events.extend((receiver, e) for e in peer.reset())
        elif flags & FIN and self.state == "open":
            self.state = "FIN"
        return events

    def finish(self) -> list:
        events: list = []
        for endpoint, half in self.halves.items():
            events.extend((endpoint, e) for e in half.finish())
        return events

    @property
    def gaps(self) -> int:
        return sum(h.gaps for h in self.halves.values())

    @property
    def gap_bytes(self) -> int:
        return sum(h.gap_bytes for h in self.halves.values())

    @property
    def midstream(self) -> bool:
        return any(h.midstream for h in self.halves.values())
