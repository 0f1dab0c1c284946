"""KIP-932 share groups through kafkalab's own codec (no Python client speaks them): membership, acquisition,
accept/release/reject, delivery counts, lock expiry, describe and the share-group offset APIs."""
from __future__ import annotations

import uuid

import pytest
from share_consumer import broker_with_jobs

from kafkalab.broker.share import ACCEPT, REJECT, RELEASE
from kafkalab.protocol import ApiKey, ErrorCode


@pytest.fixture
def broker():
    with broker_with_jobs(6) as b:
        yield b


def _join(client, member: str, topics=("jobs",)) -> dict:
    return client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "q", "member_id": member, "member_epoch": 0,
                                                         "rack_id": None, "subscribed_topic_names": list(topics)})


def _fetch(client, member, topic_id, epoch, acks=(), max_records=3) -> dict:
    partition = {"partition_index": 0, "acknowledgement_batches": [
        {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}
    return client.call(ApiKey.SHARE_FETCH, 1, {
        "group_id": "q", "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 0, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": max_records, "batch_size": max_records,
        "topics": [{"topic_id": topic_id, "partitions": [partition]}], "forgotten_topics_data": []})


def _acquired(answer) -> list[tuple[int, int, int]]:
    part = answer["responses"][0]["partitions"][0]
    return [(r["first_offset"], r["last_offset"], r["delivery_count"]) for r in part["acquired_records"]]


def _values(answer, ranges) -> list[bytes]:
    wanted = {o for f, last, _ in ranges for o in range(f, last + 1)}
    records = answer["responses"][0]["partitions"][0]["records"]
    return [r.value for batch in records for r in batch.records if r.offset in wanted]


def test_share_group_delivers_each_record_to_one_member_and_redelivers_released_ones(broker, raw):
    a, b = raw(), raw()
    member_a, member_b = str(uuid.uuid4()), str(uuid.uuid4())
    joined = _join(a, member_a)
    topic_id = joined["assignment"]["topic_partitions"][0]["topic_id"]
    assert joined["error_code"] == 0 and joined["member_epoch"] == 1
    assert _join(b, member_b)["assignment"]["topic_partitions"][0]["partitions"] == [0]   # shared partition
    first = _fetch(a, member_a, topic_id, 0)
    assert _acquired(first) == [(0, 2, 1)] and _values(first, [(0, 2, 1)]) == [b"job-0", b"job-1", b"job-2"]
    second = _fetch(b, member_b, topic_id, 0)
    assert _acquired(second) == [(3, 5, 1)]                    # never the records member a holds
    # a accepts 0, releases 1, rejects 2 (piggybacked on its next fetch): 1 comes back, delivered twice
    again = _fetch(a, member_a, topic_id, 1, acks=[(0, 0, ACCEPT), (1, 1, RELEASE), (2, 2, REJECT)])
    part = again["responses"][0]["partitions"][0]
    assert part["acknowledge_error_code"] == 0 and _acquired(again) == [(1, 1, 2)]
    assert _values(again, [(1, 1, 2)]) == [b"job-1"]
    wrong = b.call(ApiKey.SHARE_ACKNOWLEDGE, 1, {"group_id": "q", "member_id": member_b, "share_session_epoch": 1,
                                                  "topics": [{"topic_id": topic_id, "partitions": [{
                                                      "partition_index": 0, "acknowledgement_batches": [
                                                          {"first_offset": 1, "last_offset": 1,
                                                           "acknowledge_types": [ACCEPT]}]}]}]})
    assert wrong["responses"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_RECORD_STATE
    done = b.call(ApiKey.SHARE_ACKNOWLEDGE, 1, {"group_id": "q", "member_id": member_b, "share_session_epoch": 1,
                                                 "topics": [{"topic_id": topic_id, "partitions": [{
                                                     "partition_index": 0, "acknowledgement_batches": [
                                                         {"first_offset": 3, "last_offset": 5,
                                                          "acknowledge_types": [ACCEPT]}]}]}]})
    assert done["error_code"] == 0 and done["responses"][0]["partitions"][0]["error_code"] == 0
    _fetch(a, member_a, topic_id, 2, acks=[(1, 1, ACCEPT)])
    offsets = a.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": "q", "topics": [
        {"topic_name": "jobs", "partitions": [0]}]}]})
    start = offsets["groups"][0]["topics"][0]["partitions"][0]
    assert (start["start_offset"], start["lag"]) == (6, 0)     # everything accepted or rejected
    described = a.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["q", "nope"],
                                                         "include_authorized_operations": False})["groups"]
    assert described[0]["group_state"] == "Stable" and len(described[0]["members"]) == 2
    assert described[1]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_lock_expiry_and_leaving_release_records_and_offsets_reset_when_empty(broker, raw):
    client = raw()
    member = str(uuid.uuid4())
    topic_id = _join(client, member)["assignment"]["topic_partitions"][0]["topic_id"]
    assert _acquired(_fetch(client, member, topic_id, 0, max_records=2)) == [(0, 1, 1)]
    broker.state.share_groups.expire(2**62)                     # every acquisition lock runs out
    assert _acquired(_fetch(client, member, topic_id, 1, max_records=2)) == [(0, 1, 2)]
    busy = client.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": "q", "topics": [
        {"topic_name": "jobs", "partitions": [{"partition_index": 0, "start_offset": 4}]}]})
    assert busy["error_code"] == ErrorCode.NON_EMPTY_GROUP
    left = client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "q", "member_id": member, "member_epoch": -1,
                                                          "rack_id": None, "subscribed_topic_names": None})
    assert left["member_epoch"] == -1
    state = broker.state.share_groups.group("q").partitions[("jobs", 0)]
    assert state.delivery_state(0) == ("acquired", 2)           # its session still holds them
    closed = client.call(ApiKey.SHARE_ACKNOWLEDGE, 1, {"group_id": "q", "member_id": member,
                                                        "share_session_epoch": -1, "topics": []})
    assert closed["error_code"] == 0
    assert state.delivery_state(0) == ("available", 2)          # released when the session closed
    moved = client.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": "q", "topics": [
        {"topic_name": "jobs", "partitions": [{"partition_index": 0, "start_offset": 4}]}]})
    assert moved["error_code"] == 0 and moved["responses"][0]["partitions"][0]["error_code"] == 0
    member2 = str(uuid.uuid4())
    _join(client, member2)
    assert _acquired(_fetch(client, member2, topic_id, 0)) == [(4, 5, 1)]
    _ = client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "q", "member_id": member2, "member_epoch": -1,
                                                       "rack_id": None, "subscribed_topic_names": None})
    deleted = client.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": "q", "topics": [{"topic_name": "jobs"}]})
    assert deleted["error_code"] == 0 and ("jobs", 0) not in broker.state.share_groups.group("q").partitions


def test_share_requests_from_strangers_are_refused(broker, raw):
    client = raw()
    stale = client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "q", "member_id": "who", "member_epoch": 3,
                                                           "rack_id": None, "subscribed_topic_names": None})
    assert stale["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    fetch = _fetch(client, "who", uuid.uuid4(), 0)
    assert fetch["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
