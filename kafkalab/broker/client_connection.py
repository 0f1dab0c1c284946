"""One client connection on the asyncio adapter: bytes in, frames handled in order, answers out.

Each client connection is a :class:`ClientProtocol` (asyncio's BufferedProtocol): the transport reads straight
into the connection's :class:`~.dispatch.ReceiveBuffer`, every frame a read completes is handled at once by
the sans-IO :class:`~.dispatch.Connection`, and the answers of one read go out in one write. Kafka answers a
connection's requests in order, so a Fetch that has to wait for data (a :class:`~.handlers.Wait`) parks the
connection: frames behind it queue until an append (or the deadline) finishes it; a response the lab controls
park (a delay, a held exchange) parks the connection the same way. Backpressure: when the transport's write
buffer is full (a client that does not read its answers), that connection stops handling frames and stops
reading until the buffer drains; a backlog of frames queued behind a long poll beyond 16 MiB pauses reading
too, and so does a frame that the broker-wide budget of request bytes in flight cannot take yet. A channel
muted by a quota (KIP-219) neither reads nor handles until the throttle time has passed. The listeners, the
sweeper that calls :meth:`ClientProtocol.expire` and the shared budget belong to :mod:`.server`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from .controls.intercept import Parked
from .dispatch import CloseConnection, Connection, Pending
from .security import SaslSession

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("kafkalab.broker")
JOIN_BELOW = 1 << 20        # answers of one read smaller than this go out joined, in one write
BACKLOG_PAUSE = 16 << 20    # bytes of queued frames at which reading from that client pauses


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def endpoint(address) -> str:
    """``host:port`` (``[host]:port`` for IPv6) of a socket address; empty for none."""
    if not address:
        return ""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ClientProtocol(asyncio.BufferedProtocol):
    """One client connection: bytes in through the receive buffer, frames handled in order, answers out."""

    def __init__(self, server: Server, node_id: int, sasl: bool = False) -> None:
        self.server, self.node_id, self.sasl = server, node_id, sasl
        self.transport: asyncio.Transport | None = None
        self.conn: Connection | None = None
        self.backlog: deque[bytes] = deque()     # frames received behind a long poll
        self.backlog_bytes = 0
        self.waiting: asyncio.Task | None = None
        self.paused: set[str] = set()            # why reading is paused: "write", "backlog", "memory"
        self.last_active = time.monotonic()      # last bytes in or answer out
        self.receiving_since: float | None = None    # when the unfinished request began to arrive

    # --- asyncio callbacks ---------------------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        server = self.server
        peer, local = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
        self.conn = Connection(server.state, server.registry, server.journal, stream=server.next_stream(),
                               src=endpoint(peer), dst=endpoint(local), local_host=local[0] if local else "",
                               local_port=local[1] if local else 0,
                               max_request_size=server.config.max_request_size, clock=time.time,
                               budget=server.budget, node_id=self.node_id, intercept=server.controls,
                               session=SaslSession(server.state.users, required=self.sasl,
                                                   mechanisms=server.config.sasl_mechanisms,
                                                   host=peer[0] if peer else "*", clock=time.time))
        server.clients.add(self)
        if len(server.clients) > server.config.max_connections:
            log.warning("closing connection %d from %s: max_connections (%d) reached", self.conn.stream,
                        self.conn.src, server.config.max_connections)
            transport.close()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn.buffer.space()

    def buffer_updated(self, nbytes: int) -> None:
        buffer = self.conn.buffer
        try:
            frames = buffer.filled(nbytes)
        except CloseConnection as exc:
            self._close(f"closing connection {self.conn.stream} from {self.conn.src}: {exc}")
            return
        self.last_active = time.monotonic()
        if not buffer.partial:
            self.receiving_since = None
        elif self.receiving_since is None or frames:
            self.receiving_since = self.last_active
        for frame in frames:
            self.backlog.append(frame)
            self.backlog_bytes += len(frame)
        if buffer.blocked and "memory" not in self.paused:
            self._pause("memory")
            self.server.budget.wait(self._memory_granted)
        elif not buffer.blocked and "memory" in self.paused:     # the frame came whole after all
            self.server.budget.forget(self._memory_granted)
            self._resume("memory")
        self._drain()

    def _memory_granted(self) -> bool:
        if self.transport.is_closing() or not self.conn.buffer.retry():
            return self.transport.is_closing()
        self.receiving_since = time.monotonic()      # waiting for the budget is not the client's fault
        self._resume("memory")
        return True

    def expire(self, now: float, idle: float, receive: float) -> None:
        """Close this connection if it sat idle too long or a request of it has been arriving too long."""
        if self.transport.is_closing():
            return
        if self.receiving_since is not None and not self.paused & {"memory", "throttle"} \
                and now - self.receiving_since > receive:         # a muted client is not slow: we are not reading
            self._close(f"closing connection {self.conn.stream} from {self.conn.src}: a request did not arrive "
                        f"whole within {receive:g} s")
        elif self.waiting is None and not self.backlog and not self.conn.buffer.partial \
                and now - self.last_active > idle:
            log.info("closing connection %d from %s: idle for %g s", self.conn.stream, self.conn.src, idle)
            self.transport.close()

    def eof_received(self) -> bool:
        return False                             # close our side too

    def connection_lost(self, exc) -> None:
        self.server.clients.discard(self)
        if self.waiting is not None:
            self.waiting.cancel()
        budget = self.server.budget
        budget.forget(self._memory_granted)
        self.conn.buffer.discard()
        if self.backlog_bytes:
            budget.release(self.backlog_bytes)
            self.backlog.clear()
            self.backlog_bytes = 0

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
                try:
                    answer = self.conn.handle(frame, time.time(), now_ms())
                finally:
                    self.server.budget.release(len(frame))
                if isinstance(answer, (Pending, Parked)):
                    # the append event as of now: one set before the task starts still wakes it
                    self.waiting = asyncio.get_running_loop().create_task(self._finish(answer, self.server.appended))
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
        self.last_active = time.monotonic()
        if len(out) == 1:
            self.transport.write(out[0])
        elif sum(map(len, out)) < JOIN_BELOW:
            self.transport.write(b"".join(out))
        else:
            for answer in out:
                self.transport.write(answer)

    async def _finish(self, pending: Pending | Parked, event: asyncio.Event) -> None:
        """Wait for an append (or the deadline) to complete a long poll, for offloaded work, or for a parked
        response's delay or hold; answer it, then carry on with the frames that arrived meanwhile."""
        try:
            answer = await self._complete(pending, event)
        except asyncio.CancelledError:
            return
        except CloseConnection as exc:
            self._close(f"closing connection {self.conn.stream} from {self.conn.src}: {exc}")
            return
        except Exception:  # noqa: BLE001
            log.exception("connection %d from %s failed", self.conn.stream, self.conn.src)
            self.transport.close()
            return
        self.waiting = None
        if answer is not None:
            self._write([answer])
        if not self._throttled():
            self._drain()

    async def _complete(self, pending: Pending | Parked, event: asyncio.Event) -> bytes | None:
        """Offloaded work runs on the server's worker threads (the loop keeps serving other clients
        meanwhile); what it leads to may be an answer, nothing (acks=0), a long poll, or a response the lab
        controls parked (delayed or held). ``event`` is the append event as of the request's handling: one set
        since still wakes its long poll."""
        answer = pending
        while isinstance(answer, (Pending, Parked)):
            if isinstance(answer, Parked):
                answer = await self._unpark(answer)
            elif answer.offload is not None:
                result = await asyncio.get_running_loop().run_in_executor(self.server.workers, answer.offload.work)
                event = self.server.appended
                answer = self.conn.resume(answer, result)
            else:
                answer = await self._wait(answer, event)
        return answer

    async def _unpark(self, parked: Parked) -> bytes:
        """A delayed response after its delay; a held one once the notebook releases or drops it."""
        if parked.hold is not None:
            loop, decided = asyncio.get_running_loop(), asyncio.Event()
            parked.hold.on_decided(lambda: loop.call_soon_threadsafe(decided.set))
            await decided.wait()
        else:
            await asyncio.sleep(parked.delay)
        return parked.finish(time.time())

    async def _wait(self, pending: Pending, event: asyncio.Event) -> bytes | Parked:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + pending.wait.max_wait_ms / 1000.0
        while True:
            remaining = deadline - loop.time()
            if remaining > 0:
                try:
                    await asyncio.wait_for(event.wait(), remaining)
                except asyncio.TimeoutError:
                    pass
            event = self.server.appended
            body = pending.wait.attempt(now_ms(), loop.time() >= deadline)
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
        if self.receiving_since is not None:
            self.receiving_since = time.monotonic()  # the mute was ours: the request's deadline restarts
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
