"""The broker's shared state, as handlers see it: config, storage, producer ids, the transaction coordinator,
share groups, the cluster's nodes and leaders, who is listening for appends.

Sans-IO: no sockets, no clocks, no asyncio (the adapter passes the time to :meth:`recover` and :meth:`tick`).
The server adapter registers an append listener (to wake long polls: fetches waiting for data, JoinGroup and
SyncGroup waiting for their group) and sets the advertised address once it is listening. Topic configs resolve through
:class:`~.configs.ConfigLayers` (topic override, dynamic broker, dynamic cluster default, static, default);
the resolved values are cached per topic and the cache is dropped on every config or topic change.
"""
from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from .config import BrokerConfig, topic_collision, topic_name_problem
from .configs import TOPIC_CONFIGS, ConfigLayers, static_broker_values
from .controls.cluster import Cluster
from .fetch_sessions import FetchSessions
from .groups import GroupCoordinator, GroupSettings
from .share import ShareGroups
from .security import ScramUsers
from .security.authorizer import Authorizer
from .security.metadata_log import SecurityLog
from .security.quotas import ClientQuotas
from .security.tokens import DelegationTokens
from .storage import Store, Topic
from .streams import StreamsGroups
from .telemetry import ClientMetrics
from .transactions import TransactionCoordinator

log = logging.getLogger("kafkalab.broker")


class ProduceSettings(NamedTuple):
    """The topic configs Produce honours, parsed once per config change."""
    max_batch_bytes: int
    log_append_time: bool
    min_insync_replicas: int
    before_max_ms: int | None       # None: no limit (Long.MAX)
    after_max_ms: int | None


