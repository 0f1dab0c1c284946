"""Config catalogue and resolution: topic and broker configs as DescribeConfigs reports them.

Owns: the definition of every config the broker knows (type, default, validation, a one-line description,
and for topic configs the broker configs that supply their default - Kafka's "synonyms"), and the precedence
rules: a topic override, then the broker's own dynamic config, then the cluster-wide dynamic default, then the
static broker config (``BrokerConfig`` and ``topic_defaults``), then the built-in default. Must not know: the
wire protocol, storage, clocks.

Theory: a topic config (``retention.ms``) names broker configs in precedence order (``log.retention.ms``,
``log.retention.minutes``, ``log.retention.hours``), each with a factor into the topic's unit. The first one
set at the strongest source wins; when none is set anywhere, the first one with a built-in default supplies
the value (so ``retention.ms`` defaults to ``log.retention.hours=168``, as in Kafka).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

# DescribeConfigs config_type and config_source values (Kafka's ConfigType / ConfigSource ids)
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(1, 10)
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
# resource types (Kafka's ConfigResource.Type)
TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE = 2, 4, 8

_BOUNDS = {INT: (-2**31, 2**31 - 1), SHORT: (-2**15, 2**15 - 1), LONG: (-2**63, 2**63 - 1)}
LONG_MAX = str(2**63 - 1)


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: int
    default: str | None          # as Kafka prints it; None: no default (null)
    doc: str
    synonyms: tuple[tuple[str, int], ...] = ()   # topic configs: (broker config, factor into this unit)
    valid: tuple[str, ...] = ()  # allowed values (LIST: allowed items)
    low: float | None = None
    high: float | None = None
    dynamic: bool = True         # broker configs: may be altered while running

    def problem(self, value: str | None) -> str | None:
        """Why ``value`` is not acceptable for this config, or None."""
        if value is None:
            return None if self.default is None else f"{self.name} cannot be null"
        text = value.strip()
        if self.type == BOOLEAN:
            return None if text.lower() in ("true", "false") else f"{self.name} must be true or false, not {value!r}"
        if self.type in _BOUNDS or self.type == DOUBLE:
            try:
                number = float(text) if self.type == DOUBLE else int(text)
            except ValueError:
                return f"{self.name} must be a number, not {value!r}"
            low, high = _BOUNDS.get(self.type, (None, None))
            low = self.low if self.low is not None else low
            high = self.high if self.high is not None else high
            if (low is not None and number < low) or (high is not None and number > high):
                return f"{self.name}={value} is out of range [{low}, {high}]"
            return None
        items = [i.strip() for i in text.split(",") if i.strip()] if self.type == LIST else [text]
        bad = [i for i in items if self.valid and i not in self.valid]
        if bad:
            return f"{self.name} does not accept {bad[0]!r}; valid values: {', '.join(self.valid)}"
        return None


def _topic(name, type_, default, doc, *synonyms, **kw) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, tuple(s if isinstance(s, tuple) else (s, 1) for s in synonyms), **kw)


_CODECS = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in (
    _topic("cleanup.policy", LIST, "delete", "What happens to old segments: delete them, compact by key, or both.",
           "log.cleanup.policy", valid=("compact", "delete")),
    _topic("compression.type", STRING, "producer", "Codec for stored batches; 'producer' keeps what the producer "
           "sent (this broker always stores batches as received).", "compression.type", valid=_CODECS),
    _topic("compression.gzip.level", INT, "-1", "gzip level when the broker compresses.", "compression.gzip.level",
           low=-1, high=9),
    _topic("compression.lz4.level", INT, "9", "lz4 level when the broker compresses.", "compression.lz4.level",
           low=1, high=17),
    _topic("compression.zstd.level", INT, "3", "zstd level when the broker compresses.", "compression.zstd.level",
           low=-131072, high=22),
    _topic("delete.retention.ms", LONG, "86400000", "How long delete markers survive compaction.",
           "log.cleaner.delete.retention.ms", low=0),
    _topic("file.delete.delay.ms", LONG, "60000", "Delay before a removed segment file is unlinked.",
           "log.segment.delete.delay.ms", low=0),
    _topic("flush.messages", LONG, LONG_MAX, "Records appended between forced fsyncs.",
           "log.flush.interval.messages", low=1),
    _topic("flush.ms", LONG, LONG_MAX, "Milliseconds between forced fsyncs.", "log.flush.interval.ms", low=0),
    _topic("index.interval.bytes", INT, "4096", "Bytes between offset index entries.", "log.index.interval.bytes",
           low=0),
    _topic("local.retention.bytes", LONG, "-2", "Local bytes kept when tiered storage is on (-2: retention.bytes).",
           "log.local.retention.bytes", low=-2),
    _topic("local.retention.ms", LONG, "-2", "Local time kept when tiered storage is on (-2: retention.ms).",
           "log.local.retention.ms", low=-2),
    _topic("max.compaction.lag.ms", LONG, LONG_MAX, "Longest a record may stay uncompacted.",
           "log.cleaner.max.compaction.lag.ms", low=1),
    _topic("max.message.bytes", INT, "1048588", "Largest record batch the topic accepts (MESSAGE_TOO_LARGE above).",
           "message.max.bytes", low=0),
    _topic("message.timestamp.after.max.ms", LONG, LONG_MAX, "How far ahead of the broker clock a CreateTime "
           "timestamp may be (INVALID_TIMESTAMP beyond).", "log.message.timestamp.after.max.ms", low=0),
    _topic("message.timestamp.before.max.ms", LONG, LONG_MAX, "How far behind the broker clock a CreateTime "
           "timestamp may be (INVALID_TIMESTAMP beyond).", "log.message.timestamp.before.max.ms", low=0),
    _topic("message.timestamp.type", STRING, "CreateTime", "Whose time records carry: the producer's (CreateTime) "
           "or the broker's at append (LogAppendTime).", "log.message.timestamp.type",
           valid=("CreateTime", "LogAppendTime")),
    _topic("min.cleanable.dirty.ratio", DOUBLE, "0.5", "Dirty share of the log that triggers compaction.",
           "log.cleaner.min.cleanable.ratio", low=0, high=1),
    _topic("min.compaction.lag.ms", LONG, "0", "Shortest time a record stays uncompacted.",
           "log.cleaner.min.compaction.lag.ms", low=0),
    _topic("min.insync.replicas", INT, "1", "In-sync replicas an acks=all write needs (NOT_ENOUGH_REPLICAS "
           "otherwise; this broker is the only replica).", "min.insync.replicas", low=1),
    _topic("preallocate", BOOLEAN, "false", "Preallocate segment files.", "log.preallocate"),
    _topic("remote.storage.enable", BOOLEAN, "false", "Tiered storage for the topic (not available here).",
           valid=("false",)),
    _topic("retention.bytes", LONG, "-1", "Largest a partition may grow before old segments go (-1: no limit).",
           "log.retention.bytes"),
    _topic("retention.ms", LONG, "604800000", "How long segments are kept (-1: forever).", "log.retention.ms",
           ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000), low=-1),
    _topic("segment.bytes", INT, "1073741824", "Size at which a partition starts a new segment.", "log.segment.bytes",
           low=1048576),
    _topic("segment.index.bytes", INT, "10485760", "Size of a segment's offset index.", "log.index.size.max.bytes",
           low=4),
    _topic("segment.jitter.ms", LONG, "0", "Random jitter subtracted from segment.ms.", "log.roll.jitter.ms",
           ("log.roll.jitter.hours", 3_600_000), low=0),
    _topic("segment.ms", LONG, "604800000", "Age at which a segment is rolled even if not full.", "log.roll.ms",
           ("log.roll.hours", 3_600_000), low=1),
    _topic("unclean.leader.election.enable", BOOLEAN, "false", "Let an out-of-sync replica become leader.",
           "unclean.leader.election.enable"),
)}


def _broker(name, type_, default, doc, dynamic=True, **kw) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, dynamic=dynamic, **kw)


#: broker configs that supply topic defaults, with their own units and defaults
_SYNONYM_DEFS = (
    _broker("log.retention.ms", LONG, None, "Log retention in ms (wins over minutes and hours).", low=-1),
    _broker("log.retention.minutes", INT, None, "Log retention in minutes (wins over hours).", low=-1),
    _broker("log.retention.hours", INT, "168", "Log retention in hours.", low=-1),
    _broker("log.roll.ms", LONG, None, "Segment roll age in ms (wins over hours).", low=1),
    _broker("log.roll.hours", INT, "168", "Segment roll age in hours.", low=1),
    _broker("log.roll.jitter.ms", LONG, None, "Segment roll jitter in ms (wins over hours).", low=0),
    _broker("log.roll.jitter.hours", INT, "0", "Segment roll jitter in hours.", low=0),
    _broker("log.flush.interval.ms", LONG, LONG_MAX, "Default flush.ms for topics.", low=0),
)


def _synonym_def(topic_def: ConfigDef, broker_name: str) -> ConfigDef:
    return ConfigDef(broker_name, topic_def.type, topic_def.default, f"Default {topic_def.name} of topics.",
                     valid=topic_def.valid, low=topic_def.low, high=topic_def.high)


def _broker_catalogue() -> dict[str, ConfigDef]:
    defs = {d.name: d for d in _SYNONYM_DEFS}
    for t in TOPIC_CONFIGS.values():
        for broker_name, _ in t.synonyms:
            defs.setdefault(broker_name, _synonym_def(t, broker_name))
    for d in (
        _broker("node.id", INT, None, "This broker's id.", dynamic=False),
        _broker("broker.id", INT, "-1", "This broker's id (same as node.id).", dynamic=False),
        _broker("process.roles", LIST, "", "Roles this process plays.", dynamic=False, valid=("broker", "controller")),
        _broker("listeners", LIST, "PLAINTEXT://:9092", "Addresses the broker listens on.", dynamic=False),
        _broker("advertised.listeners", STRING, None, "Addresses given to clients in metadata.", dynamic=False),
        _broker("log.dirs", STRING, None, "Directory holding partition segments (none: in memory).", dynamic=False),
        _broker("num.partitions", INT, "1", "Partitions of auto-created topics.", dynamic=False, low=1),
        _broker("default.replication.factor", INT, "1", "Replication factor of auto-created topics.", dynamic=False),
        _broker("auto.create.topics.enable", BOOLEAN, "true", "Create unknown topics on Metadata requests.",
                dynamic=False),
        _broker("delete.topic.enable", BOOLEAN, "true", "Allow DeleteTopics.", dynamic=False),
        _broker("socket.request.max.bytes", INT, "104857600", "Largest request frame accepted.", dynamic=False, low=1),
        _broker("offsets.topic.replication.factor", SHORT, "3", "Replication of the offsets topic.", dynamic=False),
        _broker("transaction.state.log.replication.factor", SHORT, "3", "Replication of the transaction log.",
                dynamic=False),
        _broker("group.initial.rebalance.delay.ms", INT, "3000", "Wait before the first rebalance of a new group.",
                dynamic=False),
        _broker("num.io.threads", INT, "8", "Request handler threads.", low=1),
        _broker("num.network.threads", INT, "3", "Network threads.", low=1),
        _broker("log.retention.check.interval.ms", LONG, "300000", "How often retention is checked.",
                dynamic=False, low=1),
    ):
        defs[d.name] = d
    return defs


BROKER_CONFIGS: dict[str, ConfigDef] = _broker_catalogue()
#: broker config name -> the names it shares a topic config with, in precedence order (log.retention.*)
FAMILIES: dict[str, tuple[str, ...]] = {b: tuple(n for n, _ in t.synonyms)
                                        for t in TOPIC_CONFIGS.values() for b, _ in t.synonyms}


class Entry(NamedTuple):
    """One described config: name, value, source, synonyms [(name, value, source)], definition."""
    name: str
    value: str | None
    source: int
    synonyms: list
    definition: ConfigDef


class ConfigLayers:
    """The broker-level sources: static values and the dynamic per-broker and cluster-default sets."""

    def __init__(self, node_id: int, static: dict[str, str], dynamic: dict[str, dict[str, str]] | None = None):
        self.node_id = node_id
        self.static = dict(static)
        self.dynamic = {"": {}, str(node_id): {}}
        for scope, values in (dynamic or {}).items():
            self.dynamic.setdefault(scope, {}).update(values)

    def _sources(self) -> list[tuple[dict[str, str], int]]:
        return [(self.dynamic[str(self.node_id)], DYNAMIC_BROKER_CONFIG), (self.dynamic[""],
                DYNAMIC_DEFAULT_BROKER_CONFIG), (self.static, STATIC_BROKER_CONFIG)]

    def _layered(self, names: tuple[str, ...]) -> list[tuple[str, str | None, int]]:
        """Every (name, value, source) set for ``names``, strongest first, ending with built-in defaults."""
        found = [(n, values[n], source) for values, source in self._sources() for n in names if n in values]
        return found + [(n, BROKER_CONFIGS[n].default, DEFAULT_CONFIG) for n in names
                        if n in BROKER_CONFIGS and BROKER_CONFIGS[n].default is not None]

    def topic_entry(self, name: str, overrides: dict[str, str]) -> Entry:
        d = TOPIC_CONFIGS.get(name) or ConfigDef(name, STRING, None, "")
        factors = dict(d.synonyms)
        layered = self._layered(tuple(factors))
        synonyms = ([(name, overrides[name], DYNAMIC_TOPIC_CONFIG)] if name in overrides else []) + layered
        if name in overrides:
            return Entry(name, overrides[name], DYNAMIC_TOPIC_CONFIG, synonyms, d)
        if layered:
            broker_name, value, source = layered[0]
            return Entry(name, _scale(value, factors[broker_name]), source, synonyms, d)
        return Entry(name, d.default, DEFAULT_CONFIG, synonyms, d)

    def broker_entry(self, name: str) -> Entry:
        family = FAMILIES.get(name, (name,))
        own = self._layered((name,))
        value, source = (own[0][1], own[0][2]) if own else (None, DEFAULT_CONFIG)
        return Entry(name, value, source, self._layered(family[family.index(name):]), BROKER_CONFIGS[name])

    def default_entries(self) -> list[Entry]:
        """The cluster-wide dynamic defaults (resource name ""): only what was set."""
        return [Entry(n, v, DYNAMIC_DEFAULT_BROKER_CONFIG, [(n, v, DYNAMIC_DEFAULT_BROKER_CONFIG)],
                      BROKER_CONFIGS.get(n) or ConfigDef(n, STRING, None, "")) for n, v in sorted(self.dynamic[""].items())]


def _scale(value: str | None, factor: int) -> str | None:
    if value is None or factor == 1:
        return value
    return str(int(value) * factor)


def static_broker_values(config) -> dict[str, str]:
    """The broker configs a :class:`~.config.BrokerConfig` sets, by Kafka name; ``topic_defaults`` may use topic
    config names (``retention.ms``) or broker names (``log.retention.hours``)."""
    listener = f"PLAINTEXT://{config.host}:{config.port}"
    values = {"node.id": str(config.node_id), "broker.id": str(config.node_id), "process.roles": "broker,controller",
              "listeners": listener, "advertised.listeners": listener,
              "num.partitions": str(config.default_partitions), "auto.create.topics.enable":
              str(config.auto_create_topics).lower(), "socket.request.max.bytes": str(config.max_request_size),
              "log.segment.bytes": str(config.segment_bytes), "offsets.topic.replication.factor": "1",
              "transaction.state.log.replication.factor": "1"}
    if config.data_dir is not None:
        values["log.dirs"] = str(config.data_dir)
    for name, value in config.topic_defaults.items():
        t = TOPIC_CONFIGS.get(name)
        values[t.synonyms[0][0] if t is not None and t.synonyms else name] = str(value)
    return values
