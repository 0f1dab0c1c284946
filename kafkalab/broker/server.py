"""The asyncio adapter: a TCP server on its own event loop and thread, feeding sans-IO Connections.

The only module of the broker that imports asyncio and reads clocks. Each client connection is a
:class:`ClientProtocol` (asyncio's BufferedProtocol): the transport reads straight into the connection's
:class:`~.dispatch.ReceiveBuffer`, every frame a read completes is handled at once, and the answers of one read
go out in one write. Kafka answers a connection's requests in order, so a Fetch that has to wait for data (a
:class:`~.handlers.Wait`) parks the connection: frames behind it queue until an append (or the deadline)
finishes it. Backpressure: when the transport's write buffer is full (a client that does not read its answers),
that connection stops handling frames and stops reading until the buffer drains; a backlog of frames queued
behind a long poll beyond 16 MiB pauses reading too. :class:`LoopThread` owns a private event loop on a daemon thread, so
brokers start the same way from a script, a test or a running Jupyter kernel (whose loop is never touched).

Why not streams: an asyncio StreamReader copies every chunk into its own buffer and wakes a task per read;
with a busy producer in the same process (a notebook) each wake-up of the loop thread waits for the GIL, so
fewer, larger reads handled in place are what make the in-process broker fast.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque

from .dispatch import CloseConnection, Connection, Pending
from .security import SaslSession

log = logging.getLogger("kafkalab.broker")
JOIN_BELOW = 1 << 20        # answers of one read smaller than this go out joined, in one write
BACKLOG_PAUSE = 16 << 20    # bytes of queued frames at which reading from that client pauses
TICK_SECONDS = 0.25         # how often the broker state hears the time (transaction timeouts)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _endpoint(address) -> str:
    if not address:
        return ""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Server:
    def __init__(self, state, registry, journal, config, tls=None) -> None:
        self.state, self.registry, self.journal, self.config = state, registry, journal, config
        self.tls = tls                           # tls.TlsFiles for the SSL and SASL_SSL listeners
        self.clients: set[ClientProtocol] = set()
        self.appended: asyncio.Event | None = None
        self._streams = 0
        self.address: tuple[str, int] = ("", 0)
        self.listeners: dict[str, tuple[str, int]] = {}    # security protocol -> bound address
        self._servers: list[asyncio.base_events.Server] = []
        self._ticker: asyncio.TimerHandle | None = None

    async def start(self) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self.appended = asyncio.Event()
        self.state.append_listeners.append(self._on_append)
        for protocol, port in self.config.listener_ports().items():
            await self._listen(protocol, port)
        self.address = self.listeners["PLAINTEXT"]
        self._tick()
        return self.address

    async def _listen(self, protocol: str, port: int) -> tuple[str, int]:
        """Open one listener; connections on it speak ``protocol`` (PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL)."""
        loop = asyncio.get_running_loop()
        sasl = protocol.startswith("SASL_")
        tls = self.tls.server_context() if protocol.endswith("SSL") else None
        server = await loop.create_server(lambda: ClientProtocol(self, sasl), self.config.host, port, backlog=1024,
                                          ssl=tls)
        self._servers.append(server)
        sockname = server.sockets[0].getsockname()
        self.listeners[protocol] = (sockname[0], sockname[1])
        log.info("broker %d listening on %s (%s)", self.state.node_id, _endpoint(sockname), protocol)
        return self.listeners[protocol]

    def _tick(self) -> None:
        try:
            self.state.tick(_now_ms())
        except Exception:  # noqa: BLE001 - a failing timer must not stop the broker
            log.exception("broker tick failed")
        self._ticker = asyncio.get_running_loop().call_later(TICK_SECONDS, self._tick)

    def next_stream(self) -> int:
        stream, self._streams = self._streams, self._streams + 1
        return stream

    def _on_append(self) -> None:
        event = self.appended
        if event is not None and not event.is_set():
            event.set()
            self.appended = asyncio.Event()

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        for server in self._servers:
            server.close()
        waits = [c.abort() for c in list(self.clients)]
        waits = [w for w in waits if w is not None]
        if waits:
            await asyncio.gather(*waits, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        if self._on_append in self.state.append_listeners:
            self.state.append_listeners.remove(self._on_append)


class ClientProtocol(asyncio.BufferedProtocol):
    """One client connection: bytes in through the receive buffer, frames handled in order, answers out."""

    def __init__(self, server: Server, sasl: bool = False) -> None:
        self.server, self.sasl = server, sasl
        self.transport: asyncio.Transport | None = None
        self.conn: Connection | None = None
        self.backlog: deque[bytes] = deque()     # frames received behind a long poll
        self.backlog_bytes = 0
        self.waiting: asyncio.Task | None = None
        self.paused: set[str] = set()            # why reading is paused: "write", "backlog"

    # --- asyncio callbacks ---------------------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        server = self.server
        peer, local = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
        self.conn = Connection(server.state, server.registry, server.journal, stream=server.next_stream(),
                               src=_endpoint(peer), dst=_endpoint(local), local_host=local[0] if local else "",
                               local_port=local[1] if local else 0,
                               max_request_size=server.config.max_request_size, clock=time.time,
                               session=SaslSession(server.state.users, required=self.sasl,
                                                   host=peer[0] if peer else "*"))
        server.clients.add(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn.buffer.space()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            frames = self.conn.buffer.filled(nbytes)
        except CloseConnection as exc:
            self._close(f"closing connection {self.conn.stream} from {self.conn.src}: {exc}")
            return
        for frame in frames:
            self.backlog.append(frame)
            self.backlog_bytes += len(frame)
        self._drain()

    def eof_received(self) -> bool:
        return False                             # close our side too

    def connection_lost(self, exc) -> None:
        self.server.clients.discard(self)
        if self.waiting is not None:
            self.waiting.cancel()

    def pause_writing(self) -> None:
        self._pause("write")

    def resume_writing(self) -> None:
        self._resume("write")
        self._drain()

    # --- handling -------------------------------------------------------------------------------------------

    def _drain(self) -> None:
        """Handle queued frames in order while nothing holds them back: a long poll being answered (Kafka
        answers a connection's requests in order) or a client that does not read its answers (the transport's
        write buffer is full). Answers go out together, small ones joined into one send."""
        out: list[bytes] = []
        size = 0
        try:
            while self.backlog and self.waiting is None and not self.paused & {"write", "throttle"}:
                frame = self.backlog.popleft()
                self.backlog_bytes -= len(frame)
                answer = self.conn.handle(frame, time.time(), _now_ms())
                if isinstance(answer, Pending):
                    self.waiting = asyncio.get_running_loop().create_task(self._finish(answer))
                elif answer is not None:
                    out.append(answer)
                    size += len(answer)
                    if self.conn.closing:
                        raise CloseConnection(self.conn.closing)
                    if self._throttled():
                        break
                    if size >= JOIN_BELOW:
                        self._write(out)
                        out, size = [], 0
        except CloseConnection as exc:
            self._write(out)                     # what was answered before the bad frame still goes out
            self._close(f"closing connection {self.conn.stream} from {self.conn.src}: {exc}")
            return
        except Exception:  # noqa: BLE001 - one connection's failure must not touch the others
            log.exception("connection %d from %s failed", self.conn.stream, self.conn.src)
            self.transport.close()
            return
        self._write(out)
        if self.backlog_bytes > BACKLOG_PAUSE:
            self._pause("backlog")
        else:
            self._resume("backlog")

    def _write(self, out: list[bytes]) -> None:
        if not out or self.transport.is_closing():
            return
        if len(out) == 1:
            self.transport.write(out[0])
        elif sum(map(len, out)) < JOIN_BELOW:
            self.transport.write(b"".join(out))
        else:
            for answer in out:
                self.transport.write(answer)

    async def _finish(self, pending: Pending) -> None:
        """Wait for an append (or the deadline) to complete a long poll, answer it, then carry on with the
        frames that arrived meanwhile."""
        try:
            answer = await self._wait(pending)
        except asyncio.CancelledError:
            return
        except Exception:  # noqa: BLE001
            log.exception("connection %d from %s failed", self.conn.stream, self.conn.src)
            self.transport.close()
            return
        self.waiting = None
        self._write([answer])
        if not self._throttled():
            self._drain()

    async def _wait(self, pending: Pending) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + pending.wait.max_wait_ms / 1000.0
        while True:
            event = self.server.appended
            remaining = deadline - loop.time()
            if remaining > 0:
                try:
                    await asyncio.wait_for(event.wait(), remaining)
                except asyncio.TimeoutError:
                    pass
            body = pending.wait.attempt(_now_ms(), loop.time() >= deadline)
            if body is not None:
                return self.conn.respond(pending, body, time.time())

    def _throttled(self) -> bool:
        """KIP-219: an answer carrying throttle_time_ms has gone out at once; now the channel is muted (no
        reading, no handling) for that long, then resumes."""
        session = self.conn.session
        if session is None or not session.mute_ms:
            return False
        delay, session.mute_ms = session.mute_ms, 0
        self._pause("throttle")
        asyncio.get_running_loop().call_later(delay / 1000.0, self._unmute)
        return True

    def _unmute(self) -> None:
        self._resume("throttle")
        if not self.transport.is_closing():
            self._drain()

    # --- lifecycle ------------------------------------------------------------------------------------------

    def _pause(self, reason: str) -> None:
        if not self.paused and not self.transport.is_closing():
            self.transport.pause_reading()
        self.paused.add(reason)

    def _resume(self, reason: str) -> None:
        if reason in self.paused:
            self.paused.discard(reason)
            if not self.paused and not self.transport.is_closing():
                self.transport.resume_reading()

    def _close(self, reason: str) -> None:
        log.warning("%s", reason)
        self.transport.close()

    def abort(self):
        """Close now (broker shutdown); returns the long-poll task to await, if any."""
        self.transport.close()
        task = self.waiting
        if task is not None:
            task.cancel()
        return task


class LoopThread:
    """A private asyncio event loop running on a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro, timeout: float | None = 30.0):
        """Run a coroutine on the loop and wait for its result from another thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn, *args, timeout: float | None = 30.0):
        """Run a plain function on the loop's thread (where the broker state lives) and return its result."""
        async def wrapper():
            return fn(*args)
        return self.run(wrapper(), timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()
