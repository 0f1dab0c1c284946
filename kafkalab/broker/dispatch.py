"""One client connection, sans-IO: bytes in, frames out, requests dispatched to handlers.

Owns: the receive buffer the I/O adapter reads into (:class:`ReceiveBuffer`: large reads straight into one
growable bytearray that grows with the bytes that arrive, cut into frames by
:func:`kafkalab.protocol.framing.cut_frames`, with the max request size checked before anything is buffered for a
frame), the broker-wide budget of request bytes in flight (:class:`MemoryBudget`), reading the request header,
choosing the handler, the version rules (KIP-511 fallback for ApiVersions, UNSUPPORTED_VERSION for other versions
the broker does not implement), encoding responses with the project's codec and writing both directions to the
journal, and the one interception hook (``Connection.intercept``) where the lab controls act: before the handler
and after the response body is built.
Must not know: sockets, asyncio, clocks (the adapter passes ``ts``/``now_ms`` and a ``clock``). Anything that makes the
connection unusable (garbage, a truncated or oversized frame, an unknown API key, a body that does not
decode) raises :class:`CloseConnection` with a reason for the log; other connections never notice.
"""
from __future__ import annotations

import logging
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from kafkalab.protocol import ApiKey, ErrorCode, ProtocolError, decode_request, encode_response
from kafkalab.protocol.codec.layout import message_layout
from kafkalab.protocol.framing import cut_frames
from kafkalab.protocol.schema.registry import api_spec, message_spec

from .handlers import Offload, RequestContext, Wait
from .handlers.api_versions import advertised
from .security import SaslFailure
from .security.api_acls import denial

log = logging.getLogger("kafkalab.broker")

_HEADER = struct.Struct(">hhi")
MIN_READ, MAX_READ = 64 * 1024, 8 * 1024 * 1024


class CloseConnection(Exception):
    """The connection must be closed; the message says why."""


@dataclass
class Pending:
    """A request whose response is still to be built: long polling (``wait``) or work for a worker thread
    (``offload``)."""
    api_key: int
    api_version: int
    correlation_id: int
    entry: Any             # the request's journal entry
    wait: Wait | None = None
    offload: Offload | None = None
    plan: Any = None       # what the interception hook decided for this exchange (it alone reads it)


