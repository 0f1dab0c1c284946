"""The capture pipeline as a sans-IO object: TCP packets in, numbered and paired Kafka frames out.

Owns: the connection table (5-tuple -> current :class:`Connection`, a new one when a fresh SYN reuses a
5-tuple), stream numbering (order of first packet, every TCP connection counted as tshark counts them),
frame numbering (order of completion) and linking each response to its request. Does no I/O; the readers
in :mod:`.capture` feed it packets from files or lists.
"""
from __future__ import annotations

from typing import Iterable

from kafkalab.dissect.columns import latency_ms
from kafkalab.dissect.frame import Frame
from kafkalab.pcap import ACK, FIN, RST, SYN, TcpPacket

from .connection import Connection
from .reassembly import SEQ_MOD
from .session import KafkaSession

DEFAULT_PORTS = frozenset({9092, 9093, 9094})
_UNUSUAL = SYN | FIN | RST          # segments that change a connection's state take the general path


class Analyzer:
    def __init__(self, ports: Iterable[int] | None = None) -> None:
        self.ports = DEFAULT_PORTS | frozenset(ports or ())
        self.connections: list[Connection] = []
        self.sessions: dict[int, KafkaSession] = {}
        self._current: dict[tuple, Connection] = {}
        # (src, sport, dst, dport) -> (connection, sender, sender's half, receiver's half, session)
        self._routes: dict[tuple, tuple] = {}
        self._host_requests: dict[str, dict] = {}
        self.topic_names: dict = {}            # topic id -> name, learnt from Metadata responses and the like
        self.next_stream: int | None = None    # set by a caller that numbers streams itself (the engine)
        self.frame_count = 0
        self.packet_count = 0
        self.diagnostics: list[str] = []

    def feed(self, packet: TcpPacket) -> list[Frame]:
        self.packet_count += 1
        flags = packet.flags
        route = self._routes.get((packet.src, packet.sport, packet.dst, packet.dport))
        if route is not None and not flags & _UNUSUAL:
            # The common case, inlined: an established connection, a data and/or ACK segment.
            conn, sender, half, peer, session = route
            if session.kafka is False:          # found not to be Kafka: nothing more to reassemble
                return []
            ts = packet.ts_ns / 1e9
            if ts > conn.last_ts:
                conn.last_ts = ts
            conn.packets[sender] += 1
            payload = packet.payload
            frames = None
            if flags & ACK and (payload or peer._hole_age is not None):
                # what the peer acknowledged comes before what this packet says (Connection.packet's order)
                events = peer.peer_ack(packet.ack, answered=bool(payload))
                if events:
                    frames = self._dispatch(session, [(conn.other(sender), e) for e in events], ts)
            if payload:
                conn.payload_bytes[sender] += len(payload)
                delivered = half.delivered
                base = half.base
                if (base is not None and not half._starts and not half.ended and half.fin_offset is None
                        and (packet.seq - base - delivered) % SEQ_MOD == 0 and half._hole_age is None):
                    half.delivered = delivered + len(payload)
                    more = session.data(sender, delivered, payload, ts)
                else:
                    more = self._dispatch(session, [(sender, e) for e in half.segment(packet.seq, payload)], ts)
                if more:
                    frames = frames + more if frames else more
            elif flags & ACK and peer._hole_age is None:
                peer.peer_ack(packet.ack)       # a pure acknowledgement with no hole behind it: nothing to say
            return self._emit(frames) if frames else []
        a, b = (packet.src, packet.sport), (packet.dst, packet.dport)
        key = (a, b) if a <= b else (b, a)
        conn = self._current.get(key)
        ts = packet.ts_ns / 1e9
        if conn is None or conn.is_new_syn(packet):
            conn = self._open(key, a, b, ts, packet)
        session = self.sessions.get(conn.index)
        events = conn.packet(packet)
        if session is None or not events:
            return []
        return self._emit(self._dispatch(session, events, ts))

    @staticmethod
    def _dispatch(session: KafkaSession, events: list, ts: float) -> list[Frame]:
        frames: list[Frame] = []
        for sender, event in events:
            frames.extend(session.event(sender, event, ts))
        return frames

    def finish(self) -> list[Frame]:
        """End of input: flush every connection (held segments, final gaps)."""
        frames: list[Frame] = []
        for conn in self.connections:
            session = self.sessions.get(conn.index)
            events = conn.finish()
            if session is not None:
                for sender, event in events:
                    frames.extend(session.event(sender, event, conn.last_ts))
                note = session.silence_note()
                if note is not None:
                    self.diagnostics.append(note)
                frames.extend(session.finish())
        return self._emit(frames)

    def awaiting_response(self, frame: Frame) -> bool:
        """True while ``frame`` (a request) waits for a response that may still come."""
        session = self.sessions.get(frame.stream)
        return session is not None and session.in_flight.get(frame.correlation_id) is frame

    def _open(self, key: tuple, a, b, ts: float, packet: TcpPacket) -> Connection:
        index = len(self.connections) if self.next_stream is None else self.next_stream
        conn = Connection(index, a, b, ts)
        self.connections.append(conn)
        self._current[key] = conn
        kafka_port = packet.sport in self.ports or packet.dport in self.ports
        if kafka_port and conn.client is None and not (packet.flags & 0x02):
            conn.client = a if packet.dport in self.ports else b
        session = self.sessions[conn.index] = KafkaSession(conn, kafka_port, self._host_requests,
                                                                   self.topic_names)
        for sender, receiver in ((a, b), (b, a)):          # the fast path's view of the two directions
            self._routes[sender + receiver] = (conn, sender, conn.halves[sender], conn.halves[receiver], session)
        return conn

    def _emit(self, frames: list[Frame]) -> list[Frame]:
        for frame in frames:
            self.frame_count += 1
            frame.frame = self.frame_count
            request = frame._request
            if request is not None:
                frame._request = None
                frame.request_frame = request.frame
                request.response_frame = frame.frame
                latency = latency_ms(frame.ts - request.ts)
                frame.latency_ms = request.latency_ms = latency
        return frames
