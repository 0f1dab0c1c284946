"""The group APIs on the wire, through the project's codec: FindCoordinator batches, JoinGroup's member-id rule,
the OffsetCommit checks, DescribeGroups/ListGroups/DeleteGroups/OffsetDelete answers, the KIP-848 heartbeat,
and the coordinator's records in ``__consumer_offsets`` (decodable with kafkalab's decoders, replayed after a
restart with a data directory)."""
from __future__ import annotations

import uuid

import pytest

from kafkalab.broker import Broker
from kafkalab.broker.storage.offsets import OFFSETS_TOPIC, read_records
from kafkalab.protocol import ErrorCode
from kafkalab.protocol.payloads import SUBSCRIPTION, encode_payload

SUBSCRIBED_T = encode_payload(SUBSCRIPTION, {"version": 0, "topics": ["t"], "user_data": b""})


@pytest.fixture
def broker():
    with Broker(topics={"t": 2}, initial_rebalance_delay_ms=0) as b:
        yield b


def join(raw, group: str, member_id: str = "", version: int = 9) -> dict:
    return raw.call("JoinGroup", version, {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000,
                                           "member_id": member_id, "protocol_type": "consumer",
                                           "protocols": [{"name": "range", "metadata": SUBSCRIBED_T}]})


def stable_member(raw, group: str) -> tuple[str, int]:
    """One member, joined (KIP-394's two steps) and synced: (member id, generation)."""
    client = raw()
    first = join(client, group)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and first["member_id"]
    joined = join(client, group, first["member_id"])
    assert joined["error_code"] == ErrorCode.NONE and joined["leader"] == first["member_id"]
    synced = client.call("SyncGroup", 5, {"group_id": group, "generation_id": joined["generation_id"],
                                          "member_id": joined["member_id"], "protocol_type": "consumer",
                                          "protocol_name": "range", "assignments": [
                                              {"member_id": joined["member_id"], "assignment": b""}]})
    assert synced["error_code"] == ErrorCode.NONE
    return joined["member_id"], joined["generation_id"]


def commit(raw, group: str, member_id: str, generation: int, offset: int = 3) -> int:
    body = raw().call("OffsetCommit", 8, {"group_id": group, "generation_id_or_member_epoch": generation,
                                          "member_id": member_id, "topics": [
                                              {"name": "t", "partitions": [{"partition_index": 0,
                                                                            "committed_offset": offset}]}]})
    return body["topics"][0]["partitions"][0]["error_code"]


def test_find_coordinator_batches_keys_and_checks_key_types(raw):
    client = raw()
    body = client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c["key"], c["error_code"]) for c in body["coordinators"]] == [("a", ErrorCode.NONE), ("b", ErrorCode.NONE)]
    assert client.call("FindCoordinator", 4, {"key_type": 7, "coordinator_keys": ["a"]})["coordinators"][0][
        "error_code"] == ErrorCode.INVALID_REQUEST
    assert client.call("FindCoordinator", 1, {"key": "g", "key_type": 0})["error_code"] == ErrorCode.NONE


