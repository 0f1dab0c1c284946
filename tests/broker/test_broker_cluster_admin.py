"""Cluster administration on a three-node broker, through kafka-python's admin client: preferred leader
elections, partition reassignments, the metadata quorum and feature levels."""
from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, InvalidUpdateVersionError

from kafkalab.broker import Broker
from kafkalab.protocol import ErrorCode

TIMEOUT_MS = 10000


@pytest.fixture
def cluster():
    with Broker(topics={"t": 3}, nodes=3) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=TIMEOUT_MS)
        yield broker, admin
        admin.close()


def _partition_errors(response) -> dict[tuple[str, int], int]:
    return {(r.topic, p.partition_id): p.error_code for r in response.replica_election_results
            for p in r.partition_result}


def test_elect_leaders_returns_leadership_to_the_preferred_replica(cluster):
    broker, admin = cluster
    preferred = broker.leaders("t")
    broker.move_leader("t", 0)
    assert broker.leaders("t")[0] != preferred[0]
    answer = admin.elect_leaders(0, {"t": [0, 1]}, raise_errors=False)
    assert _partition_errors(answer) == {("t", 0): 0, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED}
    assert broker.leaders("t") == preferred
    unclean = admin.elect_leaders(1, ["t"], raise_errors=False)
    assert set(_partition_errors(unclean).values()) == {ErrorCode.ELECTION_NOT_NEEDED}
    missing = admin.elect_leaders(0, {"t": [7]}, raise_errors=False)
    assert _partition_errors(missing) == {("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_reassignment_changes_replicas_and_moves_a_leader_that_left(cluster):
    broker, admin = cluster
    leader = broker.leaders("t")[1]
    others = [n for n in (1, 2, 3) if n != leader]
    result = admin.alter_partition_reassignments({TopicPartition("t", 1): others + [leader]})
    assert result == {TopicPartition("t", 1): None}
    described = {p["partition_index"]: p for p in admin.describe_topics(["t"])[0]["partitions"]}
    assert described[1]["replica_nodes"] == others + [leader] and described[1]["leader_id"] == leader
    admin.elect_leaders(0, {"t": [1]}, raise_errors=False)
    assert broker.leaders("t")[1] == others[0]                  # the new preferred replica
    assert admin.list_partition_reassignments() == {}           # complete at once: nothing in progress
    bad = admin.alter_partition_reassignments({TopicPartition("t", 2): [1, 9]})
    assert bad == {TopicPartition("t", 2): InvalidReplicationAssignmentError}


def test_describe_quorum_names_the_controller_and_counts_metadata_changes(cluster):
    broker, admin = cluster
    before = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
    broker.move_leader("t", 2)
    after = admin.describe_metadata_quorum()
    partition = after["topics"][0]["partitions"][0]
    assert partition["leader_id"] == 1 and [v["replica_id"] for v in partition["current_voters"]] == [1]
    assert sorted(o["replica_id"] for o in partition["observers"]) == [2, 3]
    assert partition["high_watermark"] == before["high_watermark"] + 1
    assert after["nodes"][0]["listeners"][0]["port"] == broker.node_addresses[1][1]


def test_features_are_reported_and_updated(cluster):
    _, admin = cluster
    features = admin.describe_features()
    assert features["metadata.version"]["finalized"] == (25, 25)
    with pytest.raises(InvalidUpdateVersionError):
        admin.update_features({"metadata.version": 24})              # a downgrade needs a downgrade type
    with pytest.raises(InvalidUpdateVersionError):
        admin.update_features({"no.such.feature": 1})
    assert admin.update_features({"metadata.version": ("SAFE_DOWNGRADE", 24)}) == {"metadata.version": "OK"}
    after = admin.describe_features()["metadata.version"]
    assert after["finalized"] == (24, 24) and after["finalized_epoch"] == features["metadata.version"][
        "finalized_epoch"] + 1
