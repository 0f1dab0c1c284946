"""The capture pipeline as a sans-IO object: TCP packets in, numbered and paired Kafka frames out.

Owns: the connection table (5-tuple -> current :class:`Connection`, a new one when a fresh SYN reuses a
5-tuple), stream numbering (order of first packet, every TCP connection counted as tshark counts them),
frame numbering (order of completion) and linking each response to its request. Does no I/O; the readers
in :mod:`.capture` feed it packets from files or lists.
"""
from __future__ import annotations

from typing import Iterable

from kafkalab.dissect.frame import Frame
from kafkalab.pcap import TcpPacket

from .connection import Connection
from .session import KafkaSession

DEFAULT_PORTS = frozenset({9092, 9093, 9094})


class Analyzer:
    def __init__(self, ports: Iterable[int] | None = None) -> None:
        self.ports = DEFAULT_PORTS | frozenset(ports or ())
        self.connections: list[Connection] = []
        self.sessions: dict[int, KafkaSession] = {}
        self._current: dict[tuple, Connection] = {}
        self._host_requests: dict[str, list] = {}
        self.frame_count = 0
        self.packet_count = 0
        self.diagnostics: list[str] = []

    def feed(self, packet: TcpPacket) -> list[Frame]:
        self.packet_count += 1
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
        frames: list[Frame] = []
        for sender, event in events:
            frames.extend(session.event(sender, event, ts))
        return self._emit(frames)

    def finish(self) -> list[Frame]:
        """End of input: flush every connection (held segments, final gaps)."""
        frames: list[Frame] = []
        for conn in self.connections:
            session = self.sessions.get(conn.index)
            events = conn.finish()
            if session is not None:
                for sender, event in events:
                    frames.extend(session.event(sender, event, conn.last_ts))
                frames.extend(session.finish())
        return self._emit(frames)

    def _open(self, key: tuple, a, b, ts: float, packet: TcpPacket) -> Connection:
        conn = Connection(len(self.connections), a, b, ts)
        self.connections.append(conn)
        self._current[key] = conn
        kafka_port = packet.sport in self.ports or packet.dport in self.ports
        if kafka_port and conn.client is None and not (packet.flags & 0x02):
            conn.client = a if packet.dport in self.ports else b
        self.sessions[conn.index] = KafkaSession(conn, kafka_port, self._host_requests)
        return conn

    def _emit(self, frames: list[Frame]) -> list[Frame]:
        for frame in frames:
            self.frame_count += 1
            frame.frame = self.frame_count
            request = frame.__dict__.pop("_request", None)
            if request is not None:
                frame.request_frame = request.frame
                request.response_frame = frame.frame
                latency = round((frame.ts - request.ts) * 1000.0, 6)
                frame.latency_ms = request.latency_ms = latency
        return frames
