"""Kafka over one TCP connection: frames cut from each direction, decoded, paired, or inferred.

Owns: which side is the client (handshake, then Kafka ports, then the side whose first bytes hold a whole
request that decodes, which the bytes wait for: see ``_undecided_data``),
whether the connection carries Kafka at all (known port, or a plausible request answered by a response with
the same correlation id: until then frames are held back), the two :class:`FrameCutter`s, the requests in
flight (the rules of :mod:`kafkalab.protocol.correlation`), and turning cut frames into :class:`Frame`s.
Must not know TCP sequence numbers (it gets ordered bytes and gaps) nor frame numbering (its caller numbers
frames as they are emitted).
"""
from __future__ import annotations

import struct

from kafkalab.dissect import decoding
from kafkalab.dissect.frame import Frame, build_frame
from kafkalab.pcap import endpoint
from kafkalab.protocol import Response
from kafkalab.protocol.correlation import (API_VERSIONS, Asked, advertised_ranges, expects_response, fits,
                                           infer_response, inference_tiers)

from .connection import Connection, Endpoint
from .framing import CutFrame, FrameCutter
from .plausible import (MAX_RESYNC_FRAME, REQUEST_START, RESPONSE_START, plausible_request, request_header_ok,
                        response_head)
from .reassembly import DataReceived, GapDetected, StreamEnded

_KEEP_MESSAGES = frozenset({-1, 18})     # unknown API, ApiVersions
MIDSTREAM_NOTE = "capture started mid-connection (this direction's earlier bytes were not captured)"
PROBE_LIMIT = 1 << 20            # bytes examined on a non-Kafka port before giving up
PROBE_SILENT = 256 << 10         # ... or before giving up on a connection in which no frame could be cut
DECIDE_BYTES = 64 << 10          # bytes that may wait for a connection's roles to be known
HOLD_LIMIT = 64                  # frames that may wait behind a response whose request was lost
_CORRELATION = struct.Struct(">i")


