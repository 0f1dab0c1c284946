"""Cluster controls the lab serves beyond kfake: replica moves between log dirs (kafka-python's admin), the KRaft
voter set (Add/Remove/UpdateRaftVoter through kafkalab's codec, seen by kafka-python's DescribeQuorum and
DescribeCluster), producer-id blocks, and the ACLs on these and other cluster APIs as real clients see them."""
from __future__ import annotations

import uuid

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.protocol import ApiKey, ErrorCode

DIRECTORY = uuid.UUID("6f1b6c3e-0000-4000-8000-000000000002")


@pytest.fixture()
def admin_for():
    made = []

    def make(bootstrap: str, **config):
        from kafka.admin import KafkaAdminClient
        made.append(KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000, **config))
        return made[-1]
    yield make
    for admin in made:
        admin.close()


def test_replica_moves_show_in_describe_log_dirs(tmp_path, admin_for):
    from kafka import TopicPartitionReplica
    from kafka.errors import LogDirNotFoundError, NoError, UnknownTopicOrPartitionError
    spare = str(tmp_path / "spare")
    (tmp_path / "spare").mkdir()
    with Broker(data_dir=tmp_path / "data", log_dirs=(spare,), topics={"t": 2}) as broker:
        admin = admin_for(broker.bootstrap_servers)
        moved = admin.alter_replica_log_dirs({TopicPartitionReplica("t", 1, 1): spare,
                                              TopicPartitionReplica("t", 0, 1): "/not/a/log/dir",
                                              TopicPartitionReplica("nope", 0, 1): spare})
        assert moved == {TopicPartitionReplica("t", 1, 1): NoError,
                         TopicPartitionReplica("t", 0, 1): LogDirNotFoundError,
                         TopicPartitionReplica("nope", 0, 1): UnknownTopicOrPartitionError}
        (described,) = admin.describe_log_dirs()
        where = {d["log_dir"]: [(t["name"], p["partition_index"]) for t in d["topics"] for p in t["partitions"]]
                 for d in described["log_dirs"]}
        assert where == {str(tmp_path / "data"): [("t", 0)], spare: [("t", 1)]}
        assert all(d["total_bytes"] > 0 for d in described["log_dirs"])


def _voter_call(client: RawClient, api, version: int, **body):
    base = {"cluster_id": None, "voter_directory_id": DIRECTORY}
    return client.call(api, version, {**base, **body})


def test_raft_voters_change_the_quorum_clients_describe(admin_for):
    with Broker(nodes=3) as broker:
        admin, raw = admin_for(broker.bootstrap_servers), RawClient(broker.bootstrap_servers.split(",")[0])
        listener = [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}]
        assert _voter_call(raw, ApiKey.ADD_RAFT_VOTER, 1, timeout_ms=1000, voter_id=2, listeners=listener,
                           ack_when_committed=True)["error_code"] == 0
        assert _voter_call(raw, ApiKey.ADD_RAFT_VOTER, 1, timeout_ms=1000, voter_id=2, listeners=listener,
                           ack_when_committed=True)["error_code"] == ErrorCode.DUPLICATE_VOTER
        assert _voter_call(raw, ApiKey.ADD_RAFT_VOTER, 1, timeout_ms=1000, voter_id=9, listeners=[],
                           ack_when_committed=True)["error_code"] == ErrorCode.INVALID_REQUEST
        quorum = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
        assert [v["replica_id"] for v in quorum["current_voters"]] == [1, 2]
        assert [o["replica_id"] for o in quorum["observers"]] == [3]
        assert str(quorum["current_voters"][1]["replica_directory_id"]) == str(DIRECTORY)
        # Removing the leader elects the next voter: a new epoch, and DescribeCluster's controller follows.
        assert _voter_call(raw, ApiKey.REMOVE_RAFT_VOTER, 0, voter_id=1, voter_directory_id=uuid.UUID(int=0))[
            "error_code"] == 0
        quorum = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
        assert (quorum["leader_id"], quorum["leader_epoch"]) == (2, 2)
        assert admin.describe_cluster()["controller_id"] == 2
        assert _voter_call(raw, ApiKey.REMOVE_RAFT_VOTER, 0, voter_id=2)["error_code"] == ErrorCode.INVALID_REQUEST
        assert _voter_call(raw, ApiKey.REMOVE_RAFT_VOTER, 0, voter_id=3)["error_code"] == ErrorCode.VOTER_NOT_FOUND
        moved = [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 19093}]
        kraft = {"min_supported_version": 0, "max_supported_version": 1}
        stale = _voter_call(raw, ApiKey.UPDATE_RAFT_VOTER, 0, current_leader_epoch=1, voter_id=2, listeners=moved,
                            k_raft_version_feature=kraft)
        assert stale["error_code"] == ErrorCode.FENCED_LEADER_EPOCH and stale["current_leader"]["leader_id"] == 2
        assert _voter_call(raw, ApiKey.UPDATE_RAFT_VOTER, 0, current_leader_epoch=2, voter_id=2, listeners=moved,
                           k_raft_version_feature=kraft)["error_code"] == 0
        assert admin.describe_metadata_quorum()["nodes"] == [{"node_id": 2, "listeners": moved}]
        assert _voter_call(raw, ApiKey.REMOVE_RAFT_VOTER, 0, cluster_id="another", voter_id=2)["error_code"] == \
            ErrorCode.INCONSISTENT_CLUSTER_ID
        raw.close()


