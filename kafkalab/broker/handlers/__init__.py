"""The handler registry: api_key -> :class:`Handler` (with the versions it implements).

One module per API. Adding an API to the broker means writing its module and adding it to ``MODULES``;
ApiVersions advertises exactly this table, clamped to the versions the codec knows.
"""
from __future__ import annotations

from kafkalab.protocol import api_spec

from . import (add_offsets_to_txn, add_partitions_to_txn, add_raft_voter, allocate_producer_ids, alter_client_quotas,
               alter_configs, alter_partition_reassignments, alter_replica_log_dirs, alter_share_group_offsets,
               alter_user_scram_credentials, api_versions, consumer_group_describe, consumer_group_heartbeat,
               create_acls, create_delegation_token, create_partitions, create_topics, delete_acls, delete_groups,
               delete_records, delete_share_group_offsets, delete_topics, describe_acls, describe_client_quotas,
               describe_cluster, describe_configs, describe_delegation_token, describe_groups, describe_log_dirs,
               describe_producers, describe_quorum, describe_share_group_offsets, describe_topic_partitions,
               describe_transactions, describe_user_scram_credentials, elect_leaders, end_txn, expire_delegation_token,
               fetch, find_coordinator, get_telemetry_subscriptions, heartbeat, incremental_alter_configs,
               init_producer_id, join_group, leave_group, list_client_metrics_resources, list_groups, list_offsets,
               list_partition_reassignments, list_transactions, metadata, offset_commit, offset_delete, offset_fetch,
               offset_for_leader_epoch, produce, push_telemetry, remove_raft_voter, renew_delegation_token,
               sasl_authenticate, sasl_handshake, share_acknowledge, share_fetch, share_group_describe,
               share_group_heartbeat, streams_group_describe, streams_group_heartbeat, sync_group, txn_offset_commit,
               update_features, update_raft_voter, write_txn_markers)
from .base import Handler, Offload, RequestContext, Wait

MODULES = (produce, fetch, list_offsets, metadata, offset_commit, offset_fetch, find_coordinator, api_versions,
           create_topics, delete_topics, delete_records, init_producer_id, offset_for_leader_epoch, describe_configs,
           alter_configs, alter_replica_log_dirs, describe_log_dirs, create_partitions, create_delegation_token,
           renew_delegation_token, expire_delegation_token, describe_delegation_token, incremental_alter_configs,
           describe_cluster, get_telemetry_subscriptions, push_telemetry, list_client_metrics_resources,
           describe_topic_partitions, add_partitions_to_txn, add_offsets_to_txn, end_txn, txn_offset_commit,
           describe_transactions, list_transactions, describe_producers, write_txn_markers, allocate_producer_ids,
           join_group, sync_group, heartbeat, leave_group, describe_groups, list_groups, delete_groups, offset_delete,
           consumer_group_heartbeat, consumer_group_describe, elect_leaders, alter_partition_reassignments,
           list_partition_reassignments, describe_quorum, update_features, add_raft_voter, remove_raft_voter,
           update_raft_voter, share_group_heartbeat, share_group_describe, share_fetch, share_acknowledge,
           streams_group_heartbeat, streams_group_describe, describe_share_group_offsets, alter_share_group_offsets,
           delete_share_group_offsets, sasl_handshake, sasl_authenticate, describe_user_scram_credentials,
           alter_user_scram_credentials, describe_acls, create_acls, delete_acls, describe_client_quotas,
           alter_client_quotas)

def build_registry(modules=MODULES) -> dict[int, Handler]:
    registry = {}
    for module in modules:
        h = module.HANDLER
        low, high = api_spec(h.api_key).request.versions
        registry[h.api_key] = Handler(h.api_key, max(h.min_version, low), min(h.max_version, high), h.handle)
    return registry


REGISTRY = build_registry()

__all__ = ["Handler", "Offload", "RequestContext", "Wait", "REGISTRY", "MODULES", "build_registry"]
