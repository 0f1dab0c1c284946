"""Which ACL checks every API makes, in one table (Kafka's rules, as its KafkaApis and controller apply them).

Owns: :data:`RULES`, api_key -> the (operation, resource type) checks that API makes, and :func:`denial`, the
checks the dispatcher makes itself before any handler runs. Must not know: handlers, sockets, the codec.

Two kinds of check:
- ``GATE``: the whole request needs it (ALTER on the cluster for AlterPartitionReassignments, READ on the group a
  ShareFetch names). The dispatcher asks before the handler runs and, if denied, answers the request's
  top-level error code (CLUSTER_AUTHORIZATION_FAILED...) with an otherwise empty body. Only APIs whose
  responses carry a top-level ``error_code`` in every served version may be gated (a test checks this).
- ``HANDLER``: per named resource (each topic of a Fetch, each transactional id of DescribeTransactions): the
  handler asks ``ctx.allowed`` for each and answers that item's error, or leaves it out where Kafka filters
  (Metadata without a topic list, ListGroups, ListTransactions). A test checks that each handler's source asks.

An API missing from the table is refused (CLUSTER_ACTION on the cluster, which only super users hold), and a
test iterating the handler registry fails, so a new handler cannot forget its rule. ``PUBLIC`` APIs need no
ACL: ApiVersions and the SASL exchange (before there is a principal) and client telemetry (Kafka does not
authorize it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kafkalab.protocol import ApiKey, ErrorCode

from .authorizer import CLUSTER_NAME

GATE, HANDLER = "gate", "handler"


@dataclass(frozen=True)
class Check:
    operation: str                  # an AclOperation name: "READ", "ALTER", "CREATE_TOKENS"...
    resource: str                   # an AclResourceType name: "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"...
    by: str = HANDLER               # GATE: checked by the dispatcher for the whole request; HANDLER: per item
    name_field: str | None = None   # GATE on a named resource: the request field naming it (None: the cluster)


def gate(operation: str, resource: str = "CLUSTER", name_field: str | None = None) -> Check:
    return Check(operation, resource, GATE, name_field)


def each(operation: str, resource: str) -> Check:
    return Check(operation, resource, HANDLER)


PUBLIC: tuple[Check, ...] = ()
#: No ACL: as in Kafka, only the token's owner and its renewers may renew or expire it (the token store checks).
TOKEN_HOLDERS: tuple[Check, ...] = ()
FAIL_CLOSED = (gate("CLUSTER_ACTION"),)

#: The error code a denied check answers, by resource type.
DENIED = {"CLUSTER": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "TOPIC": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
          "GROUP": ErrorCode.GROUP_AUTHORIZATION_FAILED,
          "TRANSACTIONAL_ID": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
          "DELEGATION_TOKEN": ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
          "USER": ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED}

_TXN = each("WRITE", "TRANSACTIONAL_ID")

RULES: dict[int, tuple[Check, ...]] = {
    ApiKey.PRODUCE: (each("WRITE", "TOPIC"), _TXN),
    ApiKey.FETCH: (each("READ", "TOPIC"),),
    ApiKey.LIST_OFFSETS: (each("DESCRIBE", "TOPIC"),),
    ApiKey.METADATA: (each("DESCRIBE", "TOPIC"), each("CREATE", "CLUSTER"), each("CREATE", "TOPIC")),
    ApiKey.OFFSET_COMMIT: (each("READ", "GROUP"), each("READ", "TOPIC")),
    ApiKey.OFFSET_FETCH: (each("DESCRIBE", "GROUP"), each("DESCRIBE", "TOPIC")),
    ApiKey.FIND_COORDINATOR: (each("DESCRIBE", "GROUP"),),
    ApiKey.JOIN_GROUP: (each("READ", "GROUP"),),
    ApiKey.HEARTBEAT: (each("READ", "GROUP"),),
    ApiKey.LEAVE_GROUP: (each("READ", "GROUP"),),
    ApiKey.SYNC_GROUP: (each("READ", "GROUP"),),
    ApiKey.DESCRIBE_GROUPS: (each("DESCRIBE", "GROUP"),),
    ApiKey.LIST_GROUPS: (each("DESCRIBE", "GROUP"),),
    ApiKey.SASL_HANDSHAKE: PUBLIC,
    ApiKey.API_VERSIONS: PUBLIC,
    ApiKey.CREATE_TOPICS: (each("CREATE", "CLUSTER"), each("CREATE", "TOPIC")),
    ApiKey.DELETE_TOPICS: (each("DELETE", "TOPIC"),),
    ApiKey.DELETE_RECORDS: (each("DELETE", "TOPIC"),),
    ApiKey.INIT_PRODUCER_ID: (_TXN, each("IDEMPOTENT_WRITE", "CLUSTER")),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (each("DESCRIBE", "TOPIC"),),
    ApiKey.ADD_PARTITIONS_TO_TXN: (_TXN, each("WRITE", "TOPIC")),
    ApiKey.ADD_OFFSETS_TO_TXN: (_TXN, each("READ", "GROUP")),
    ApiKey.END_TXN: (_TXN,),
    ApiKey.WRITE_TXN_MARKERS: (each("CLUSTER_ACTION", "CLUSTER"),),
    ApiKey.TXN_OFFSET_COMMIT: (_TXN, each("READ", "GROUP"), each("READ", "TOPIC")),
    ApiKey.DESCRIBE_ACLS: (gate("DESCRIBE"),),
    ApiKey.CREATE_ACLS: (each("ALTER", "CLUSTER"),),
    ApiKey.DELETE_ACLS: (each("ALTER", "CLUSTER"),),
    ApiKey.DESCRIBE_CONFIGS: (each("DESCRIBE_CONFIGS", "CLUSTER"), each("DESCRIBE_CONFIGS", "TOPIC")),
    ApiKey.ALTER_CONFIGS: (each("ALTER_CONFIGS", "CLUSTER"), each("ALTER_CONFIGS", "TOPIC")),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (each("ALTER", "CLUSTER"),),
    ApiKey.DESCRIBE_LOG_DIRS: (each("DESCRIBE", "CLUSTER"),),
    ApiKey.SASL_AUTHENTICATE: PUBLIC,
    ApiKey.CREATE_PARTITIONS: (each("ALTER", "TOPIC"),),
    ApiKey.CREATE_DELEGATION_TOKEN: (each("CREATE_TOKENS", "USER"),),
    ApiKey.RENEW_DELEGATION_TOKEN: TOKEN_HOLDERS,
    ApiKey.EXPIRE_DELEGATION_TOKEN: TOKEN_HOLDERS,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (each("DESCRIBE", "DELEGATION_TOKEN"), each("DESCRIBE_TOKENS", "USER")),
    ApiKey.DELETE_GROUPS: (each("DELETE", "GROUP"),),
    ApiKey.ELECT_LEADERS: (each("ALTER", "CLUSTER"),),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (each("ALTER_CONFIGS", "CLUSTER"), each("ALTER_CONFIGS", "TOPIC")),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (gate("ALTER"),),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (gate("DESCRIBE"),),
    ApiKey.OFFSET_DELETE: (each("DELETE", "GROUP"), each("READ", "TOPIC")),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (gate("DESCRIBE_CONFIGS"),),
    ApiKey.ALTER_CLIENT_QUOTAS: (each("ALTER_CONFIGS", "CLUSTER"),),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (gate("DESCRIBE"),),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (each("ALTER", "CLUSTER"),),
    ApiKey.DESCRIBE_QUORUM: (gate("DESCRIBE"),),
    ApiKey.UPDATE_FEATURES: (gate("ALTER"),),
    ApiKey.DESCRIBE_CLUSTER: PUBLIC,          # Kafka answers everyone; the authorized operations follow the ACLs
    ApiKey.DESCRIBE_PRODUCERS: (each("READ", "TOPIC"),),
    ApiKey.DESCRIBE_TRANSACTIONS: (each("DESCRIBE", "TRANSACTIONAL_ID"), each("DESCRIBE", "TOPIC")),
    ApiKey.LIST_TRANSACTIONS: (each("DESCRIBE", "TRANSACTIONAL_ID"),),
    ApiKey.ALLOCATE_PRODUCER_IDS: (gate("CLUSTER_ACTION"),),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (each("READ", "GROUP"), each("DESCRIBE", "TOPIC")),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (each("DESCRIBE", "GROUP"),),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: PUBLIC,
    ApiKey.PUSH_TELEMETRY: PUBLIC,
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: (gate("DESCRIBE_CONFIGS"),),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (each("DESCRIBE", "TOPIC"),),
    ApiKey.SHARE_GROUP_HEARTBEAT: (gate("READ", "GROUP", "group_id"), each("DESCRIBE", "TOPIC")),
    ApiKey.SHARE_GROUP_DESCRIBE: (each("DESCRIBE", "GROUP"),),
    ApiKey.SHARE_FETCH: (gate("READ", "GROUP", "group_id"), each("READ", "TOPIC")),
    ApiKey.SHARE_ACKNOWLEDGE: (gate("READ", "GROUP", "group_id"), each("READ", "TOPIC")),
    ApiKey.ADD_RAFT_VOTER: (gate("ALTER"),),
    ApiKey.REMOVE_RAFT_VOTER: (gate("ALTER"),),
    ApiKey.UPDATE_RAFT_VOTER: (gate("CLUSTER_ACTION"),),
    ApiKey.STREAMS_GROUP_HEARTBEAT: (gate("READ", "GROUP", "group_id"), each("DESCRIBE", "TOPIC")),
    ApiKey.STREAMS_GROUP_DESCRIBE: (each("DESCRIBE", "GROUP"),),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (each("DESCRIBE", "GROUP"), each("DESCRIBE", "TOPIC")),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (gate("READ", "GROUP", "group_id"), each("READ", "TOPIC")),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (gate("DELETE", "GROUP", "group_id"), each("READ", "TOPIC")),
}


def denial(allowed: Callable[[str, str, str], bool], api_key: int, body: dict) -> int | None:
    """The error code that refuses this request before its handler runs (a GATE check denied), or None.
    ``allowed(operation, resource_type, name)`` is the connection's authorization question."""
    for check in RULES.get(api_key, FAIL_CLOSED):
        if check.by != GATE:
            continue
        name = CLUSTER_NAME if check.name_field is None else str(body.get(check.name_field) or "")
        if not allowed(check.operation, check.resource, name):
            return int(DENIED[check.resource])
    return None
