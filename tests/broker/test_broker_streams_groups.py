"""Streams groups (KIP-1071) through kafkalab's codec over a real socket (no Python, C or JS client speaks the
streams rebalance protocol): a topology's tasks dealt to members, internal topics created, missing source topics
and stale topologies reported, members leaving, interactive-query endpoints, and the group described."""
from __future__ import annotations

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.protocol import ApiKey, ErrorCode

TOPOLOGY = {"epoch": 1, "subtopologies": [
    {"subtopology_id": "0", "source_topics": ["words"], "source_topic_regex": [], "repartition_sink_topics": ["app-rp"],
     "state_changelog_topics": [], "repartition_source_topics": [], "copartition_groups": []},
    {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [], "repartition_sink_topics": [],
     "state_changelog_topics": [{"name": "app-counts-changelog", "partitions": 0, "replication_factor": 0,
                                 "topic_configs": []}],
     "repartition_source_topics": [{"name": "app-rp", "partitions": 2, "replication_factor": 0, "topic_configs": []}],
     "copartition_groups": []}]}


@pytest.fixture()
def raw():
    with Broker(topics={"words": 3}) as broker:
        client = RawClient(broker.bootstrap_servers)
        yield broker, client
        client.close()


def beat(client, member: str, epoch: int, topology=None, **extra) -> dict:
    body = {"group_id": "app", "member_id": member, "member_epoch": epoch, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000, "topology": topology,
            "active_tasks": None, "standby_tasks": None, "warmup_tasks": None, "process_id": "p-" + member,
            "user_endpoint": None, "client_tags": None, "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": False, **extra}
    return client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, body)


def tasks(answer) -> set[tuple[str, int]]:
    return {(t["subtopology_id"], p) for t in answer["active_tasks"] for p in t["partitions"]}


def test_tasks_are_dealt_over_members_and_internal_topics_created(raw):
    broker, client = raw
    a = beat(client, "a", 0, TOPOLOGY, user_endpoint={"host": "10.0.0.1", "port": 8080})
    assert a["error_code"] == 0 and a["member_epoch"] == 1 and a["status"] is None
    everything = {("0", p) for p in range(3)} | {("1", p) for p in range(2)}
    assert tasks(a) == everything
    assert broker.topics["app-rp"] == 2 and broker.topics["app-counts-changelog"] == 2   # made by the broker
    b = beat(client, "b", 0, TOPOLOGY)
    assert b["member_epoch"] == 2
    a2 = beat(client, "a", 1)
    assert a2["member_epoch"] == 2 and tasks(a2) | tasks(b) == everything and not tasks(a2) & tasks(b)
    (endpoint,) = a2["partitions_by_user_endpoint"]
    assert endpoint["user_endpoint"] == {"host": "10.0.0.1", "port": 8080}
    assert beat(client, "a", 2)["active_tasks"] is None                        # unchanged: not repeated
    assert beat(client, "a", 1)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(client, "zed", 3)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID

    (described,) = client.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, {"group_ids": ["app"],
                                                                  "include_authorized_operations": False})["groups"]
    assert (described["group_state"], described["group_epoch"]) == ("Stable", 2)
    assert [s["subtopology_id"] for s in described["topology"]["subtopologies"]] == ["0", "1"]
    owned = {m["member_id"]: {(t["subtopology_id"], p) for t in m["assignment"]["active_tasks"] for p in t["partitions"]}
             for m in described["members"]}
    assert owned == {"a": tasks(a2), "b": tasks(b)}

    assert beat(client, "b", -1)["member_epoch"] == -1                          # leaving deals again
    assert tasks(beat(client, "a", 2)) == everything


def test_missing_sources_stale_topologies_and_shutdown(raw):
    broker, client = raw
    lonely = {"epoch": 1, "subtopologies": [{**TOPOLOGY["subtopologies"][0], "source_topics": ["absent"],
                                             "repartition_sink_topics": []}]}
    answer = beat(client, "a", 0, lonely)
    assert [s["status_code"] for s in answer["status"]] == [1] and "absent" in answer["status"][0]["status_detail"]
    assert answer["active_tasks"] == []
    broker.create_topic("absent", 1)
    upgraded = beat(client, "b", 0, {**lonely, "epoch": 2})                     # a newer topology replaces the old
    assert upgraded["status"] is None and tasks(upgraded) | tasks(beat(client, "a", 1)) == {("0", 0)}
    stale = beat(client, "c", 0, lonely)
    assert [s["status_code"] for s in stale["status"]] == [0]                   # STALE_TOPOLOGY
    assert beat(client, "b", upgraded["member_epoch"], shutdown_application=True)["error_code"] == 0
    assert 4 in [s["status_code"] for s in beat(client, "c", stale["member_epoch"])["status"]]
    assert beat(client, "", 0, lonely)["error_code"] == ErrorCode.INVALID_REQUEST
    assert beat(client, "d", 0, None)["error_code"] == ErrorCode.INVALID_REQUEST
    (unknown,) = client.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, {"group_ids": ["nope"],
                                                                "include_authorized_operations": False})["groups"]
    assert unknown["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