class MemoryBudget:
    """The broker-wide budget of request bytes in flight (Kafka's ``queued.max.request.bytes``): a frame is
    charged from the moment its size prefix is read until it has been handled. A connection whose announced
    frame does not fit waits, with reading paused, until others' frames are handled (backpressure, not a
    gigabyte). As in Kafka's memory pool a reservation is granted while anything is left, so one frame larger
    than the whole budget still gets through on its own. ``limit`` <= 0: no budget."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: deque[Callable[[], bool]] = deque()

    def try_reserve(self, size: int) -> bool:
        if self.limit > 0 and self.used >= self.limit:
            return False
        self.used += size
        return True

    def charge(self, size: int) -> None:
        """Bytes already received (a frame that arrived whole): counted, never refused."""
        self.used += size

    def release(self, size: int) -> None:
        self.used -= size
        while self._waiting and (self.limit <= 0 or self.used < self.limit):
            retry = self._waiting.popleft()
            if not retry():
                self._waiting.appendleft(retry)
                break

    def wait(self, retry: Callable[[], bool]) -> None:
        """Call ``retry`` (which tries its reservation again, True once granted) when bytes are released."""
        self._waiting.append(retry)

    def forget(self, retry: Callable[[], bool]) -> None:
        if retry in self._waiting:
            self._waiting.remove(retry)


class ReceiveBuffer:
    """Where a connection's bytes land: ``space()`` is a writable view to receive into (asyncio's
    BufferedProtocol hands it to ``recv_into``), ``filled(n)`` takes the n bytes received and returns the
    frames they complete (size prefix included, each its own bytes object). The free space adapts: a read that
    fills it doubles it (up to 8 MiB), so a busy producer's megabyte requests arrive in one read, while idle
    connections keep 64 KiB. Room for a frame grows with the bytes that actually arrive (at most doubling what
    is held), never to the size the prefix announces: a 9-byte "100 MB frame is coming" costs 64 KiB. A size
    prefix that is negative or above ``max_frame_size`` closes the connection before any room is made for it.
    With a :class:`MemoryBudget`, a frame that does not fit sets ``blocked`` (the adapter pauses reading and
    calls :meth:`retry` when the budget frees); every frame returned stays charged until the adapter
    releases it."""

    def __init__(self, max_frame_size: int, budget: MemoryBudget | None = None) -> None:
        self.max_frame_size = max_frame_size
        self.budget = budget
        self.data = bytearray(MIN_READ)
        self.start = self.end = 0        # unconsumed bytes are data[start:end]
        self.need = 4                    # bytes the next frame needs in all (prefix included), once known
        self.read_size = MIN_READ
        self.reserved = 0                # budget bytes held for the frame being received
        self.blocked = False             # that frame's reservation was refused: stop reading

    @property
    def partial(self) -> bool:
        """Whether part of a frame has arrived and the rest has not."""
        return self.end > self.start

    def space(self) -> memoryview:
        held = self.end - self.start
        want = max(self.read_size, min(self.need - held, max(held, MIN_READ)))
        size = len(self.data)
        if size - self.end < want or size > 4 * (held + want):
            capacity = held + want if held + want > size or size > 4 * (held + want) else size
            fresh = self.data if capacity == size else bytearray(capacity)
            fresh[:held] = self.data[self.start:self.end]
            self.data, self.start, self.end = fresh, 0, held
        return memoryview(self.data)[self.end:]

    def filled(self, count: int) -> list[bytes]:
        if self.end + count == len(self.data):
            self.read_size = min(self.read_size * 2, MAX_READ)
        elif count < self.read_size // 8:
            self.read_size = max(self.read_size // 2, MIN_READ)
        self.end += count
        cut = cut_frames(self.data, self.start, self.end, self.max_frame_size)
        if cut.impossible is not None:
            raise CloseConnection(f"bad frame: size {cut.impossible} is outside 0..{self.max_frame_size}")
        with memoryview(self.data) as view:
            frames = [bytes(view[start:end]) for start, end in cut.frames]
        for start, end in cut.frames:
            self._charge(end - start)
        self.need = cut.need
        if cut.stop == self.end:
            self.start = self.end = 0
        else:
            self.start = cut.stop
            self._reserve()
        return frames

    def retry(self) -> bool:
        """Try the refused reservation again; True once granted (reading may resume)."""
        self._reserve()
        return not self.blocked

    def discard(self) -> None:
        """The connection is gone: give back what its unfinished frame holds."""
        if self.budget is not None and self.reserved:
            self.budget.release(self.reserved)
        self.reserved, self.blocked = 0, False

    def _reserve(self) -> None:
        if self.budget is None or self.reserved or self.need <= 4:      # reserved already, or no frame pending
            self.blocked = False
            return
        self.blocked = not self.budget.try_reserve(self.need)
        if not self.blocked:
            self.reserved = self.need

    def _charge(self, size: int) -> None:
        if self.budget is None:
            return
        if self.reserved:
            self.reserved = 0            # the reservation now holds the finished frame
        else:
            self.budget.charge(size)
        self.blocked = False


class Connection:
    def __init__(self, state, registry, journal, *, stream: int, src: str, dst: str, local_host: str = "",
                 local_port: int = 0, max_request_size: int = 100 * 1024 * 1024, clock=None,
                 budget: MemoryBudget | None = None, node_id: int = 0, intercept=None, session=None) -> None:
        self.clock = clock or (lambda: 0.0)     # wall-clock seconds, supplied by the I/O adapter
        self.node_id = node_id                  # the cluster node whose listener accepted this connection
        # The interception hook (the lab controls): ``before_handler(conn, pending, request)`` once a request
        # is decoded, may raise CloseConnection or leave ``pending.plan``; for planned exchanges
        # ``after_response(conn, pending, body, version, ts)`` returns the bytes to send or a parked response.
        self.intercept = intercept
        self.state, self.registry, self.journal = state, registry, journal
        self.stream, self.src, self.dst = stream, src, dst
        self.local_host, self.local_port = local_host, local_port
        self.buffer = ReceiveBuffer(max_request_size, budget)
        self.session = session                  # security.SaslSession: None on a listener with no security

    @property
    def closing(self) -> str | None:
        """Why the connection must close once its last answer is sent (a failed SASL exchange), or None."""
        return self.session.failure if self.session is not None else None

    def feed(self, data: bytes) -> list[bytes]:
        """Frames completed by ``data`` (for adapters that receive bytes objects rather than into ``buffer``)."""
        frames: list[bytes] = []
        view = memoryview(data)
        while view:
            space = self.buffer.space()
            n = min(len(space), len(view))
            space[:n] = view[:n]
            space.release()
            frames += self.buffer.filled(n)
            view = view[n:]
        return frames

    def handle(self, frame: bytes, ts: float, now_ms: int) -> bytes | Pending | None:
        """The response frame, a Pending to finish later, or None (no response, e.g. acks=0)."""
        if self.session is not None and not self.session.authenticated:
            unframed = self.security_gate(frame)
            if unframed is not None:
                return unframed
        if len(frame) < 12:
            raise CloseConnection(f"frame of {len(frame)} bytes is too short for a request header")
        api_key, api_version, correlation_id = _HEADER.unpack_from(frame, 4)
        handler = self.registry.get(api_key)
        entry = self.journal.request(ts, self.stream, self.src, self.dst, frame, api_key, api_version, None)
        if handler is None:
            raise CloseConnection(f"unknown API key {api_key} (correlation id {correlation_id})")
        pending = Pending(api_key, api_version, correlation_id, entry)
        if not handler.min_version <= api_version <= handler.max_version:
            if api_key == ApiKey.API_VERSIONS:
                return self.respond(pending, self._api_versions_fallback(api_version), self.clock(), api_version=0)
            return self.respond(pending, self._unsupported(api_key, api_version), self.clock())
        try:
            request = decode_request(frame, records="raw")
        except ProtocolError as exc:
            raise CloseConnection(f"undecodable {handler_name(api_key)} v{api_version} request: {exc}") from None
        entry.client_id = request.client_id
        ctx = RequestContext(self.state, self.registry, api_key, api_version, correlation_id, request.client_id,
                             now_ms, self.local_host, self.local_port, self.stream, self.src,
                             session=self.session)
        if self.intercept is not None:
            self.intercept.before_handler(self, pending, request)
        return self._outcome(pending, lambda: _refused(ctx, request.body) or handler.handle(ctx, request.body))

    def resume(self, pending: Pending, work_result) -> bytes | Pending | None:
        """Finish a request whose handler offloaded work, with that work's result (back on the loop)."""
        then, pending.offload = pending.offload.then, None
        return self._outcome(pending, lambda: then(work_result))

    def _outcome(self, pending: Pending, run) -> bytes | Pending | None:
        try:
            result = run()
        except Exception:  # noqa: BLE001 - a handler bug answers this request, it does not stop the broker
            log.exception("handler for %s v%d failed", handler_name(pending.api_key), pending.api_version)
            result = error_body(pending.api_key, pending.api_version, ErrorCode.UNKNOWN_SERVER_ERROR)
        if result is None:
            return None
        if isinstance(result, Wait):
            pending.wait = result
            return pending
        if isinstance(result, Offload):
            pending.offload = result
            return pending
        return self.respond(pending, result, self.clock())

    def security_gate(self, frame: bytes) -> bytes | None:
        """The security hook, for a connection not yet authenticated: after SaslHandshake v0 the SASL tokens
        come as bare size-prefixed frames (KIP-43) and are answered the same way; any other request must be one
        of ApiVersions, SaslHandshake, SaslAuthenticate, or the connection closes (as Kafka does)."""
        session = self.session
        if session.unframed:
            try:
                token = session.authenticate(frame[4:])
            except SaslFailure as exc:
                raise CloseConnection(f"SASL authentication failed: {exc}") from None
            return len(token).to_bytes(4, "big") + token      # the size prefix, no header (KIP-43)
        api_key = int.from_bytes(frame[4:6], "big", signed=True) if len(frame) >= 6 else None
        if api_key is not None and not session.admits(api_key):
            raise CloseConnection(f"{handler_name(api_key)} request before SASL authentication")
        return None

    def respond(self, pending: Pending, body: dict, ts: float, api_version: int | None = None):
        """The response frame, journaled; or, for an exchange the interception hook planned, what it returns
        (bytes, or a parked response the adapter finishes later)."""
        version = pending.api_version if api_version is None else api_version
        body = fit_to_version(message_layout(message_spec(pending.api_key, "response", version), version), body)
        if pending.plan is not None:
            return self.intercept.after_response(self, pending, body, version, ts)
        return self.sent(pending, self.encode(pending, body, version), ts)

    def encode(self, pending: Pending, body: dict, version: int) -> bytes:
        return encode_response(pending.api_key, version, body, correlation_id=pending.correlation_id)

    def sent(self, pending: Pending, raw: bytes, ts: float, notes: list[str] | None = None) -> bytes:
        """Journal ``raw`` as the response to ``pending`` (with notes for its diagnostics) and return it."""
        entry = self.journal.response(pending.entry, ts, raw)
        if notes:
            entry.notes = list(notes)
        return raw

    def _api_versions_fallback(self, api_version: int) -> dict:
        """KIP-511: ApiVersions in a version we do not speak gets a v0 body (response header v0, as always for
        ApiVersions) with UNSUPPORTED_VERSION and our ranges, so the client can pick a version and retry."""
        log.info("ApiVersions v%d not supported: answering v0 with UNSUPPORTED_VERSION (KIP-511)", api_version)
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": advertised(self.registry)}

    def _unsupported(self, api_key: int, api_version: int) -> dict:
        """Other APIs: a body of the asked version with error 35, if the codec can encode that version at all."""
        low, high = api_spec(api_key).response.versions
        if not low <= api_version <= high:
            raise CloseConnection(f"{handler_name(api_key)} v{api_version} is beyond what the codec knows")
        return error_body(api_key, api_version, ErrorCode.UNSUPPORTED_VERSION)