def test_producer_id_blocks_come_from_the_counter_init_producer_id_uses():
    with Broker() as broker:
        raw = RawClient(broker.bootstrap_servers)
        block = raw.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, {"broker_id": 1, "broker_epoch": 0})
        assert block["error_code"] == 0 and block["producer_id_len"] == 1000
        pid = raw.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": -1,
                                                    "producer_id": -1, "producer_epoch": -1})["producer_id"]
        assert pid >= block["producer_id_start"] + block["producer_id_len"]
        assert raw.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, {"broker_id": 7, "broker_epoch": 0})["error_code"] == \
            ErrorCode.BROKER_ID_NOT_REGISTERED
        raw.close()


USERS = {"admin": "admin-secret", "bob": "bob-secret"}


def test_cluster_apis_refuse_a_principal_without_rights(admin_for, tmp_path):
    """kafka-python's admin as bob (no ACLs, allow.everyone.if.no.acl.found off) gets Kafka's errors; the super
    user gets answers."""
    from kafka import TopicPartitionReplica
    from kafka.errors import ClusterAuthorizationFailedError, TransactionalIdAuthorizationFailedError
    with Broker(sasl_port=0, users=USERS, super_users=("User:admin",), allow_everyone_if_no_acl_found=False,
                topics={"t": 1}) as broker:
        def as_user(user):
            return admin_for(broker.sasl_bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=user,
                             sasl_plain_password=USERS[user])
        bob, admin = as_user("bob"), as_user("admin")
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.list_partition_reassignments()
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.describe_metadata_quorum()
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            bob.describe_transactions(["tx-1"])                         # FindCoordinator already refuses
        assert bob.alter_replica_log_dirs({TopicPartitionReplica("t", 0, 1): "memory:"}) == \
            {TopicPartitionReplica("t", 0, 1): ClusterAuthorizationFailedError}
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.update_features({"metadata.version": 25})
        elected = bob.elect_leaders(0, {"t": [0]}, raise_errors=False)
        assert elected.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert elected.replica_election_results[0].partition_result[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert admin.list_partition_reassignments() == {}
        assert admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"] == 1
        plain = RawClient(broker.bootstrap_servers)                     # User:ANONYMOUS, no rights either
        assert plain.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, {"broker_id": 1, "broker_epoch": 0})["error_code"] == \
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert _voter_call(plain, ApiKey.REMOVE_RAFT_VOTER, 0, voter_id=1)["error_code"] == \
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        (state,) = plain.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx-1"]})["transaction_states"]
        assert state["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        epochs = plain.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
        assert epochs["topics"][0]["partitions"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        described = plain.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": "t"}],
                                                                     "response_partition_limit": 10, "cursor": None})
        assert described["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        broker.add_acl("User:ANONYMOUS", "DESCRIBE", "GROUP", "g")        # the group, but not the topic
        fetched = plain.call(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topics": [
            {"name": "t", "partition_indexes": [0]}]}], "require_stable": False})["groups"][0]
        assert fetched["error_code"] == 0
        assert fetched["topics"][0]["partitions"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        broker.add_acl("User:ANONYMOUS", "READ", "GROUP", "g")
        joined = plain.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": "g", "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"], "server_assignor": None,
            "topic_partitions": []})
        assert joined["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED      # subscribed topics need DESCRIBE
        plain.close()
