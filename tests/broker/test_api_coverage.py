"""Every API key the broker advertises has a test that speaks it over a real socket: a real client (kafka-python,
confluent-kafka/librdkafka, kafkajs, kcat) where one speaks it, else kafkalab's own codec (``RawClient``).

``COVERED`` maps each served key to one such test and the words in that test's source that send it (the client
call, or the API's name, which ``ApiKey.NAME`` also satisfies); the check fails for a served key without an
entry, and for an entry whose test is gone or no longer says those words. Add the entry when you add a handler.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafkalab.broker.handlers import REGISTRY
from kafkalab.protocol import ApiKey, api_spec

HERE = Path(__file__).resolve().parent
K = ApiKey

COVERED: dict[int, tuple[str, str]] = {
    K.PRODUCE: ("test_broker_kafkajs.py::test_kafkajs_keyed_records_headers_timestamps_gzip", "kafkajs"),
    K.FETCH: ("test_broker_quotas.py::test_confluent_consumer_is_throttled", "Consumer"),
    K.LIST_OFFSETS: ("test_broker_admin.py::test_delete_records_moves_the_log_start", "ListOffsets"),
    K.METADATA: ("test_broker_acls.py::test_metadata_group_and_cluster_answers_follow_acls", "Metadata"),
    K.OFFSET_COMMIT: ("test_broker_groups.py::test_kafka_python_group", "kafka_python("),
    K.OFFSET_FETCH: ("test_broker_transactions_protocol.py::"
                     "test_offset_fetch_require_stable_sees_pending_transactional_offsets", "OffsetFetch"),
    K.FIND_COORDINATOR: ("test_broker_group_apis.py::test_find_coordinator_batches_keys_and_checks_key_types",
                         "FindCoordinator"),
    K.JOIN_GROUP: ("test_broker_groups.py::test_kafka_python_group", "kafka_python("),
    K.HEARTBEAT: ("test_broker_group_apis.py::test_every_join_group_version_round_trips_a_whole_membership",
                  "Heartbeat"),
    K.LEAVE_GROUP: ("test_broker_groups.py::test_confluent_group", "LeaveGroup"),
    K.SYNC_GROUP: ("test_broker_groups.py::test_confluent_group", "Consumer"),
    K.DESCRIBE_GROUPS: ("test_broker_group_apis.py::test_describe_list_delete_groups", "DescribeGroups"),
    K.LIST_GROUPS: ("test_broker_group_apis.py::test_describe_list_delete_groups", "ListGroups"),
    K.SASL_HANDSHAKE: ("test_broker_sasl_protocol.py::test_scram_exchange_and_server_signature", "sasl()"),
    K.API_VERSIONS: ("test_broker_tls.py::test_given_certificate_and_raw_client", "ApiVersions"),
    K.CREATE_TOPICS: ("test_broker_protocol.py::test_list_offsets_and_log_append_time", "CreateTopics"),
    K.DELETE_TOPICS: ("test_broker_admin.py::test_delete_topics_by_name_and_by_id", "DeleteTopics"),
    K.DELETE_RECORDS: ("test_broker_admin.py::test_delete_records_moves_the_log_start", "DeleteRecords"),
    K.INIT_PRODUCER_ID: ("test_broker_quorum_logdirs.py::test_producer_id_blocks_come_from_the_counter_init_producer_id_uses",
                         "INIT_PRODUCER_ID"),
    K.OFFSET_FOR_LEADER_EPOCH: ("test_broker_admin.py::test_offset_for_leader_epoch", "OffsetForLeaderEpoch"),
    K.ADD_PARTITIONS_TO_TXN: ("test_broker_transactions_protocol.py::test_add_partitions_v4_batches_transactions_and_verifies",
                              "AddPartitionsToTxn"),
    K.ADD_OFFSETS_TO_TXN: ("test_broker_acls.py::test_transaction_apis_and_log_dirs_ask_the_authorizer",
                           "AddOffsetsToTxn"),
    K.END_TXN: ("test_broker_transactions_protocol.py::test_transactional_produce_is_verified", "EndTxn"),
    K.WRITE_TXN_MARKERS: ("test_broker_transactions_protocol.py::test_kafka_python_admin_describes_lists_and_aborts",
                          "abort_transaction"),
    K.TXN_OFFSET_COMMIT: ("test_broker_transactions_protocol.py::"
                          "test_txn_offset_commit_checks_the_member_and_generation_it_names", "TxnOffsetCommit"),
    K.DESCRIBE_ACLS: ("test_broker_acls.py::test_admin_describes_and_deletes_acls", "describe_acls"),
    K.CREATE_ACLS: ("test_broker_acls.py::test_metadata_group_and_cluster_answers_follow_acls", "CreateAcls"),
    K.DELETE_ACLS: ("test_broker_acls.py::test_admin_describes_and_deletes_acls", "delete_acls"),
    K.DESCRIBE_CONFIGS: ("test_broker_acls.py::test_config_partition_and_record_apis_ask_the_authorizer",
                         "DescribeConfigs"),
    K.ALTER_CONFIGS: ("test_broker_admin.py::test_alter_configs_replaces_the_whole_set", "AlterConfigs"),
    K.ALTER_REPLICA_LOG_DIRS: ("test_broker_quorum_logdirs.py::test_replica_moves_show_in_describe_log_dirs",
                               "alter_replica_log_dirs"),
    K.DESCRIBE_LOG_DIRS: ("test_broker_quorum_logdirs.py::test_replica_moves_show_in_describe_log_dirs",
                          "describe_log_dirs"),
    K.SASL_AUTHENTICATE: ("test_broker_sasl_protocol.py::test_scram_exchange_and_server_signature", "authenticate("),
    K.CREATE_PARTITIONS: ("test_broker_admin.py::test_create_partitions", "CreatePartitions"),
    K.CREATE_DELEGATION_TOKEN: ("test_broker_delegation_tokens.py::test_create_describe_renew_expire", "create("),
    K.RENEW_DELEGATION_TOKEN: ("test_broker_delegation_tokens.py::test_create_describe_renew_expire",
                               "RENEW_DELEGATION_TOKEN"),
    K.EXPIRE_DELEGATION_TOKEN: ("test_broker_delegation_tokens.py::test_create_describe_renew_expire",
                                "EXPIRE_DELEGATION_TOKEN"),
    K.DESCRIBE_DELEGATION_TOKEN: ("test_broker_delegation_tokens.py::test_create_describe_renew_expire", "describe("),
    K.DELETE_GROUPS: ("test_broker_group_apis.py::test_describe_list_delete_groups", "DeleteGroups"),
    K.ELECT_LEADERS: ("test_broker_cluster_admin.py::test_elect_leaders_returns_leadership_to_the_preferred_replica",
                      "elect_leaders"),
    K.INCREMENTAL_ALTER_CONFIGS: ("test_broker_acls.py::test_config_partition_and_record_apis_ask_the_authorizer",
                                  "IncrementalAlterConfigs"),
    K.ALTER_PARTITION_REASSIGNMENTS: ("test_broker_cluster_admin.py::"
                                      "test_reassignment_changes_replicas_and_moves_a_leader_that_left",
                                      "alter_partition_reassignments"),
    K.LIST_PARTITION_REASSIGNMENTS: ("test_broker_quorum_logdirs.py::test_cluster_apis_refuse_a_principal_without_rights",
                                     "list_partition_reassignments"),
    K.OFFSET_DELETE: ("test_broker_group_apis.py::test_offset_delete_keeps_subscribed_topics", "OffsetDelete"),
    K.DESCRIBE_CLIENT_QUOTAS: ("test_broker_quotas.py::test_alter_and_describe_client_quotas", "DescribeClientQuotas"),
    K.ALTER_CLIENT_QUOTAS: ("test_broker_quotas.py::test_alter_and_describe_client_quotas", "AlterClientQuotas"),
    K.DESCRIBE_USER_SCRAM_CREDENTIALS: ("test_broker_sasl_protocol.py::test_scram_credentials_described_and_altered",
                                        "DescribeUserScramCredentials"),
    K.ALTER_USER_SCRAM_CREDENTIALS: ("test_broker_sasl_protocol.py::test_scram_credentials_described_and_altered",
                                     "AlterUserScramCredentials"),
    K.DESCRIBE_QUORUM: ("test_broker_quorum_logdirs.py::test_raft_voters_change_the_quorum_clients_describe",
                        "describe_metadata_quorum"),
    K.UPDATE_FEATURES: ("test_broker_cluster_admin.py::test_features_are_reported_and_updated", "update_features"),
    K.DESCRIBE_CLUSTER: ("test_broker_admin.py::test_describe_cluster", "DescribeCluster"),
    K.DESCRIBE_PRODUCERS: ("test_broker_transactions_protocol.py::test_kafka_python_admin_describes_lists_and_aborts",
                           "describe_producers"),
    K.DESCRIBE_TRANSACTIONS: ("test_broker_quorum_logdirs.py::test_cluster_apis_refuse_a_principal_without_rights",
                              "DESCRIBE_TRANSACTIONS"),
    K.LIST_TRANSACTIONS: ("test_broker_transactions_protocol.py::test_kafka_python_admin_describes_lists_and_aborts",
                          "list_transactions"),
    K.ALLOCATE_PRODUCER_IDS: ("test_broker_quorum_logdirs.py::"
                              "test_producer_id_blocks_come_from_the_counter_init_producer_id_uses",
                              "ALLOCATE_PRODUCER_IDS"),
    K.CONSUMER_GROUP_HEARTBEAT: ("test_broker_groups.py::test_confluent_group", "Consumer"),
    K.CONSUMER_GROUP_DESCRIBE: ("test_broker_group_apis.py::test_consumer_group_heartbeat_assigns_on_the_server",
                                "ConsumerGroupDescribe"),
    K.GET_TELEMETRY_SUBSCRIPTIONS: ("test_broker_client_metrics.py::"
                                    "test_librdkafka_pushes_the_metrics_its_subscription_asks_for", "_produce_for("),
    K.PUSH_TELEMETRY: ("test_broker_client_metrics.py::test_librdkafka_pushes_the_metrics_its_subscription_asks_for",
                       "pushes"),
    K.LIST_CLIENT_METRICS_RESOURCES: ("test_broker_client_metrics.py::"
                                      "test_a_changed_subscription_and_bad_configs_are_refused",
                                      "LIST_CLIENT_METRICS_RESOURCES"),
    K.DESCRIBE_TOPIC_PARTITIONS: ("test_broker_admin.py::test_describe_topic_partitions_pages_with_a_cursor",
                                  "DescribeTopicPartitions"),
    K.SHARE_GROUP_HEARTBEAT: ("test_broker_share_librdkafka.py::test_implicit_acknowledgement_accepts_what_was_delivered",
                              "ShareConsumer"),
    K.SHARE_GROUP_DESCRIBE: ("test_broker_share_groups.py::"
                             "test_share_group_delivers_each_record_to_one_member_and_redelivers_released_ones",
                             "ShareGroupDescribe"),
    K.SHARE_FETCH: ("test_broker_share_librdkafka.py::test_implicit_acknowledgement_accepts_what_was_delivered",
                    "poll_until"),
    K.SHARE_ACKNOWLEDGE: ("test_broker_share_groups.py::"
                          "test_share_group_delivers_each_record_to_one_member_and_redelivers_released_ones",
                          "ShareAcknowledge"),
    K.ADD_RAFT_VOTER: ("test_broker_quorum_logdirs.py::test_raft_voters_change_the_quorum_clients_describe",
                       "ADD_RAFT_VOTER"),
    K.REMOVE_RAFT_VOTER: ("test_broker_quorum_logdirs.py::test_raft_voters_change_the_quorum_clients_describe",
                          "REMOVE_RAFT_VOTER"),
    K.UPDATE_RAFT_VOTER: ("test_broker_quorum_logdirs.py::test_raft_voters_change_the_quorum_clients_describe",
                          "UPDATE_RAFT_VOTER"),
    K.STREAMS_GROUP_HEARTBEAT: ("test_broker_streams_groups.py::"
                                "test_tasks_are_dealt_over_members_and_internal_topics_created", "beat("),
    K.STREAMS_GROUP_DESCRIBE: ("test_broker_streams_groups.py::"
                               "test_tasks_are_dealt_over_members_and_internal_topics_created", "STREAMS_GROUP_DESCRIBE"),
    K.DESCRIBE_SHARE_GROUP_OFFSETS: ("test_broker_share_groups.py::"
                                     "test_share_group_delivers_each_record_to_one_member_and_redelivers_released_ones",
                                     "DescribeShareGroupOffsets"),
    K.ALTER_SHARE_GROUP_OFFSETS: ("test_broker_share_groups.py::"
                                  "test_lock_expiry_and_leaving_release_records_and_offsets_reset_when_empty",
                                  "AlterShareGroupOffsets"),
    K.DELETE_SHARE_GROUP_OFFSETS: ("test_broker_share_groups.py::"
                                   "test_lock_expiry_and_leaving_release_records_and_offsets_reset_when_empty",
                                   "DeleteShareGroupOffsets"),
}


def _function_source(node_id: str) -> str | None:
    filename, name = node_id.split("::")
    path = HERE / filename
    if not path.exists():
        return None
    text = path.read_text()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    return None


def test_every_advertised_key_has_a_test():
    missing = sorted(ApiKey(k).name for k in REGISTRY if k not in COVERED)
    assert not missing, f"served without a test named in COVERED: {missing}"


@pytest.mark.parametrize("api_key", sorted(COVERED), ids=lambda k: ApiKey(k).name)
def test_the_named_test_exists_and_sends_the_api(api_key):
    node_id, words = COVERED[api_key]
    source = _function_source(node_id)
    assert source is not None, f"{node_id} is gone"
    name, spelled = ApiKey(api_key).name, api_spec(api_key).name
    either = {words, f"ApiKey.{name}", spelled} if words in (name, spelled) else {words}
    assert any(w in source for w in either), f"{node_id} no longer says {words!r}"