class KafkaSession:
    def __init__(self, connection: Connection, kafka_port: bool, host_requests: dict,
                 topic_names: dict | None = None) -> None:
        self.connection = connection
        self.kafka = True if kafka_port else None       # None: still probing
        # what the connection asked (kafkalab.protocol.correlation): requests waiting for their response
        # (correlation id -> request Frame) and the (api_key, api_version) pairs used, in order of first use
        self.asked = Asked()
        self.in_flight: dict[int, Frame] = self.asked.in_flight
        self.cutters: dict[Endpoint, FrameCutter] = {}
        self.held: list[Frame] = []
        self.probed = 0
        self.requests_seen: dict[tuple[int, int], None] = self.asked.pairs
        self.advertised: list[tuple[int, int]] = []
        self.host_requests = host_requests          # client ip -> {(api_key, api_version): None}, capture-wide
        self.topic_names = {} if topic_names is None else topic_names   # topic id -> name, capture-wide
        self.client_ids: list[str] = []
        self.frames_sent = {e: 0 for e in connection.endpoints}
        self.names = {e: endpoint(*e) for e in connection.endpoints}
        first, second = connection.endpoints
        self.peer = {first: second, second: first}
        self._sides: dict[Endpoint, tuple[FrameCutter, bool]] = {}     # sender -> (its cutter, is it the client)
        self.first_bytes: dict[Endpoint, bytes] = {}     # sender -> its first bytes (to say what a stream is)
        # roles unknown (no handshake, no Kafka port): bytes wait for evidence (see _undecided_data)
        unknown = connection.client is None and not kafka_port
        self._waiting: list[tuple] | None = [] if unknown else None
        self._scans: dict[Endpoint, list] = {}          # sender -> [its first bytes, next offset to scan]
        self._cut_any = False                           # has any frame been cut (probing gives up sooner if not)
        # frames held back behind a response whose request was lost and which fits nothing this connection
        # asked so far: its next request may say what it was (see _hold_unpaired)
        self._deferred: list | None = None
        self._guessed: dict[int, tuple] = {}            # held frame (by id) -> (cut frame, sender, ts), probing

    def silence_note(self) -> str | None:
        """What to tell a user about a connection whose bytes gave no Kafka frame, at the end of the capture
        (before :meth:`finish`). On a Kafka port: most often TLS (an SSL or SASL_SSL listener), else
        something that is not Kafka at all. Elsewhere: only when it held requests that read as Kafka but were
        never answered (what would have confirmed it), with the option that names its port."""
        conn = self.connection
        client = conn.client if conn.client is not None else conn.endpoints[0]
        server = conn.other(client)
        where = f"stream {conn.index} ({endpoint(*client)} → {endpoint(*server)})"
        requests = [f for f in self.held if f.kind == "request" and f.api_key >= 0] if self.kafka is None else []
        if requests:
            return (f"{where}: {len(requests)} unanswered request(s) that read as Kafka ({requests[0].summary}) on "
                    f"a port not known for Kafka; to decode them, name the port (-p {server[1]}, "
                    f"ports=[{server[1]}])")
        if self.kafka is not True or any(self.frames_sent.values()) or not self.first_bytes:
            return None
        sent = sum(conn.payload_bytes.values())
        heads = list(self.first_bytes.values())
        if any(_looks_like_tls(head) for head in heads):
            return (f"{where}: TLS, not plain Kafka (an SSL or SASL_SSL listener?): its {sent} bytes cannot be "
                    f"decoded without the session keys")
        return f"{where}: no Kafka frame in {sent} bytes on a Kafka port (starts {heads[0].hex(' ')})"

    # ------------------------------------------------------------ roles

    def _client(self, sender: Endpoint, data: bytes) -> Endpoint:
        conn = self.connection
        if conn.client is None:
            looks_like_request = bool(request_header_ok(data, 0)) if len(data) >= 14 else False
            conn.client = sender if looks_like_request else conn.other(sender)
        return conn.client

    def _undecided_data(self, sender: Endpoint, offset: int, data: bytes, ts: float) -> list[Frame] | None:
        """Bytes of a connection whose roles nothing has named yet (no handshake, no Kafka port: a capture
        that starts mid-connection on another port). The first bytes of either side may be the middle of a
        frame, and a response's header can read as a request's, so the bytes wait until one side holds a
        whole request that decodes (that side is the client) or ``DECIDE_BYTES`` have come; then they are
        replayed. Returns None when the roles are known (nothing waits)."""
        if not self._roles_unknown():
            return None
        self._waiting.append((sender, offset, data, ts))
        scan = self._scans.get(sender)
        if scan is None:
            scan = self._scans[sender] = [bytearray(), 0]
        buf = scan[0]
        if len(buf) < DECIDE_BYTES:
            buf += data[:DECIDE_BYTES - len(buf)]
            start, limit = scan[1], len(buf) - 13      # below limit, the 14 bytes a header check needs
            pos = start
            while (match := REQUEST_START.search(buf, pos)) is not None and match.start() < limit:
                pos = match.start()
                if request_header_ok(buf, pos) and plausible_request(buf, pos):
                    return self._decide(sender)
                pos += 1
            scan[1] = max(start, limit)
        if sum(len(b) for b, _ in self._scans.values()) >= DECIDE_BYTES:
            return self._decide(None)
        return []

    def _roles_unknown(self) -> bool:
        if self._waiting is not None and not self._waiting and self.connection.client is not None:
            self._waiting = None                # the handshake named them before any byte had to wait
        return self._waiting is not None

    def _decide(self, client: Endpoint | None) -> list[Frame]:
        """Name the client (None: by the first bytes, as when nothing better is known) and replay what
        waited."""
        waiting, self._waiting, self._scans = self._waiting or [], None, {}
        if client is not None:
            self.connection.client = client
        self.probed -= sum(len(data) for _, _, data, _ in waiting)      # counted again as they are replayed
        frames: list[Frame] = []
        for sender, offset, data, ts in waiting:
            frames.extend(self.data(sender, offset, data, ts))
        return frames

    def _cutter(self, sender: Endpoint, is_client: bool) -> FrameCutter:
        cutter = self.cutters.get(sender)
        if cutter is None:
            half = self.connection.halves[sender]
            plausible, starts = (plausible_request, REQUEST_START) if is_client else \
                (self._plausible_response, RESPONSE_START)
            cutter = self.cutters[sender] = FrameCutter(plausible, synced=not half.midstream, starts=starts)
            if half.midstream:
                cutter.note(MIDSTREAM_NOTE)
        return cutter

    def _plausible_response(self, buf, pos: int) -> bool | None:
        head = response_head(buf, pos)
        if head is None:
            return None
        size, correlation_id = head
        if size < 4 or size > MAX_RESYNC_FRAME or correlation_id < 0:
            return False
        if correlation_id in self.in_flight:
            return True
        if not self.requests_seen:             # nothing to judge by (a capture starting mid-connection)
            return not self.in_flight
        # Its request may have been lost too: then it must read exactly as an answer to one of the
        # (API, version) pairs this connection has used (it will be decoded as an inferred response).
        if len(buf) - pos < 4 + size:
            return None
        raw = bytes(buf[pos:pos + 4 + size])
        return any(_fits_exactly(raw, key, version) for key, version in self.requests_seen)

    # ------------------------------------------------------------ events

    def event(self, sender: Endpoint, event, ts: float) -> list[Frame]:
        if self.kafka is False:
            return []
        if isinstance(event, DataReceived):
            return self.data(sender, event.offset, event.data, ts)
        if self._roles_unknown():           # a gap or the end: decide with what there is, then handle it
            return self._decide(None) + self.event(sender, event, ts)
        if isinstance(event, StreamEnded):
            cutter = self.cutters.get(sender)
            if cutter is not None:
                is_client = self.connection.client == sender
                return self._frames(cutter.finish(), sender, is_client, ts)
            return []
        if isinstance(event, GapDetected):
            conn = self.connection
            if conn.client is None:     # cannot happen: a half's first segment is delivered, naming the roles
                return []
            is_client = conn.client == sender
            return self._frames(self._cutter(sender, is_client).gap(event.offset, event.length), sender,
                                is_client, ts)
        return []

    def data(self, sender: Endpoint, offset: int, data: bytes, ts: float) -> list[Frame]:
        """In-order bytes from ``sender`` at stream ``offset``: the frames they complete."""
        if self.kafka is not True:
            if self.kafka is False:
                return []
            self.probed += len(data)
            if self.probed > PROBE_LIMIT or (self.probed > PROBE_SILENT and not self._cut_any
                                             and self._waiting is None):
                return self._give_up()
        side = self._sides.get(sender)
        if side is None:
            waited = self._undecided_data(sender, offset, data, ts)
            if waited is not None:
                return waited
            is_client = self._client(sender, data) == sender
            side = self._sides[sender] = (self._cutter(sender, is_client), is_client)
            self.first_bytes.setdefault(sender, bytes(data[:8]))
        cut = side[0].data(offset, data)
        return self._frames(cut, sender, side[1], ts) if cut else []

    def finish(self) -> list[Frame]:
        """End of capture: frames held while probing are dropped unless the connection proved to be Kafka;
        frames held behind a response to infer are inferred with what is known and released."""
        self.held, self._guessed = [], {}
        return self._release()

    def _give_up(self) -> list[Frame]:
        self.kafka = False
        self.held, self._guessed = [], {}
        self.cutters = {}
        self._sides = {}
        return []

    def _frames(self, cut: list[CutFrame], sender: Endpoint, is_client: bool, ts: float) -> list[Frame]:
        self._cut_any = self._cut_any or bool(cut)
        decode = self._request if is_client else self._response
        if self.kafka is True:
            if self._deferred is None:
                frames = [decode(piece, sender, ts) for piece in cut]
                if not any(isinstance(frame, _Unpaired) for frame in frames):
                    return frames
                self._deferred, frames = frames, []
            else:
                frames = [decode(piece, sender, ts) for piece in cut]
                self._deferred.extend(frames)
            return self._release() if (is_client and frames) or len(self._deferred) > HOLD_LIMIT else []
        out: list[Frame] = []
        for piece in cut:
            frame = decode(piece, sender, ts)
            if self.kafka is None:
                if not self._probe(frame, is_client):
                    return self._give_up()
                self.held.append(frame)
                if frame.inferred:
                    self._guessed[id(frame)] = (piece, sender, ts)
                if self.kafka:
                    out.extend(self._confirmed())
            else:
                out.append(frame)
        return out

    def _confirmed(self) -> list[Frame]:
        """The frames held while probing, now that the connection is known to be Kafka: responses inferred
        before the requests that came after them were seen are inferred again (see ``_hold_unpaired``)."""
        held, guessed, self.held, self._guessed = self.held, self._guessed, [], {}
        for piece, sender, ts in guessed.values():
            self.frames_sent[sender] -= 1               # counted again as they are inferred again
        return [self._infer(*guessed[id(f)]) if id(f) in guessed else f for f in held]

    def _probe(self, frame: Frame, is_client: bool) -> bool:
        """While probing a non-Kafka port: False rules the connection out; a clean pair confirms it."""
        if is_client:
            return frame.api_key >= 0 and not _malformed(frame)
        if frame._request is not None and not _malformed(frame):
            self.kafka = True
            return True
        return frame.api_key >= 0 or not self.held

    # ------------------------------------------------------------ decoding

    def _request(self, piece: CutFrame, sender: Endpoint, ts: float) -> Frame:
        message = decoding.request(piece.raw)
        frame = self._frame(message, piece, sender, ts, None, False)
        api_key, api_version = message.api_key, message.api_version
        if self.asked.request(api_key, api_version, message.correlation_id,
                              expects_response(api_key, message.body), frame):
            host = self.host_requests.get(sender[0])
            if host is None:
                host = self.host_requests[sender[0]] = {}
            host[(api_key, api_version)] = None
        client_id = message.client_id
        if client_id and client_id not in self.client_ids:
            self.client_ids.append(client_id)
        return frame

    def _response(self, piece: CutFrame, sender: Endpoint, ts: float) -> Frame:
        raw = piece.raw
        correlation_id = _CORRELATION.unpack_from(raw, 4)[0] if len(raw) >= 8 else -1
        request = self.asked.response(correlation_id)
        if request is None:
            return _Unpaired(piece, sender, ts) if self._hold_unpaired(raw) else self._infer(piece, sender, ts)
        message = decoding.response(raw, request.api_key, request.api_version)
        frame = self._frame(message, piece, sender, ts, request.client_id, False)
        frame._request = request
        self._learn(message)
        return frame

    def _learn(self, message) -> None:
        if message.api_key == API_VERSIONS and message.body:
            self.advertised.extend(advertised_ranges(message.body))

    def _infer(self, piece: CutFrame, sender: Endpoint, ts: float) -> Frame:
        raw = piece.raw
        correlation_id = _CORRELATION.unpack_from(raw, 4)[0] if len(raw) >= 8 else -1
        client = self.connection.other(sender)
        message, inferred = unpaired_response(raw, correlation_id, self.requests_seen, self.advertised,
                                              self.host_requests.get(client[0], {}))
        self._learn(message)
        return self._frame(message, piece, sender, ts, None, inferred)

    def _hold_unpaired(self, raw: bytes) -> bool:
        """Hold back a response whose request was not seen when it fits nothing this connection has asked
        yet (a capture that lost a connection's first request): the connection's next request most likely
        names its API and version, so this frame and those after it on this connection wait for that request
        (at most ``HOLD_LIMIT`` frames, or the end of the capture). Without this, a lost Produce v10 request's
        response would read as the newest version the bytes fit (v12), not as the version the connection
        uses."""
        return self.kafka is True and not fits(raw, self.requests_seen)

    def _release(self) -> list[Frame]:
        """The held frames, in their order, the waiting responses inferred with what is known now."""
        held, self._deferred = self._deferred or [], None
        return [self._infer(f.piece, f.sender, f.ts) if isinstance(f, _Unpaired) else f for f in held]

    def _frame(self, message, piece: CutFrame, sender: Endpoint, ts: float, client_id: str | None,
               inferred: bool) -> Frame:
        names = self.names
        # the message is decoded again from the bytes when asked for, except where that would not give the
        # same object (inferred responses, ApiVersions and its KIP-511 fallback, undecodable frames)
        keep = inferred or message.api_key in _KEEP_MESSAGES or message.body is None
        frame = build_frame(message, piece.raw, ts, self.connection.index, names[sender], names[self.peer[sender]],
                            client_id, inferred, keep, 0, self.topic_names)
        if piece.diagnostics:
            frame.diagnostics = piece.diagnostics + frame.diagnostics
        frame.stream_offset = piece.offset
        self.frames_sent[sender] += 1
        return frame