def test_offset_commit_checks_member_and_generation(raw):
    member, generation = stable_member(raw, "g")
    assert commit(raw, "g", member, generation) == ErrorCode.NONE
    assert commit(raw, "g", member, generation + 1) == ErrorCode.ILLEGAL_GENERATION
    assert commit(raw, "g", "stranger", generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(raw, "g", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID                        # the group has a member
    assert commit(raw, "solo", "", -1) == ErrorCode.NONE                                  # simple commits to a memberless group
    assert commit(raw, "nobody", "x", 4) == ErrorCode.ILLEGAL_GENERATION


def test_describe_list_delete_groups(raw):
    member, generation = stable_member(raw, "g")
    commit(raw, "solo", "", -1)
    client = raw()
    described = client.call("DescribeGroups", 5, {"groups": ["g", "missing"]})["groups"]
    assert described[0]["group_state"] == "Stable" and described[0]["protocol_data"] == "range"
    assert [m["member_id"] for m in described[0]["members"]] == [member]
    assert described[1]["group_state"] == "Dead" and described[1]["error_code"] == ErrorCode.NONE
    assert client.call("DescribeGroups", 6, {"groups": ["missing"]})["groups"][0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    listed = client.call("ListGroups", 5, {"states_filter": [], "types_filter": []})["groups"]
    assert {(g["group_id"], g["group_state"], g["group_type"]) for g in listed} == {("g", "Stable", "classic"),
                                                                                   ("solo", "Empty", "classic")}
    stable = client.call("ListGroups", 4, {"states_filter": ["stable"]})["groups"]
    assert [g["group_id"] for g in stable] == ["g"]
    results = client.call("DeleteGroups", 2, {"groups_names": ["g", "solo", "missing"]})["results"]
    assert [r["error_code"] for r in results] == [ErrorCode.NON_EMPTY_GROUP, ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND]
    assert broker_committed(client, "solo") == -1


def broker_committed(client, group: str) -> int:
    body = client.call("OffsetFetch", 7, {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0]}]})
    return body["topics"][0]["partitions"][0]["committed_offset"]


