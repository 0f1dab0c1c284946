"""Enumerated values that appear inside Kafka message bodies.

Kafka's message schemas type these fields as plain ``int8``/``int64``/``string``: the meaning of ``2`` in an
ACL ``resource_type`` (TOPIC) or of ``1`` in ``isolation_level`` (READ_COMMITTED) lives only in the Java
code of the broker and clients. This module keeps those value tables as data so the dissector can print
``isolation_level: 1 (READ_COMMITTED)`` and the notebooks can explain what a capture asks for.

Each table is an :class:`~.enum_table.EnumTable`, a read-only mapping from wire value to an upper-case name
(for the few string-valued enums, from the exact wire string to a name); :data:`ENUMS` holds them all by
name. Which message fields carry which table, and the look-ups, are :mod:`.enum_fields`.

The numbers and strings are protocol facts checked against Apache Kafka's sources (the Java enums behind
each table are named in its ``about`` text); the descriptions are this project's own.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from .enum_table import EnumTable


# --- ACLs (CreateAcls, DescribeAcls, DeleteAcls) -------------------------------------------------------

ACL_RESOURCE_TYPES = EnumTable(
    "AclResourceType",
    "Kind of resource an ACL binding protects (org.apache.kafka.common.resource.ResourceType). "
    "ANY only appears in filters; UNKNOWN marks a value the sender did not recognise.",
    {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
     6: "DELEGATION_TOKEN", 7: "USER"},
)

ACL_OPERATIONS = EnumTable(
    "AclOperation",
    "Operation an ACL allows or denies (org.apache.kafka.common.acl.AclOperation); ANY is for filters, "
    "ALL grants everything. TWO_PHASE_COMMIT (on transactional ids) arrived with Kafka 4.x (KIP-939). "
    "The same numbering gives the bit positions of the *_authorized_operations bit fields.",
    {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
     8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
     12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"},
)

ACL_PERMISSION_TYPES = EnumTable(
    "AclPermissionType",
    "Whether an ACL allows or denies (org.apache.kafka.common.acl.AclPermissionType); ANY is for filters.",
    {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"},
)

ACL_PATTERN_TYPES = EnumTable(
    "AclPatternType",
    "How an ACL's resource name is matched (org.apache.kafka.common.resource.PatternType): LITERAL names "
    "one resource (or all, with '*'), PREFIXED covers names starting with it. ANY and MATCH are filter-only.",
    {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"},
)

# --- configs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, CreateTopics, ListConfigResources) -

CONFIG_RESOURCE_TYPES = EnumTable(
    "ConfigResourceType",
    "Kind of resource a configuration belongs to (org.apache.kafka.common.config.ConfigResource.Type). "
    "Note the numbering differs from the ACL resource types (here 4 is BROKER, there CLUSTER).",
    {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"},
)

CONFIG_SOURCES = EnumTable(
    "ConfigSource",
    "Where a config value reported by DescribeConfigs v1+ (and CreateTopics v5+) comes from "
    "(DescribeConfigsResponse.ConfigSource).",
    {0: "UNKNOWN", 1: "TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
     4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
     7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"},
)

CONFIG_TYPES = EnumTable(
    "ConfigType",
    "Data type of a config value, reported by DescribeConfigs v3+ (DescribeConfigsResponse.ConfigType).",
    {0: "UNKNOWN", 1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE", 7: "LIST",
     8: "CLASS", 9: "PASSWORD"},
)

ALTER_CONFIG_OP_TYPES = EnumTable(
    "AlterConfigOpType",
    "What IncrementalAlterConfigs does to one config entry (AlterConfigOp.OpType); APPEND and SUBTRACT "
    "only apply to list-valued configs.",
    {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"},
)

# --- fetching and offsets -----------------------------------------------------------------------------

ISOLATION_LEVELS = EnumTable(
    "IsolationLevel",
    "Which records Fetch and ListOffsets may expose (org.apache.kafka.common.IsolationLevel): "
    "READ_COMMITTED stops at the last stable offset and hides aborted transactional data.",
    {0: "READ_UNCOMMITTED", 1: "READ_COMMITTED"},
)

LIST_OFFSETS_TIMESTAMPS = EnumTable(
    "ListOffsetsTimestamp",
    "Negative ListOffsets request timestamps that ask for a special offset instead of a time lookup "
    "(ListOffsetsRequest constants): -3 needs v7+, -4 v8+, -5 v9+, -6 (KIP-1023, Kafka 4.x) a newer "
    "version still. Zero and positive values are real timestamps in milliseconds.",
    {-1: "LATEST", -2: "EARLIEST", -3: "MAX_TIMESTAMP", -4: "EARLIEST_LOCAL", -5: "LATEST_TIERED",
     -6: "EARLIEST_PENDING_UPLOAD"},
)

# --- coordinators, groups, transactions ---------------------------------------------------------------

COORDINATOR_KEY_TYPES = EnumTable(
    "CoordinatorType",
    "What a FindCoordinator key names (FindCoordinatorRequest.CoordinatorType): a group id, a "
    "transactional id, or a share-group state key (group:topicId:partition).",
    {0: "GROUP", 1: "TRANSACTION", 2: "SHARE"},
)

GROUP_STATES = EnumTable(
    "GroupState",
    "Group state strings as brokers report them in DescribeGroups, ListGroups and the *GroupDescribe "
    "APIs (ClassicGroupState, ConsumerGroupState, ShareGroupState, GroupState). Classic groups use "
    "PreparingRebalance/CompletingRebalance, KIP-848 groups Assigning/Reconciling, streams groups add "
    "NotReady. Brokers match the ListGroups states filter without regard to case.",
    {"Unknown": "UNKNOWN", "PreparingRebalance": "PREPARING_REBALANCE",
     "CompletingRebalance": "COMPLETING_REBALANCE", "Stable": "STABLE", "Dead": "DEAD", "Empty": "EMPTY",
     "Assigning": "ASSIGNING", "Reconciling": "RECONCILING", "NotReady": "NOT_READY"},
    case_insensitive=True,
)

GROUP_TYPES = EnumTable(
    "GroupType",
    "Group type strings of ListGroups v5+ (org.apache.kafka.common.GroupType), matched without regard "
    "to case. Streams groups (KIP-1071) exist from Kafka 4.1.",
    {"Unknown": "UNKNOWN", "Consumer": "CONSUMER", "Classic": "CLASSIC", "Share": "SHARE",
     "Streams": "STREAMS"},
    case_insensitive=True,
)

TRANSACTION_STATES = EnumTable(
    "TransactionState",
    "Transaction state strings reported by DescribeTransactions and ListTransactions and accepted in the "
    "ListTransactions state filter (the coordinator's state names).",
    {"Empty": "EMPTY", "Ongoing": "ONGOING", "PrepareCommit": "PREPARE_COMMIT",
     "PrepareAbort": "PREPARE_ABORT", "CompleteCommit": "COMPLETE_COMMIT", "CompleteAbort": "COMPLETE_ABORT",
     "Dead": "DEAD", "PrepareEpochFence": "PREPARE_EPOCH_FENCE"},
)

TRANSACTION_STATUSES = EnumTable(
    "TransactionStatus",
    "The int8 transaction state stored in __transaction_state records (TransactionLogValue "
    "transaction_status): the same states as the strings, by their persisted ids.",
    {0: "EMPTY", 1: "ONGOING", 2: "PREPARE_COMMIT", 3: "PREPARE_ABORT", 4: "COMPLETE_COMMIT",
     5: "COMPLETE_ABORT", 6: "DEAD", 7: "PREPARE_EPOCH_FENCE"},
)

# --- share groups (KIP-932) ---------------------------------------------------------------------------

SHARE_ACKNOWLEDGE_TYPES = EnumTable(
    "ShareAcknowledgeType",
    "Per-offset acknowledgement kinds in ShareFetch/ShareAcknowledge batches: GAP marks offsets with no "
    "record (wire-only), RENEW (a later Kafka 4.x addition) extends the acquisition lock.",
    {0: "GAP", 1: "ACCEPT", 2: "RELEASE", 3: "REJECT", 4: "RENEW"},
)

SHARE_DELIVERY_STATES = EnumTable(
    "ShareDeliveryState",
    "Record state persisted by the share coordinator (Read/WriteShareGroupState delivery_state; "
    "SharePartition.RecordState). ACQUIRED is in-memory only and not normally persisted.",
    {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"},
)

# --- admin odds and ends ------------------------------------------------------------------------------

QUOTA_ENTITY_TYPES = EnumTable(
    "QuotaEntityType",
    "Entity type strings of DescribeClientQuotas/AlterClientQuotas (ClientQuotaEntity constants).",
    {"user": "USER", "client-id": "CLIENT_ID", "ip": "IP"},
)

QUOTA_MATCH_TYPES = EnumTable(
    "QuotaMatchType",
    "How a DescribeClientQuotas filter component matches: an exact name, the default entity, or any "
    "specified (non-default) entity (DescribeClientQuotasRequest MATCH_TYPE_*).",
    {0: "EXACT", 1: "DEFAULT", 2: "SPECIFIED"},
)

SCRAM_MECHANISMS = EnumTable(
    "ScramMechanism",
    "SCRAM mechanism ids of DescribeUserScramCredentials/AlterUserScramCredentials "
    "(org.apache.kafka.clients.admin.ScramMechanism); SASL itself names them SCRAM-SHA-256/512.",
    {0: "UNKNOWN", 1: "SCRAM_SHA_256", 2: "SCRAM_SHA_512"},
)

ELECTION_TYPES = EnumTable(
    "ElectionType",
    "Kind of leader election ElectLeaders v1+ asks for (org.apache.kafka.common.ElectionType).",
    {0: "PREFERRED", 1: "UNCLEAN"},
)

FEATURE_UPGRADE_TYPES = EnumTable(
    "FeatureUpgradeType",
    "UpdateFeatures v1+ upgrade_type (FeatureUpdate.UpgradeType): whether a downgrade may lose metadata.",
    {0: "UNKNOWN", 1: "UPGRADE", 2: "SAFE_DOWNGRADE", 3: "UNSAFE_DOWNGRADE"},
)

ENDPOINT_TYPES = EnumTable(
    "EndpointType",
    "Which kind of node a DescribeCluster v1+ request targets and its response lists "
    "(org.apache.kafka.clients.admin.EndpointType).",
    {0: "UNKNOWN", 1: "BROKER", 2: "CONTROLLER"},
)

LEADER_RECOVERY_STATES = EnumTable(
    "LeaderRecoveryState",
    "Whether a partition leader elected uncleanly is still recovering (AlterPartition, LeaderAndIsr; "
    "org.apache.kafka.metadata.LeaderRecoveryState).",
    {0: "RECOVERED", 1: "RECOVERING"},
)

# --- record batches (not message fields, but decoded alongside them) -----------------------------------

CONTROL_RECORD_TYPES = EnumTable(
    "ControlRecordType",
    "The int16 type in the key of a control record (org.apache.kafka.common.record.ControlRecordType): "
    "transaction markers (ABORT, COMMIT) and KRaft log/snapshot bookkeeping records.",
    {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
     5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"},
)

COMPRESSION_CODECS = EnumTable(
    "CompressionCodec",
    "Codec id in the low three bits of message-set/record-batch attributes "
    "(org.apache.kafka.common.record.CompressionType).",
    {0: "NONE", 1: "GZIP", 2: "SNAPPY", 3: "LZ4", 4: "ZSTD"},
)

TIMESTAMP_TYPES = EnumTable(
    "TimestampType",
    "Attribute bit 3 of a v1 message or v2 record batch (org.apache.kafka.common.record.TimestampType).",
    {0: "CREATE_TIME", 1: "LOG_APPEND_TIME"},
)


#: Every table, by its ``name``.
ENUMS: Mapping[str, EnumTable] = MappingProxyType({
    t.name: t for t in (
        ACL_RESOURCE_TYPES, ACL_OPERATIONS, ACL_PERMISSION_TYPES, ACL_PATTERN_TYPES,
        CONFIG_RESOURCE_TYPES, CONFIG_SOURCES, CONFIG_TYPES, ALTER_CONFIG_OP_TYPES,
        ISOLATION_LEVELS, LIST_OFFSETS_TIMESTAMPS,
        COORDINATOR_KEY_TYPES, GROUP_STATES, GROUP_TYPES, TRANSACTION_STATES, TRANSACTION_STATUSES,
        SHARE_ACKNOWLEDGE_TYPES, SHARE_DELIVERY_STATES,
        QUOTA_ENTITY_TYPES, QUOTA_MATCH_TYPES, SCRAM_MECHANISMS, ELECTION_TYPES, FEATURE_UPGRADE_TYPES,
        ENDPOINT_TYPES, LEADER_RECOVERY_STATES,
        CONTROL_RECORD_TYPES, COMPRESSION_CODECS, TIMESTAMP_TYPES,
    )
})

__all__ = [
    "ENUMS",
    "ACL_RESOURCE_TYPES", "ACL_OPERATIONS", "ACL_PERMISSION_TYPES", "ACL_PATTERN_TYPES",
    "CONFIG_RESOURCE_TYPES", "CONFIG_SOURCES", "CONFIG_TYPES", "ALTER_CONFIG_OP_TYPES",
    "ISOLATION_LEVELS", "LIST_OFFSETS_TIMESTAMPS",
    "COORDINATOR_KEY_TYPES", "GROUP_STATES", "GROUP_TYPES", "TRANSACTION_STATES", "TRANSACTION_STATUSES",
    "SHARE_ACKNOWLEDGE_TYPES", "SHARE_DELIVERY_STATES",
    "QUOTA_ENTITY_TYPES", "QUOTA_MATCH_TYPES", "SCRAM_MECHANISMS", "ELECTION_TYPES", "FEATURE_UPGRADE_TYPES",
    "ENDPOINT_TYPES", "LEADER_RECOVERY_STATES",
    "CONTROL_RECORD_TYPES", "COMPRESSION_CODECS", "TIMESTAMP_TYPES",
]