class _Unpaired:
    """A response held back until its connection's next request (see ``KafkaSession._hold_unpaired``)."""

    __slots__ = ("piece", "sender", "ts")

    def __init__(self, piece: CutFrame, sender: Endpoint, ts: float) -> None:
        self.piece, self.sender, self.ts = piece, sender, ts


def unpaired_response(raw: bytes, correlation_id: int, requests_seen: dict, advertised: list,
                      host_seen: dict) -> tuple[Response, bool]:
    """(message, inferred) for a response whose request was not seen: inferred by trial decoding (see
    :mod:`kafkalab.protocol.correlation`); else left undecoded."""
    message, note = infer_response(raw, inference_tiers(requests_seen, advertised, host_seen))
    if message is not None:
        return message, True
    return Response(api_key=-1, api_name="", api_version=-1, correlation_id=correlation_id, body=None,
                    size=struct.unpack_from(">i", raw, 0)[0], diagnostics=[note]), False


def _fits_exactly(raw: bytes, api_key: int, api_version: int) -> bool:
    message = decoding.response(raw, api_key, api_version)
    return message.body is not None and not message.diagnostics


def _looks_like_tls(head: bytes) -> bool:
    """A TLS record header: content type 20-23 (handshake 22 first), protocol version 3.x."""
    return len(head) >= 3 and head[0] in (0x14, 0x15, 0x16, 0x17) and head[1] == 3 and head[2] <= 4


def _malformed(frame: Frame) -> bool:
    return any(d.startswith("malformed") for d in frame.diagnostics)
