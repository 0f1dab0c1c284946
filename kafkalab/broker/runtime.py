"""``Broker``: the in-notebook Kafka broker's public face - start, stop, topics, the frame journal.

    >>> with Broker(topics={"orders": 3}) as broker:             # doctest: +SKIP
    ...     producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    ...     broker.frames                                          # a pandas DataFrame, one row per frame

Lab controls: ``broker.faults.inject(api="Produce", error="NOT_LEADER_OR_FOLLOWER")`` arms a fault,
``broker.hold(api="Fetch")`` steps through one exchange, ``Broker(emulate="2.8")`` serves a Kafka release's
API ranges, ``Broker(nodes=3)`` runs a three-node cluster whose leaders ``broker.move_leader`` moves.
The broker's state lives on the server thread; methods called from other threads hop onto it.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable

from .config import DEFAULT_CLUSTER_ID, DEFAULT_MAX_REQUEST_SIZE, BrokerConfig
from .controls.faults import Faults
from .controls.hold import Hold
from .controls.intercept import LabControls
from .controls.personas import persona_registry, release_name
from .handlers import REGISTRY
from .journal import Journal
from .state import BrokerState

log = logging.getLogger("kafkalab.broker")


def parse_topics(topics) -> dict[str, int | None]:
    """{name: partitions} from a dict, or an iterable of "name", "name:partitions" or (name, partitions)."""
    if topics is None:
        return {}
    if isinstance(topics, dict):
        return dict(topics)
    out: dict[str, int | None] = {}
    for item in ([topics] if isinstance(topics, str) else topics):
        if isinstance(item, str):
            name, _, count = item.rpartition(":") if ":" in item else (item, "", "")
            out[name] = int(count) if count else None
        else:
            name, count = item
            out[name] = count
    return out


class Broker:
    """A Kafka broker (or ``nodes`` of a cluster) served from a thread of this process.

    Listeners: PLAINTEXT on ``port``, plus SASL_PLAINTEXT on ``sasl_port``, SSL on ``ssl_port`` and SASL_SSL on
    ``sasl_ssl_port`` when given (0 picks free ports). Every node has every listener, on consecutive ports from
    the listener's base: with ``nodes=3, port=9092, sasl_port=9192`` node 1 listens on 9092 and 9192, node 2 on
    9093 and 9193, node 3 on 9094 and 9194 (bases closer than ``nodes`` apart are refused with a ValueError).
    Metadata, DescribeCluster and FindCoordinator answer with the nodes' addresses on the listener the request
    came in on, so a client bootstrapped on the SASL ports stays on them. ``bootstrap_servers`` and
    ``listener(protocol)`` list every node's address on a listener.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, data_dir: str | None = None, node_id: int = 1,
                 cluster_id: str = DEFAULT_CLUSTER_ID, journal_size: int = 10_000,
                 max_request_size: int = DEFAULT_MAX_REQUEST_SIZE, auto_create_topics: bool = True,
                 default_partitions: int = 1, topics: dict | Iterable | None = None, nodes: int = 1,
                 emulate: str | None = None, users: dict[str, str] | None = None, **options) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, not {nodes}")
        self.config = BrokerConfig(host=host, port=port, data_dir=None if data_dir is None else str(data_dir),
                                   node_id=node_id, cluster_id=cluster_id, journal_size=journal_size,
                                   max_request_size=max_request_size, auto_create_topics=auto_create_topics,
                                   default_partitions=default_partitions, nodes=nodes,
                                   emulate=None if emulate is None else release_name(emulate), **options)
        self.registry = REGISTRY if emulate is None else persona_registry(REGISTRY, self.config.emulate)
        self.faults = Faults()
        self._holds: list[Hold] = []
        self._initial_topics = parse_topics(topics)
        self._initial_users = dict(users or {})     # salted into SCRAM credentials at start, then forgotten
        self.journal_ring = Journal(journal_size, self.config.journal_bytes)
        self.state: BrokerState | None = None
        self._loop = None
        self._server = None
        self._tls = None
        self.address: tuple[str, int] | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> Broker:
        from .loop_thread import LoopThread     # asyncio stays out of `import kafkalab.broker`
        from .server import Server

        if self._loop is not None:
            return self
        self.state = BrokerState(self.config)
        self.state.recover(time.time_ns() // 1_000_000)
        for name, count in self._initial_topics.items():
            if name not in self.state.store.topics:
                self.state.create_topic(name, count)
        for user, password in self._initial_users.items():
            self.state.users.set_password(user, password)
        self._initial_users.clear()
        self._loop = LoopThread(f"kafkalab-broker-{self.config.node_id}")
        try:
            self._tls = self._tls_files()
            controls = LabControls(self.state, self.faults, self._holds, self.state.cluster)
            self._server = Server(self.state, self.registry, self.journal_ring, self.config, controls, self._tls)
            self.address = self._loop.run(self._server.start())
        except BaseException:
            self._loop.stop()
            self._loop = None
            self.state.close()
            if self._tls is not None:
                self._tls.cleanup()
            raise
        self.state.set_listener(*self.address)
        return self

    def _tls_files(self):
        config = self.config
        if config.ssl_port is None and config.sasl_ssl_port is None:
            return None
        from .tls import TlsFiles
        return TlsFiles(config.tls_cert, config.tls_key, config.data_dir, config.host)

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            self._loop.run(self._server.close())
        finally:
            self._loop.stop()
            self._loop = None
            self.state.close()
            if self._tls is not None:
                self._tls.cleanup()
            log.info("broker %d stopped", self.config.node_id)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._loop is not None

    @property
    def bootstrap_servers(self) -> str:
        """host:port of every node, comma-separated (one node: just its address)."""
        if self.address is None:
            raise RuntimeError("the broker is not started")
        return ",".join(_host_port(host, port) for host, port in self.node_addresses.values())

    @property
    def node_addresses(self) -> dict[int, tuple[str, int]]:
        """{node id: (host, port)} of the listening nodes."""
        return dict(self.state.cluster.endpoints) if self.address else {}

    def listener(self, protocol: str) -> str:
        """The bootstrap servers of the listener for a security protocol, PLAINTEXT, SASL_PLAINTEXT, SSL or
        SASL_SSL: every node's host:port on it, comma-separated (see the class docstring for the ports)."""
        nodes = self.state.cluster.listeners.get(protocol) if self._server is not None else None
        if not nodes:
            raise RuntimeError(f"the broker has no {protocol} listener (see Broker's *_port arguments)")
        return ",".join(_host_port(host, port) for host, port in nodes.values())

    @property
    def sasl_bootstrap_servers(self) -> str:
        return self.listener("SASL_PLAINTEXT")

    @property
    def ca_file(self) -> str:
        """The PEM file clients of the SSL/SASL_SSL listeners trust (the self-signed certificate itself)."""
        if self._tls is None:
            raise RuntimeError("the broker has no TLS listener: start it with ssl_port= or sasl_ssl_port=")
        return self._tls.certfile

    # --- users (SCRAM credentials; PLAIN is checked against them) ---------------------------------------------

    def set_user(self, name: str, password: str) -> None:
        """Create or change a user: SCRAM-SHA-256 and SCRAM-SHA-512 credentials, salted; no password kept."""
        if self.state is None:
            self._initial_users[name] = password
            return
        self._on_loop(self.state.users.set_password, name, password)

    def delete_user(self, name: str) -> None:
        if self.state is None:
            self._initial_users.pop(name, None)
            return
        self._on_loop(lambda: [self.state.users.delete(name, m) for m in list(self.state.users.mechanisms(name))])

    @property
    def users(self) -> dict[str, dict[str, int]]:
        """{user: {mechanism: iterations}}, as DescribeUserScramCredentials shows them."""
        if self.state is None:
            return {}
        return self._on_loop(lambda: {u: self.state.users.mechanisms(u) for u in self.state.users.names()})

    # --- quotas and ACLs -----------------------------------------------------------------------------------

    def set_quota(self, *, user: str | None = None, client_id: str | None = None, **values: float) -> None:
        """Set byte-rate quotas (``producer_byte_rate=``, ``consumer_byte_rate=``, bytes per second) for a user, a
        client id, or both, as AlterClientQuotas does; ``user=""``/``client_id=""`` is the default entity."""
        entity = tuple((kind, name or None) for kind, name in (("user", user), ("client-id", client_id))
                       if name is not None)
        ops = [{"key": key, "value": value, "remove": False} for key, value in values.items()]
        code, message = self._on_loop(self.state.quotas.alter, entity, ops)
        if code:
            raise ValueError(message)

    def add_acl(self, principal: str, operation: str, resource_type: str, name: str, *, pattern: str = "LITERAL",
                permission: str = "ALLOW", host: str = "*") -> None:
        """Add an ACL binding, e.g. ``add_acl("User:alice", "READ", "TOPIC", "orders")`` (what CreateAcls does)."""
        from .security.authorizer import OP, PATTERN, PERMISSION, RESOURCE, AclBinding
        binding = AclBinding(RESOURCE[resource_type], name, PATTERN[pattern], principal, host, OP[operation],
                             PERMISSION[permission])
        problem = self._on_loop(self.state.authorizer.add, binding)
        if problem:
            raise ValueError(problem)

    @property
    def port(self) -> int:
        return self.address[1] if self.address else self.config.port

    # --- topics -------------------------------------------------------------------------------------------

    def _on_loop(self, fn, *args):
        return self._loop.call(fn, *args) if self._loop is not None else fn(*args)

    def create_topic(self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None) -> None:
        if self.state is None:
            self._initial_topics[name] = partitions
            return
        self._on_loop(self.state.create_topic, name, partitions, configs)

    @property
    def topics(self) -> dict[str, int]:
        if self.state is None:
            return {}
        return self._on_loop(lambda: {n: len(t.partitions) for n, t in self.state.store.topics.items()})

    # --- lab controls -------------------------------------------------------------------------------------

    def hold(self, api: int | str | None = None, topic: str | None = None) -> Hold:
        """Catch the next request for ``api`` (and ``topic``): its response waits until the returned handle's
        ``release()`` (or ``release(edited_body)``) or ``drop()``. ``handle.wait()`` blocks until it is caught."""
        hold = Hold(api, topic)
        self._on_loop(self._holds.append, hold)
        return hold

    def move_leader(self, topic: str, partition: int, node: int | None = None) -> tuple[int, int]:
        """Make ``node`` (default: the next one) lead ``topic``/``partition``; returns (leader, leader epoch).
        Requests for it to the old leader then get NOT_LEADER_OR_FOLLOWER, and Metadata shows the new one."""
        if self.state is None:
            raise RuntimeError("the broker is not started")
        if topic not in self.topics or not 0 <= partition < self.topics[topic]:
            raise ValueError(f"no partition {topic}-{partition}")
        return self._on_loop(self.state.cluster.move, topic, partition, node)

    def leaders(self, topic: str) -> dict[int, int]:
        """{partition: leader node id} of a topic."""
        return self._on_loop(lambda: {p: self.state.cluster.leader(topic, p)[0]
                                      for p in range(len(self.state.store.topics[topic].partitions))})

    # --- the journal --------------------------------------------------------------------------------------

    @property
    def frames(self):
        """Every journaled frame as a pandas DataFrame with the FRAME_COLUMNS of the data model."""
        return self.journal_ring.table()

    @property
    def journal(self):
        """The journaled frames as :class:`~kafkalab.dissect.frame.Frame` objects (``.tree`` on demand)."""
        return self.journal_ring.frames()

    def frame(self, number: int):
        return self.journal_ring.frame(number)

    def write_pcap(self, path) -> int:
        """Write the journal as a pcap file (synthesised Ethernet/IP/TCP between the real endpoints, journal
        timestamps) that tshark and :func:`kafkalab.read_capture` open; returns the number of frames."""
        return self.journal_ring.write_pcap(path)

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.address else "not started"
        persona = f" as Kafka {self.config.emulate}" if self.config.emulate else ""
        return f"<kafkalab Broker node {self.config.node_id} {where}{persona}, {len(self.journal_ring)} frames journaled>"


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