def test_offset_delete_keeps_subscribed_topics(raw, broker):
    member, generation = stable_member(raw, "g")
    assert commit(raw, "g", member, generation) == ErrorCode.NONE
    client = raw()
    body = client.call("OffsetDelete", 0, {"group_id": "g", "topics": [
        {"name": "t", "partitions": [{"partition_index": 0}]}, {"name": "nope", "partitions": [{"partition_index": 0}]}]})
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in body["topics"]] == [
        ("t", ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    commit(raw, "solo", "", -1)
    body = client.call("OffsetDelete", 0, {"group_id": "solo", "topics": [
        {"name": "t", "partitions": [{"partition_index": 0}]}]})
    assert body["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE and broker_committed(client, "solo") == -1
    assert client.call("OffsetDelete", 0, {"group_id": "missing", "topics": []})["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_consumer_group_heartbeat_assigns_on_the_server(raw, broker):
    client = raw()
    topic_id = broker.state.store.topic("t").topic_id
    base = {"group_id": "cg", "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 10000,
            "subscribed_topic_names": ["t"], "server_assignor": "range", "topic_partitions": []}
    first = client.call("ConsumerGroupHeartbeat", 0, {**base, "member_id": "", "member_epoch": 0})
    assert first["error_code"] == ErrorCode.NONE and first["member_epoch"] == 1
    assert first["assignment"]["topic_partitions"] == [{"topic_id": topic_id, "partitions": [0, 1]}]
    second = raw().call("ConsumerGroupHeartbeat", 0, {**base, "member_id": "", "member_epoch": 0})
    assert second["error_code"] == ErrorCode.NONE and second["assignment"]["topic_partitions"] == []   # still owned by 1st
    again = client.call("ConsumerGroupHeartbeat", 0, {**base, "member_id": first["member_id"], "member_epoch": 1,
                                                      "subscribed_topic_names": None, "topic_partitions": None})
    kept = [0] if first["member_id"] < second["member_id"] else [1]           # range: member ids in order
    assert again["assignment"]["topic_partitions"] == [{"topic_id": topic_id, "partitions": kept}]   # give one up
    described = client.call("ConsumerGroupDescribe", 0, {"group_ids": ["cg"], "include_authorized_operations": False})
    group = described["groups"][0]
    assert group["group_state"] == "Reconciling" and group["assignor_name"] == "range" and group["group_epoch"] == 2
    fenced = client.call("ConsumerGroupHeartbeat", 0, {**base, "member_id": first["member_id"], "member_epoch": 7})
    assert fenced["error_code"] != ErrorCode.NONE


def test_coordinator_records_decode_and_survive_a_restart(tmp_path):
    with Broker(data_dir=tmp_path, topics={"t": 2}, initial_rebalance_delay_ms=0) as b:
        from broker_helpers import RawClient

        clients = []

        def raw():
            clients.append(RawClient(b.bootstrap_servers))
            return clients[-1]
        member, generation = stable_member(raw, "g")
        assert commit(raw, "g", member, generation, offset=7) == ErrorCode.NONE
        records = b._on_loop(lambda: list(read_records(b.state.store.topic(OFFSETS_TOPIC).partitions[0])))
        for c in clients:
            c.close()
    kinds = [(r["key_type"], r["key"].get("topic")) for r in records]
    assert ("group_metadata", None) in kinds and ("offset_commit", "t") in kinds
    group = next(r["value"] for r in records if r["key_type"] == "group_metadata" and r["value"]["members"])
    assert group["protocol"] == "range" and group["members"][0]["member_id"] == member
    assert group["members"][0]["subscription"]["topics"] == ["t"]                 # the consumer protocol, decoded
    with Broker(data_dir=tmp_path) as again:
        assert again.state.store.fetch_committed("g", "t", 0).offset == 7
        restored = again.state.groups.groups["g"]
        assert restored.state.value == "Stable" and restored.generation == generation and member in restored.members
        client = RawClient(again.bootstrap_servers)
        try:                                                                    # the member carries on
            assert client.call("Heartbeat", 4, {"group_id": "g", "generation_id": generation, "member_id": member,
                                                "group_instance_id": None})["error_code"] == ErrorCode.NONE
            metadata = client.call("Metadata", 12, {"topics": [{"name": OFFSETS_TOPIC, "topic_id": uuid.UUID(int=0)}],
                                                    "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False})
            assert metadata["topics"][0]["is_internal"] is True
        finally:
            client.close()


def test_readme_lists_every_api_key_the_broker_serves():
    import re
    from pathlib import Path

    from kafkalab.broker.handlers import REGISTRY
    from kafkalab.protocol import api_spec

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (\w+) \| v(\d+)(?:-(\d+))? \|", readme, re.M)
    listed = {int(key): (name, int(low), int(high or low)) for key, name, low, high in rows}
    assert listed == {key: (api_spec(key).name, h.min_version, h.max_version) for key, h in REGISTRY.items()}


@pytest.mark.parametrize("version", range(10))
def test_every_join_group_version_round_trips_a_whole_membership(raw, version):
    """JoinGroup vN with SyncGroup, Heartbeat and LeaveGroup in the nearest versions: answers that encode and
    decode in each version (nullable fields, v4's member-id rule, v3+'s batched leave)."""
    client, group = raw(), f"v{version}"
    body = {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUBSCRIBED_T}]}
    joined = client.call("JoinGroup", version, body)
    if version >= 4:
        assert joined["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        joined = client.call("JoinGroup", version, {**body, "member_id": joined["member_id"]})
    assert joined["error_code"] == ErrorCode.NONE and joined["generation_id"] == 1
    member = joined["member_id"]
    sync_version, heartbeat_version, leave_version = min(version, 5), min(version, 4), min(version, 5)
    synced = client.call("SyncGroup", sync_version, {"group_id": group, "generation_id": 1, "member_id": member,
                                                     "assignments": [{"member_id": member, "assignment": b"x"}]})
    assert synced["error_code"] == ErrorCode.NONE and synced["assignment"] == b"x"
    assert client.call("Heartbeat", heartbeat_version, {"group_id": group, "generation_id": 1,
                                                        "member_id": member})["error_code"] == ErrorCode.NONE
    if leave_version >= 3:
        left = client.call("LeaveGroup", leave_version, {"group_id": group, "members": [{"member_id": member}]})
        assert [m["error_code"] for m in left["members"]] == [ErrorCode.NONE]
    else:
        assert client.call("LeaveGroup", leave_version, {"group_id": group, "member_id": member})["error_code"] == 0
    stale = client.call("Heartbeat", heartbeat_version, {"group_id": group, "generation_id": 1, "member_id": member})
    assert stale["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
