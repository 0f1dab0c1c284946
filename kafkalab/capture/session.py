"""Kafka over one TCP connection: frames cut from each direction, decoded, paired, or inferred.

Owns: which side is the client (handshake, then Kafka ports, then "the side whose bytes look like a request"),
whether the connection carries Kafka at all (known port, or a plausible request answered by a response with
the same correlation id: until then frames are held back), the two :class:`FrameCutter`s, the
:class:`Correlator`, and turning cut frames into :class:`Frame`s. Must not know TCP sequence numbers (it
gets ordered bytes and gaps) nor frame numbering (its caller numbers frames as they are emitted).
"""
from __future__ import annotations

import struct

from kafkalab.dissect.frame import Frame, frame_from_message
from kafkalab.pcap import endpoint
from kafkalab.protocol import DecodeError, ProtocolError, Response, decode_request, decode_response
from kafkalab.protocol.correlation import Correlator

from .connection import Connection, Endpoint
from .framing import CutFrame, FrameCutter
from .inference import infer_response
from .plausible import MAX_RESYNC_FRAME, plausible_request, request_header_ok, response_head
from .reassembly import DataReceived, GapDetected, StreamEnded

PROBE_LIMIT = 1 << 20            # bytes examined on a non-Kafka port before giving up
API_VERSIONS = 18


