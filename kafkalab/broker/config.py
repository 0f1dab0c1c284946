"""Broker settings: one frozen dataclass, Kafka's topic-name rule and the internal topics' names.

Topic configs use Kafka's names (``message.timestamp.type``, ``max.message.bytes``...); their catalogue,
defaults and synonyms live in :mod:`.configs`. ``topic_defaults`` sets static broker values, by topic config
name (``retention.ms``) or broker config name (``log.retention.hours``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafkalab.protocol.records import DEFAULT_MAX_RECORDS

DEFAULT_CLUSTER_ID = "kafkalab-cluster-0001"   # any string; Kafka's are 22-char base64 UUIDs
DEFAULT_MAX_REQUEST_SIZE = 100 * 1024 * 1024  # socket.request.max.bytes

TRANSACTION_STATE_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({TRANSACTION_STATE_TOPIC, OFFSETS_TOPIC})   # the coordinators' own: clients read them, never write

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249


def topic_name_problem(name: str | None) -> str | None:
    """Kafka's topic-name rule (Topic.validate): legal chars [a-zA-Z0-9._-], 1..249 long, not "." or ".."."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL_TOPIC.fullmatch(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def topic_collision(name: str, existing) -> str | None:
    """Kafka's rule (Topic.hasCollision): metric names turn '.' into '_', so a topic that differs from an existing
    one only by '.' versus '_' is refused (InvalidTopicException)."""
    key = name.replace(".", "_")
    for other in existing:
        if other != name and other.replace(".", "_") == key:
            return f"Topic '{name}' collides with existing topic: {other}"
    return None


@dataclass(frozen=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    data_dir: str | None = None
    node_id: int = 1
    cluster_id: str = DEFAULT_CLUSTER_ID
    journal_size: int = 10_000                 # frames kept in the journal ring
    journal_bytes: int = 64 * 1024 * 1024      # raw bytes kept in the journal ring
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    queued_max_request_bytes: int = 256 * 1024 * 1024   # request bytes in flight, all connections (<= 0: no cap)
    connections_max_idle_ms: int = 600_000     # a connection silent this long is closed (Kafka's default)
    request_receive_timeout_ms: int = 30_000   # a request must arrive whole within this (slowloris)
    max_connections: int = 4096                # max.connections: one more is closed at once
    auto_create_topics: bool = True
    default_partitions: int = 1
    max_partitions_per_topic: int = 1000       # CreateTopics/CreatePartitions asking for more: INVALID_PARTITIONS
    max_auto_created_topics_per_request: int = 100     # a Metadata request creates at most this many topics
    validate_records: str = "crc"              # "crc": batch headers + CRC; "full": decode every record
    max_records_per_batch: int = DEFAULT_MAX_RECORDS   # a batch or legacy wrapper claiming more is refused
    segment_bytes: int = 64 * 1024 * 1024
    max_open_segment_files: int = 256          # segment files held open at once (least recently used closed)
    topic_defaults: dict[str, str] = field(default_factory=dict)
    initial_rebalance_delay_ms: int = 3_000    # group.initial.rebalance.delay.ms: a new group's first round waits
    nodes: int = 1                             # cluster nodes in this process, each with every listener
    emulate: str | None = None                 # a Kafka release whose API ranges to serve ("2.8"), see personas
    sasl_port: int | None = None               # a SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256/512) from this port
    sasl_mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")   # + "OAUTHBEARER" (unsecured)
    ssl_port: int | None = None                # an SSL listener (TLS, no SASL)
    sasl_ssl_port: int | None = None           # a SASL_SSL listener
    tls_cert: str | None = None                # PEM certificate for the TLS listeners; None: self-signed at start
    tls_key: str | None = None
    super_users: tuple[str, ...] = ()          # principals ("User:admin") every ACL check allows
    allow_everyone_if_no_acl_found: bool = True   # allow.everyone.if.no.acl.found: a resource no ACL names is open
    log_dirs: tuple[str, ...] = ()             # further log directories AlterReplicaLogDirs may move replicas to

    def listener_ports(self) -> dict[str, int]:
        """{security protocol: port} of every listener asked for, PLAINTEXT first."""
        asked = {"PLAINTEXT": self.port, "SASL_PLAINTEXT": self.sasl_port, "SSL": self.ssl_port,
                 "SASL_SSL": self.sasl_ssl_port}
        return {protocol: port for protocol, port in asked.items() if port is not None}

    def node_ports(self, protocol: str) -> list[int]:
        """The port of each node on a listener: consecutive from the listener's base port (node i of the
        cluster on base + i), or 0 for every node (free ports) when the base is 0."""
        base = self.listener_ports()[protocol]
        return [base + i if base else 0 for i in range(max(1, self.nodes))]

    def __post_init__(self) -> None:
        taken: dict[int, str] = {}
        for protocol in self.listener_ports():
            for port in self.node_ports(protocol):
                if port and port in taken:
                    raise ValueError(f"port {port} is asked for by both the {taken[port]} and the {protocol} "
                                     f"listener: with nodes={self.nodes} each listener takes {self.nodes} "
                                     f"consecutive ports from its base port, so space the bases {self.nodes} apart")
                taken[port] = protocol
