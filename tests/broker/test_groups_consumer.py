"""KIP-848 groups (kafkalab.broker.groups.consumer) and the server-side assignors, driven directly with an
injected clock: assignments, revocation before reassignment, epochs, fencing and expiry."""
from __future__ import annotations

from kafkalab.broker.groups import GroupSettings
from kafkalab.broker.groups.assignors import range_, uniform
from kafkalab.broker.groups.consumer import ConsumerGroup
from kafkalab.broker.storage import Store
from kafkalab.protocol import ErrorCode

SETTINGS = GroupSettings(consumer_session_timeout_ms=10_000)


def test_uniform_is_balanced_and_sticky():
    subs = {"a": {"x", "y"}, "b": {"x", "y"}}
    first = uniform(subs, {"x": 3, "y": 1}, {})
    assert sorted(map(len, first.values())) == [2, 2] and set().union(*first.values()) == {
        ("x", 0), ("x", 1), ("x", 2), ("y", 0)}
    grown = uniform({**subs, "c": {"x", "y"}}, {"x": 3, "y": 1}, first)
    assert sorted(map(len, grown.values())) == [1, 1, 2]
    assert all(grown[m] <= first[m] for m in "ab")                              # nothing moves between a and b


def test_range_gives_contiguous_ranges_per_topic():
    target = range_({"a": {"x"}, "b": {"x", "y"}}, {"x": 5, "y": 2}, {})
    assert target == {"a": {("x", 0), ("x", 1), ("x", 2)}, "b": {("x", 3), ("x", 4), ("y", 0), ("y", 1)}}


def heartbeat(group, now, member_id="", epoch=0, topics=("t",), owned=None, assignor=None):
    return group.heartbeat(now, {"group_id": "g", "member_id": member_id, "member_epoch": epoch,
                                 "rebalance_timeout_ms": 5_000, "server_assignor": assignor,
                                 "subscribed_topic_names": list(topics) if topics is not None else None,
                                 "topic_partitions": owned}, "client", "/127.0.0.1")


def partitions(answer, topic_id):
    return {p for tp in answer["assignment"]["topic_partitions"] if tp["topic_id"] == topic_id for p in tp["partitions"]}


def test_revocation_comes_before_reassignment():
    store = Store()
    tid = store.create_topic("t", 2).topic_id
    group = ConsumerGroup("g", store, SETTINGS)
    a = heartbeat(group, 0)
    assert a["member_epoch"] == 1 and partitions(a, tid) == {0, 1}
    b = heartbeat(group, 1)
    assert b["member_epoch"] == 2 and partitions(b, tid) == set()               # a still owns both
    assert group.state_name() == "Reconciling"
    a2 = heartbeat(group, 2, a["member_id"], 1, topics=None)
    kept = partitions(a2, tid)
    assert len(kept) == 1 and a2["member_epoch"] == 1                           # told to give one up, same epoch
    b2 = heartbeat(group, 3, b["member_id"], 2, topics=None)
    assert b2["assignment"] is None                                             # not released yet: nothing new
    a3 = heartbeat(group, 4, a["member_id"], 1, topics=None, owned=[{"topic_id": tid, "partitions": sorted(kept)}])
    assert a3["member_epoch"] == 2 and a3["assignment"] is None                 # released: a moves to epoch 2
    b3 = heartbeat(group, 5, b["member_id"], 2, topics=None)
    assert partitions(b3, tid) == {0, 1} - kept and group.state_name() == "Stable"


def test_fencing_leaving_and_expiry():
    store = Store()
    store.create_topic("t", 2)
    group = ConsumerGroup("g", store, SETTINGS)
    a = heartbeat(group, 0, assignor="range")
    assert heartbeat(group, 1, a["member_id"], 9, topics=None)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert heartbeat(group, 1, "ghost", 1, topics=None)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert heartbeat(group, 1, assignor="nope")["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert group.commit_problem(1, a["member_id"], None, 1) == ErrorCode.NONE
    assert group.commit_problem(1, a["member_id"], None, 0) == ErrorCode.STALE_MEMBER_EPOCH
    b = heartbeat(group, 2)
    group.tick(10_001)                                                          # a's session ran out, b's not
    assert list(group.members) == [b["member_id"]] and group.assignor == "uniform"
    left = heartbeat(group, 10_002, b["member_id"], -1, topics=None)
    assert left["member_epoch"] == -1 and group.is_empty() and group.state_name() == "Empty"


def test_a_member_that_never_releases_is_removed_after_its_rebalance_timeout():
    store = Store()
    store.create_topic("t", 2)
    group = ConsumerGroup("g", store, SETTINGS)
    a = heartbeat(group, 0)
    b = heartbeat(group, 1)
    heartbeat(group, 2, a["member_id"], 1, topics=None)                         # told to revoke, never confirms
    heartbeat(group, 4_000, b["member_id"], 2, topics=None)
    group.tick(5_003)
    assert list(group.members) == [b["member_id"]]


def test_a_member_resending_its_whole_subscription_does_not_start_a_rebalance():
    """librdkafka joins with ``subscribed_topic_regex=""`` (no regex) and, after a heartbeat failed (the broker
    restarted under it), sends every field again: the same subscription must not bump the group epoch."""
    store = Store()
    tid = store.create_topic("t", 2).topic_id
    group = ConsumerGroup("g", store, SETTINGS)
    full = {"group_id": "g", "rebalance_timeout_ms": 300_000, "server_assignor": None, "topic_partitions": [],
            "subscribed_topic_names": ["t"], "subscribed_topic_regex": ""}
    joined = group.heartbeat(0, {**full, "member_id": "m", "member_epoch": 0}, "client", "/127.0.0.1")
    assert joined["member_epoch"] == 1 and partitions(joined, tid) == {0, 1} and group.epoch == 1
    owned = [{"topic_id": tid, "partitions": [0, 1]}]
    again = group.heartbeat(1, {**full, "member_id": "m", "member_epoch": 1, "topic_partitions": owned},
                            "client", "/127.0.0.1")
    assert again["error_code"] == ErrorCode.NONE and again["member_epoch"] == 1 and group.epoch == 1
    regex = group.heartbeat(2, {**full, "member_id": "m", "member_epoch": 1, "subscribed_topic_regex": "t.*",
                                "topic_partitions": owned}, "client", "/127.0.0.1")
    assert regex["member_epoch"] == 2 and group.epoch == 2                      # a real change still rebalances