class KafkaSession:
    def __init__(self, connection: Connection, kafka_port: bool, host_requests: dict) -> None:
        self.connection = connection
        self.kafka = True if kafka_port else None       # None: still probing
        self.correlator = Correlator()
        self.cutters: dict[Endpoint, FrameCutter] = {}
        self.held: list[Frame] = []
        self.probed = 0
        self.requests_seen: list[tuple[int, int]] = []
        self.advertised: list[tuple[int, int]] = []
        self.host_requests = host_requests          # client ip -> [(api_key, api_version)] across the capture
        self.client_ids: list[str] = []
        self.frames_sent = {e: 0 for e in connection.endpoints}

    # ------------------------------------------------------------ roles

    def _client(self, sender: Endpoint, data: bytes) -> Endpoint:
        conn = self.connection
        if conn.client is None:
            looks_like_request = bool(request_header_ok(data, 0)) if len(data) >= 14 else False
            conn.client = sender if looks_like_request else conn.other(sender)
        return conn.client

    def _cutter(self, sender: Endpoint, is_client: bool) -> FrameCutter:
        cutter = self.cutters.get(sender)
        if cutter is None:
            half = self.connection.halves[sender]
            plausible = plausible_request if is_client else self._plausible_response
            cutter = self.cutters[sender] = FrameCutter(plausible, synced=not half.midstream)
        return cutter

    def _plausible_response(self, buf, pos: int) -> bool | None:
        head = response_head(buf, pos)
        if head is None:
            return None
        size, correlation_id = head
        if size < 4 or size > MAX_RESYNC_FRAME or correlation_id < 0:
            return False
        waiting = self.correlator.pending()
        return not waiting or any(w.correlation_id == correlation_id for w in waiting)

    # ------------------------------------------------------------ events

    def event(self, sender: Endpoint, event, ts: float) -> list[Frame]:
        if self.kafka is False:
            return []
        if isinstance(event, DataReceived):
            if self.kafka is None:
                self.probed += len(event.data)
                if self.probed > PROBE_LIMIT:
                    return self._give_up()
            is_client = self._client(sender, event.data) == sender
            cut = self._cutter(sender, is_client).data(event.offset, event.data)
            return self._frames(cut, sender, is_client, ts)
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

    def finish(self) -> list[Frame]:
        """End of capture: frames held while probing are dropped unless the connection proved to be Kafka."""
        self.held = []
        return []

    def _give_up(self) -> list[Frame]:
        self.kafka = False
        self.held = []
        self.cutters = {}
        return []

    def _frames(self, cut: list[CutFrame], sender: Endpoint, is_client: bool, ts: float) -> list[Frame]:
        out: list[Frame] = []
        for piece in cut:
            frame = self._request(piece, sender, ts) if is_client else self._response(piece, sender, ts)
            if self.kafka is None:
                if not self._probe(frame, is_client):
                    return self._give_up()
                self.held.append(frame)
                if self.kafka:
                    out.extend(self.held)
                    self.held = []
            else:
                out.append(frame)
        return out

    def _probe(self, frame: Frame, is_client: bool) -> bool:
        """While probing a non-Kafka port: False rules the connection out; a clean pair confirms it."""
        if is_client:
            return frame.api_key >= 0 and not _malformed(frame)
        if getattr(frame, "_request", None) is not None and not _malformed(frame):
            self.kafka = True
            return True
        return frame.api_key >= 0 or not self.held

    # ------------------------------------------------------------ decoding

    def _request(self, piece: CutFrame, sender: Endpoint, ts: float) -> Frame:
        try:
            message = decode_request(piece.raw)
        except (ProtocolError, ValueError):
            message = decode_request(piece.raw, annotate=True)
        frame = self._frame(message, piece, sender, ts)
        if message.api_key >= 0 and message.api_version >= 0 and message.correlation_id >= 0:
            self.correlator.request(message.api_key, message.api_version, message.correlation_id,
                                    message.client_id, token=frame, body=message.body)
            pair = (message.api_key, message.api_version)
            self.requests_seen.append(pair)
            self.host_requests.setdefault(sender[0], []).append(pair)
        if message.client_id and message.client_id not in self.client_ids:
            self.client_ids.append(message.client_id)
        return frame

    def _response(self, piece: CutFrame, sender: Endpoint, ts: float) -> Frame:
        raw = piece.raw
        correlation_id = struct.unpack_from(">i", raw, 4)[0] if len(raw) >= 8 else -1
        waiting = self.correlator.response(correlation_id)
        request, inferred, note = None, False, None
        if waiting is not None:
            request = waiting.token
            try:
                message = decode_response(raw, waiting.api_key, waiting.api_version)
            except (ProtocolError, ValueError):
                message = decode_response(raw, waiting.api_key, waiting.api_version, annotate=True)
        else:
            client = self.connection.other(sender)
            tiers = [("this connection's requests", self.requests_seen[::-1]),
                     ("the ApiVersions ranges advertised", self.advertised),
                     ("requests from the same client host", self.host_requests.get(client[0], [])[::-1])]
            message, note = infer_response(raw, tiers)
            inferred = message is not None
            if message is None:
                message = Response(api_key=-1, api_name="", api_version=-1, correlation_id=correlation_id,
                                   body=None, size=struct.unpack_from(">i", raw, 0)[0], diagnostics=[note])
        frame = self._frame(message, piece, sender, ts, client_id=waiting.client_id if waiting else None,
                            inferred=inferred)
        if request is not None:
            frame._request = request
        if message.api_key == API_VERSIONS and message.body:
            self._remember_ranges(message.body)
        return frame

    def _remember_ranges(self, body: dict) -> None:
        for entry in body.get("api_keys") or []:
            try:
                low, high = int(entry["min_version"]), int(entry["max_version"])
                key = int(entry["api_key"])
            except (KeyError, TypeError, ValueError):
                continue
            self.advertised.extend((key, v) for v in range(max(low, 0), min(high, 64) + 1))

    def _frame(self, message, piece: CutFrame, sender: Endpoint, ts: float, client_id: str | None = None,
               inferred: bool = False) -> Frame:
        receiver = self.connection.other(sender)
        frame = frame_from_message(message, piece.raw, number=0, ts=ts, stream=self.connection.index,
                                   src=endpoint(*sender), dst=endpoint(*receiver), client_id=client_id,
                                   inferred=inferred)
        if piece.diagnostics:
            frame.diagnostics = piece.diagnostics + frame.diagnostics
        frame.stream_offset = piece.offset
        self.frames_sent[sender] += 1
        return frame


def _malformed(frame: Frame) -> bool:
    return any(d.startswith("malformed") for d in frame.diagnostics)
