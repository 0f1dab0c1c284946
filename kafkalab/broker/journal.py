"""The frame journal: every request and response the broker saw or sent, in a bounded ring.

The hot path only appends a small entry (raw bytes, timestamp, connection, api key/version, partner link);
decoding into :class:`~kafkalab.dissect.frame.Frame` objects (full record batches, topics, errors, summary)
happens when someone looks (``frames``, ``frame(n)``, ``table()``), and is cached per entry. The ring is
bounded by a frame count and by raw bytes; the oldest entries go first. Appends come from the server thread,
reads from any thread: a lock guards the ring. ``write_pcap`` replays the ring as a capture: one synthetic TCP
connection per broker connection, between the real endpoints, each frame a TCP send at its journal time.
"""
from __future__ import annotations

import threading
from collections import deque

from kafkalab.dissect.frame import Frame, frame_from_message
from kafkalab.dissect.frames_table import frames_table
from kafkalab.pcap import TcpPcapWriter
from kafkalab.protocol import DecodeError, ProtocolError, decode_request, decode_response


class JournalEntry:
    __slots__ = ("number", "ts", "stream", "src", "dst", "kind", "raw", "api_key", "api_version", "client_id",
                 "partner", "latency_ms", "cached", "notes")

    def __init__(self, number, ts, stream, src, dst, kind, raw, api_key, api_version, client_id=None):
        self.number, self.ts, self.stream, self.src, self.dst = number, ts, stream, src, dst
        self.kind, self.raw, self.api_key, self.api_version, self.client_id = kind, raw, api_key, api_version, client_id
        self.partner: JournalEntry | None = None
        self.latency_ms: float | None = None
        self.cached: Frame | None = None
        self.notes: list[str] | None = None     # what the lab controls did to this frame (diagnostics)


class Journal:
    def __init__(self, max_frames: int = 10_000, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self._ring: deque[JournalEntry] = deque()
        self._bytes = 0
        self._count = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ring)

    def _add(self, entry: JournalEntry) -> JournalEntry:
        with self._lock:
            self._ring.append(entry)
            self._bytes += len(entry.raw)
            while self._ring and (len(self._ring) > self.max_frames or self._bytes > self.max_bytes):
                self._bytes -= len(self._ring.popleft().raw)
        return entry

    def _next(self) -> int:
        self._count += 1
        return self._count

    def request(self, ts: float, stream: int, src: str, dst: str, raw: bytes, api_key: int, api_version: int,
                client_id: str | None) -> JournalEntry:
        return self._add(JournalEntry(self._next(), ts, stream, src, dst, "request", raw, api_key, api_version,
                                      client_id))

    def response(self, request: JournalEntry, ts: float, raw: bytes) -> JournalEntry:
        entry = JournalEntry(self._next(), ts, request.stream, request.dst, request.src, "response", raw,
                             request.api_key, request.api_version, request.client_id)
        entry.partner, request.partner = request, entry
        entry.latency_ms = request.latency_ms = max(0.0, (ts - request.ts) * 1000.0)
        return self._add(entry)

    # --- reading ----------------------------------------------------------------------------------------

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._ring)

    def frames(self) -> list[Frame]:
        return [self._frame(e) for e in self.entries()]

    def frame(self, number: int) -> Frame:
        for entry in self.entries():
            if entry.number == number:
                return self._frame(entry)
        raise KeyError(f"frame {number} is not in the journal (it holds {self.span()})")

    def span(self) -> str:
        entries = self.entries()
        return f"frames {entries[0].number}..{entries[-1].number}" if entries else "no frames"

    def table(self):
        return frames_table(self.frames())

    def write_pcap(self, path_or_file) -> int:
        """The journal as a pcap (Ethernet/IP/TCP, nanosecond timestamps): a handshake before each connection's
        first journaled frame, every frame sent by its side at its journal time, a FIN exchange after the
        connection's last one. Returns the number of Kafka frames written."""
        return write_tcp_pcap(self.entries(), path_or_file)

    def _frame(self, entry: JournalEntry) -> Frame:
        frame = entry.cached
        if frame is None:
            frame = entry.cached = _decode_entry(entry)
        partner = entry.partner
        if partner is not None:
            if entry.kind == "request":
                frame.response_frame = partner.number
            else:
                frame.request_frame = partner.number
            frame.latency_ms = entry.latency_ms
        for note in entry.notes or ():
            if note not in frame.diagnostics:
                frame.diagnostics.append(note)
        return frame


def write_tcp_pcap(frames, path_or_file) -> int:
    """Frames (journal entries or :class:`Frame` objects: ``ts``, ``stream``, ``src``, ``dst``, ``kind``,
    ``raw``) as a pcap, in the order given: a handshake before each connection's first frame, every frame sent
    by its side at its time, a FIN exchange after the connection's last one. Returns the number written."""
    frames = list(frames)
    last = {f.stream: i for i, f in enumerate(frames)}
    connections: dict[int, object] = {}
    with TcpPcapWriter(path_or_file) as writer:
        for i, f in enumerate(frames):
            conn = connections.get(f.stream)
            from_client = f.kind == "request"
            if conn is None:
                client, server = (f.src, f.dst) if from_client else (f.dst, f.src)
                conn = connections[f.stream] = writer.open_connection(parse_endpoint(client), parse_endpoint(server),
                                                                      f.ts)
            writer.send(conn, from_client, f.raw, f.ts)
            if i == last[f.stream]:
                writer.close(conn, f.ts)
    return len(frames)


def parse_endpoint(text: str) -> tuple[str, int]:
    """("127.0.0.1", 9092) from "127.0.0.1:9092", ("::1", 9092) from "[::1]:9092"."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def _decode_entry(entry: JournalEntry) -> Frame:
    try:
        return _decode_known(entry)
    except Exception as exc:  # noqa: BLE001 - peer bytes never break the journal
        return Frame(frame=entry.number, ts=entry.ts, stream=entry.stream, src=entry.src, dst=entry.dst,
                     kind=entry.kind, api_key=entry.api_key, api_name=f"Unknown({entry.api_key})",
                     api_version=entry.api_version, correlation_id=-1, client_id=entry.client_id,
                     size=len(entry.raw) - 4, summary=f"undecodable {entry.kind}",
                     diagnostics=[f"malformed: {exc}"], raw=entry.raw)


def _decode_known(entry: JournalEntry) -> Frame:
    common = dict(number=entry.number, ts=entry.ts, stream=entry.stream, src=entry.src, dst=entry.dst)
    if entry.kind == "request":
        try:
            message = decode_request(entry.raw)
        except ProtocolError:
            message = decode_request(entry.raw, annotate=True)
            message.tree = None        # built again lazily by Frame.tree
        return frame_from_message(message, entry.raw, **common)
    try:
        message = decode_response(entry.raw, entry.api_key, entry.api_version)
    except (DecodeError, ProtocolError):
        message = decode_response(entry.raw, entry.api_key, entry.api_version, annotate=True)
        message.tree = None
    return frame_from_message(message, entry.raw, client_id=entry.client_id, **common)
