"""The asyncio adapter: a TCP server on its own event loop and thread, feeding sans-IO Connections.

With :mod:`.client_connection` (one client's bytes in, frames handled in order, answers out) and
:mod:`.loop_thread` (the private loop), the only part of the broker that imports asyncio and reads clocks.
Owns: the listeners (one per node and security protocol asked for), the set of live connections, the ticker
that gives the broker state the time (group sessions, rebalances, transactions), the sweeper that closes
connections idle past ``connections_max_idle_ms`` and those whose request takes longer than
``request_receive_timeout_ms`` to arrive (slowloris), the broker-wide budget of request bytes in flight
(:class:`~.dispatch.MemoryBudget`), the append event long polls wait on, and the worker threads offloaded
request work runs on.

Why not streams: an asyncio StreamReader copies every chunk into its own buffer and wakes a task per read;
with a busy producer in the same process (a notebook) each wake-up of the loop thread waits for the GIL, so
fewer, larger reads handled in place are what make the in-process broker fast.
"""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from .client_connection import ClientProtocol, endpoint, now_ms
from .dispatch import MemoryBudget

log = logging.getLogger("kafkalab.broker")
TICK_SECONDS = 0.1          # how often the broker state hears the time (group sessions, rebalances, transactions)
OFFLOAD_WORKERS = 2         # threads for offloaded request work (see Server.workers)
SWEEP_EVERY = 1.0           # seconds between looks for idle connections and requests that never finish


class Server:
    """One asyncio server with, on every cluster node (``config.nodes``), a listener per security protocol asked
    for (PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL; node i on the listener's base port + i, see
    :meth:`~.config.BrokerConfig.node_ports`), recorded in ``state.cluster.listeners``; every connection knows
    which node's listener accepted it and whether it must authenticate. ``controls`` is the dispatcher's
    interception hook (the lab controls); ``tls`` the certificate files of the TLS listeners."""

    def __init__(self, state, registry, journal, config, controls=None, tls=None) -> None:
        self.state, self.registry, self.journal, self.config = state, registry, journal, config
        self.controls = controls
        self.tls = tls                           # tls.TlsFiles for the SSL and SASL_SSL listeners
        self._servers: list[asyncio.base_events.Server] = []
        self.clients: set[ClientProtocol] = set()
        self.appended: asyncio.Event | None = None
        self._streams = 0
        self.address: tuple[str, int] = ("", 0)
        self._ticker: asyncio.TimerHandle | None = None
        self.budget = MemoryBudget(config.queued_max_request_bytes)
        self._sweeper: asyncio.Task | None = None
        # offloaded checks (inflating legacy wrappers) run here, two at a time: bounded CPU and memory
        self.workers = ThreadPoolExecutor(OFFLOAD_WORKERS, thread_name_prefix="kafkalab-broker-work")

    async def start(self) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self.appended = asyncio.Event()
        self.state.append_listeners.append(self._on_append)
        cluster = self.state.cluster
        for protocol in self.config.listener_ports():
            nodes = cluster.listeners.setdefault(protocol, {})
            for node_id, port in zip(cluster.node_ids, self.config.node_ports(protocol)):
                nodes[node_id] = await self._listen(protocol, port, node_id)
        self.address = cluster.endpoints[self.state.node_id]
        self._sweeper = loop.create_task(self._sweep())
        self._tick()
        return self.address

    async def _listen(self, protocol: str, port: int, node_id: int) -> tuple[str, int]:
        """Open one listener of node ``node_id``; connections on it speak ``protocol`` (PLAINTEXT,
        SASL_PLAINTEXT, SSL, SASL_SSL)."""
        loop = asyncio.get_running_loop()
        sasl = protocol.startswith("SASL_")
        tls = self.tls.server_context() if protocol.endswith("SSL") else None
        server = await loop.create_server(lambda: ClientProtocol(self, node_id, sasl), self.config.host, port,
                                          backlog=1024, ssl=tls)
        self._servers.append(server)
        sockname = server.sockets[0].getsockname()
        log.info("broker %d listening on %s (%s)", node_id, endpoint(sockname), protocol)
        return (sockname[0], sockname[1])

    def _tick(self) -> None:
        try:
            self.state.tick(now_ms())
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

    async def _sweep(self) -> None:
        """Close connections idle longer than ``connections_max_idle_ms`` (as Kafka does) and those whose
        request has been arriving for longer than ``request_receive_timeout_ms`` (a slowloris holds a
        connection and its buffer by sending a byte now and then)."""
        idle = self.config.connections_max_idle_ms / 1000.0
        receive = self.config.request_receive_timeout_ms / 1000.0
        while True:
            await asyncio.sleep(max(0.05, min(SWEEP_EVERY, idle / 4, receive / 4)))
            now = time.monotonic()
            for client in list(self.clients):
                client.expire(now, idle, receive)

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()
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
        self.workers.shutdown(wait=False, cancel_futures=True)