def _refused(ctx: RequestContext, body: dict) -> dict | None:
    """The answer to a request its principal may not make at all (the GATE checks of security.api_acls, made
    here so no handler can forget them), or None: the handler runs and checks each resource it names."""
    code = denial(ctx.allowed, ctx.api_key, body)
    if code is None:
        return None
    return error_body(ctx.api_key, ctx.api_version, code, f"{ErrorCode(code).name} for {handler_name(ctx.api_key)}")


def handler_name(api_key: int) -> str:
    try:
        return api_spec(api_key).name
    except ProtocolError:
        return f"api {api_key}"


def error_body(api_key: int, api_version: int, error_code: int, message: str | None = None) -> dict:
    """A well-formed response body with ``error_code`` in every top-level error field (and ``message`` in its
    error message, if the version has one) and empty lists."""
    spec = message_spec(api_key, "response", api_version)
    values = {"error_code": error_code, "error_message": message}
    return {f.name: values[f.name] for f in spec.fields if f.name in values and f.exists_in(api_version)}


def fit_to_version(layout, body: dict) -> dict:
    """Drop the fields a response version does not have. Handlers fill one body for every version they serve
    (topic ids, v0's old_style_offsets...); the codec rightly refuses non-default values for fields a version
    lacks, so the broker keeps only what the asked version can carry."""
    if not body.keys() <= layout.names:
        body = {k: v for k, v in body.items() if k in layout.names}
    for slot in layout.slots:
        if slot.layout is None:
            continue
        value = body.get(slot.name)
        if isinstance(value, list):
            body[slot.name] = [fit_to_version(slot.layout, item) for item in value]
        elif isinstance(value, dict):
            body[slot.name] = fit_to_version(slot.layout, value)
    for slot in layout.tagged:
        if slot.layout is not None and isinstance(body.get(slot.name), dict):
            body[slot.name] = fit_to_version(slot.layout, body[slot.name])
    return body