class BrokerState:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.store = Store(config.data_dir, config.segment_bytes, config.max_open_segment_files)
        self.node_id = config.node_id
        self.cluster = Cluster(list(range(config.node_id, config.node_id + max(1, config.nodes))))
        self.cluster_id = config.cluster_id
        self.advertised_host = config.host
        self.advertised_port = config.port
        self.next_producer_id = max(1000, self.store.max_producer_id + 1)
        self.append_listeners: list[Callable[[], None]] = []
        self.configs = ConfigLayers(config.node_id, static_broker_values(config), self.store.broker_configs)
        self._resolved: dict[str, dict[str, str | None]] = {}
        self._produce: dict[str, ProduceSettings] = {}
        for topic in self.store.topics.values():
            self._apply_segment_bytes(topic)
        self.transactions = TransactionCoordinator(self)
        self.fetch_sessions = FetchSessions()
        settings = GroupSettings(initial_rebalance_delay_ms=config.initial_rebalance_delay_ms)
        self.groups = GroupCoordinator(self.store, settings, notify=self.appended)
        self.share_groups = ShareGroups()
        self.streams_groups = StreamsGroups(self.store, lambda name, n: self.create_topic(name, n))
        self.tokens = DelegationTokens()      # delegation tokens (*DelegationToken APIs, SCRAM tokenauth)
        self.users = ScramUsers(self.tokens)  # SCRAM credentials (SASL listeners, *UserScramCredentials)
        self.authorizer = Authorizer(config.super_users, config.allow_everyone_if_no_acl_found)
        self.quotas = ClientQuotas()
        self.security_log = SecurityLog(config.data_dir)     # users, ACLs, quotas: kept with --data-dir
        self.security_log.attach(self.users, self.authorizer, self.quotas)
        self.replica_dirs: dict[tuple[str, int], str] = {}   # (topic, partition) -> log dir, where moved there
        self.telemetry = ClientMetrics()      # client-metrics resources and the metrics clients push (KIP-714)

    def recover(self, now_ms: int) -> None:
        """Resume the coordinators from their logs (the adapter calls it once, with the time)."""
        self.transactions.recover(now_ms)

    def tick(self, now_ms: int) -> None:
        """Time passes (the adapter calls it periodically): transactions past their timeout are aborted, group
        members past their session timeout leave, rebalances past their timeout end."""
        self.transactions.expire(now_ms)
        self.groups.tick(now_ms)
        self.share_groups.expire(now_ms)
        self.streams_groups.expire(now_ms)
        self.tokens.purge(now_ms)

    # --- configs --------------------------------------------------------------------------------------

    def topic_config(self, topic: Topic, name: str) -> str | None:
        resolved = self._resolved.get(topic.name)
        if resolved is None:
            resolved = self._resolved[topic.name] = {}
        if name not in resolved:
            resolved[name] = self.configs.topic_entry(name, topic.configs).value
        return resolved[name]

    def produce_settings(self, topic: Topic) -> ProduceSettings:
        settings = self._produce.get(topic.name)
        if settings is None:
            value = self.topic_config

            def limit(name: str) -> int | None:
                number = int(value(topic, name))
                return None if number >= 2**63 - 1 else number
            settings = self._produce[topic.name] = ProduceSettings(
                int(value(topic, "max.message.bytes")), value(topic, "message.timestamp.type") == "LogAppendTime",
                int(value(topic, "min.insync.replicas")), limit("message.timestamp.before.max.ms"),
                limit("message.timestamp.after.max.ms"))
        return settings

    def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        self.store.set_topic_configs(topic.name, configs)
        self._configs_changed()

    def set_broker_configs(self, scope: str, configs: dict[str, str]) -> None:
        self.store.set_broker_configs(scope, configs)
        self.configs.dynamic[scope] = dict(configs)
        self._configs_changed()

    def brokers(self, local_host: str = "", local_port: int = 0) -> list[tuple[int, str, int]]:
        """Every node as (node id, host, port) on the listener the request came in on (found by the local port it
        reached), as Kafka advertises per listener name: a client bootstrapped on the SASL port learns every
        node's SASL port. A single node answers with the address the client connected to (it may have come
        through a port forward)."""
        host = local_host or self.advertised_host
        if self.cluster.size == 1:
            return [(self.node_id, host, local_port or self.advertised_port)]
        nodes = self.cluster.listeners.get(self.cluster.listener_at(local_port) or "PLAINTEXT", {})
        return [(node, host, nodes.get(node, (host, self.advertised_port))[1]) for node in self.cluster.node_ids]

    def set_listener(self, host: str, port: int) -> None:
        """The PLAINTEXT address; ``listeners``/``advertised.listeners`` name each listener of this node."""
        self.advertised_host, self.advertised_port = host, port
        mine = {name: nodes[self.node_id] for name, nodes in self.cluster.listeners.items() if self.node_id in nodes}
        mine = mine or {"PLAINTEXT": (host, port)}
        listener = ",".join(f"{name}://{h}:{p}" for name, (h, p) in mine.items())
        self.configs.static["listeners"] = self.configs.static["advertised.listeners"] = listener

    def _configs_changed(self) -> None:
        self._resolved.clear()
        self._produce.clear()
        for topic in self.store.topics.values():
            self._apply_segment_bytes(topic)

    def _apply_segment_bytes(self, topic: Topic) -> None:
        """segment.bytes is the one config storage honours (new segments roll at it); the static broker
        ``segment_bytes`` stays the default."""
        size = int(self.topic_config(topic, "segment.bytes") or self.config.segment_bytes)
        for p in topic.partitions:
            p.log.segment_bytes = size

    # --- topics ---------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None) -> Topic:
        problem = topic_name_problem(name) or topic_collision(name, self.store.topics)
        if problem:
            raise ValueError(problem)
        if name in self.store.topics:
            raise ValueError(f"Topic '{name}' already exists.")
        if "." in name or "_" in name:
            log.warning("topic %r: due to limitations in metric names, topics with a period ('.') or underscore "
                        "('_') could collide; avoid using both", name)
        for key, value in (configs or {}).items():
            definition = TOPIC_CONFIGS.get(key)
            trouble = f"unknown topic config {key!r}" if definition is None else definition.problem(value)
            if trouble:
                raise ValueError(trouble)
        topic = self.store.create_topic(name, partitions or self.config.default_partitions, configs)
        self._resolved.pop(name, None)
        self._produce.pop(name, None)
        self._apply_segment_bytes(topic)
        return topic

    def delete_topic(self, name: str) -> Topic:
        topic = self.store.delete_topic(name)
        self.replica_dirs = {key: path for key, path in self.replica_dirs.items() if key[0] != name}
        self._resolved.pop(name, None)
        self._produce.pop(name, None)
        return topic

    def add_partitions(self, topic: Topic, total: int) -> None:
        self.store.add_partitions(topic.name, total)
        self._apply_segment_bytes(topic)

    def allocate_producer_id(self) -> int:
        pid = self.next_producer_id
        self.next_producer_id += 1
        return pid

    def appended(self) -> None:
        for listener in self.append_listeners:
            listener()

    def close(self) -> None:
        self.store.close()
        self.security_log.close()
