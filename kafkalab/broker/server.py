"""The asyncio adapter: a TCP server on its own event loop and thread, feeding sans-IO Connections.

The only module of the broker that imports asyncio and reads clocks. Each client connection runs one task
that reads bytes, hands whole frames to its :class:`~.dispatch.Connection` in order and writes the answers
back in order (Kafka answers a connection's requests in the order they came). A Fetch that has to wait for
data (a :class:`~.handlers.Wait`) parks that task on an event set by every append, until it is satisfied or
its ``max_wait_ms`` runs out. :class:`LoopThread` owns a private event loop on a daemon thread, so brokers
start the same way from a script, a test or a running Jupyter kernel (whose loop is never touched).
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time

from .dispatch import CloseConnection, Connection, Pending

log = logging.getLogger("kafkalab.broker")
READ_CHUNK = 256 * 1024


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _endpoint(address) -> str:
    if not address:
        return ""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Server:
    def __init__(self, state, registry, journal, config) -> None:
        self.state, self.registry, self.journal, self.config = state, registry, journal, config
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._appended: asyncio.Event | None = None
        self._streams = 0
        self.address: tuple[str, int] = ("", 0)

    async def start(self) -> tuple[str, int]:
        self._appended = asyncio.Event()
        self.state.append_listeners.append(self._on_append)
        self._server = await asyncio.start_server(self._client, self.config.host, self.config.port, backlog=1024,
                                                  limit=READ_CHUNK)
        sockname = self._server.sockets[0].getsockname()
        self.address = (sockname[0], sockname[1])
        log.info("broker %d listening on %s", self.state.node_id, _endpoint(sockname))
        return self.address

    def _on_append(self) -> None:
        event = self._appended
        if event is not None and not event.is_set():
            event.set()
            self._appended = asyncio.Event()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        if self._on_append in self.state.append_listeners:
            self.state.append_listeners.remove(self._on_append)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self._writers.add(writer)
        stream, self._streams = self._streams, self._streams + 1
        peer, local = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
        conn = Connection(self.state, self.registry, self.journal, stream=stream, src=_endpoint(peer),
                          dst=_endpoint(local), local_host=local[0] if local else "", local_port=local[1] if local else 0,
                          max_request_size=self.config.max_request_size, clock=time.time)
        try:
            await self._serve(conn, reader, writer)
        except CloseConnection as exc:
            log.warning("closing connection %d from %s: %s", stream, conn.src, exc)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:  # noqa: BLE001 - one connection's failure must not touch the others
            log.exception("connection %d from %s failed", stream, conn.src)
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _serve(self, conn: Connection, reader, writer) -> None:
        while True:
            data = await reader.read(READ_CHUNK)
            if not data:
                return
            for frame in conn.feed(data):
                out = conn.handle(frame, time.time(), _now_ms())
                if isinstance(out, Pending):
                    out = await self._wait(conn, out)
                if out is not None:
                    writer.write(out)
            await writer.drain()

    async def _wait(self, conn: Connection, pending: Pending) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + pending.wait.max_wait_ms / 1000.0
        while True:
            event = self._appended
            remaining = deadline - loop.time()
            if remaining > 0:
                try:
                    await asyncio.wait_for(event.wait(), remaining)
                except asyncio.TimeoutError:
                    pass
            body = pending.wait.attempt(_now_ms(), loop.time() >= deadline)
            if body is not None:
                return conn.respond(pending, body, time.time())


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
