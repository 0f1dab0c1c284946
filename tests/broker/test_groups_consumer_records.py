"""KIP-848 groups as ``__consumer_offsets`` records, sans-IO: a coordinator on a store with a data directory,
driven with an injected clock, then a second store and coordinator on the same directory (a restart): the
group comes back mid-reconciliation exactly as it was; only what changed is written, in Kafka's order; a
member that leaves and a deleted group are tombstoned; a group that turns classic drops its records."""
from __future__ import annotations

from kafkalab.broker.groups import GroupCoordinator, GroupSettings
from kafkalab.broker.storage import Store
from kafkalab.broker.storage.offsets import read_records
from kafkalab.protocol import ErrorCode

SETTINGS = GroupSettings(consumer_session_timeout_ms=10_000)


def heartbeat(coordinator, now, member_id="", epoch=0, topics=("t",), owned=None):
    return coordinator.consumer_heartbeat(now, {
        "group_id": "g", "member_id": member_id, "member_epoch": epoch, "rebalance_timeout_ms": 5_000,
        "server_assignor": None, "subscribed_topic_names": list(topics) if topics is not None else None,
        "topic_partitions": owned}, "client", "/127.0.0.1")


def written(store) -> list[tuple[int, str | None, bool]]:
    """Every KIP-848 record in the log so far: (key version, member id, tombstone?)."""
    return [(r["key"]["version"], r["key"].get("member_id"), r["value"] is None)
            for r in read_records(store.partition("__consumer_offsets", 0))
            if r["key_type"].startswith("consumer_group_")]


def snapshot(group) -> tuple:
    return (group.epoch, group.assignment_epoch, group.topic_sizes, group.target, group.assignor,
            {m.member_id: (m.epoch, m.previous_epoch, m.assigned, m.revoking, m.topic_names, m.client_host,
                           m.rebalance_timeout_ms) for m in group.members.values()})


def test_a_restarted_coordinator_has_the_group_as_it_was(tmp_path):
    store = Store(str(tmp_path))
    store.create_topic("t", 2)
    coordinator = GroupCoordinator(store, SETTINGS)
    a = heartbeat(coordinator, 0)
    b = heartbeat(coordinator, 1)
    heartbeat(coordinator, 2, a["member_id"], 1, topics=None)          # a is told to give one partition up
    group = coordinator.groups["g"]
    assert group.state_name() == "Reconciling" and any(m.revoking for m in group.members.values())
    before = snapshot(group)
    store.close()

    store = Store(str(tmp_path))
    again = GroupCoordinator(store, SETTINGS)
    assert snapshot(again.groups["g"]) == before
    again.tick(50_000)                                  # restored members get a whole session from the first tick
    assert set(again.groups["g"].members) == {a["member_id"], b["member_id"]}
    answer = heartbeat(again, 50_001, b["member_id"], 2, topics=None)
    assert answer["error_code"] == ErrorCode.NONE and answer["member_epoch"] == 2


def test_only_changes_are_written_in_kafkas_order(tmp_path):
    store = Store(str(tmp_path))
    store.create_topic("t", 2)
    coordinator = GroupCoordinator(store, SETTINGS)
    a = heartbeat(coordinator, 0)
    first = written(store)
    assert [kind for kind, _, _ in first] == [5, 4, 3, 7, 6, 8]         # subscription ... current assignment
    heartbeat(coordinator, 1, a["member_id"], 1, topics=None)
    coordinator.tick(2)
    assert written(store) == first                                     # nothing changed: nothing written
    heartbeat(coordinator, 3, a["member_id"], -1, topics=None)          # a leaves
    leave = written(store)[len(first):]
    assert leave[:3] == [(8, a["member_id"], True), (7, a["member_id"], True), (5, a["member_id"], True)]
    assert {kind for kind, _, tomb in leave[3:]} == {3, 4, 6} and not any(tomb for _, _, tomb in leave[3:])
    assert coordinator.delete_group(4, "g") == ErrorCode.NONE
    assert [(kind, tomb) for kind, _, tomb in written(store)[-3:]] == [(4, True), (6, True), (3, True)]
    assert "g" not in store.consumer_group_records
    store.close()
    assert "g" not in GroupCoordinator(Store(str(tmp_path)), SETTINGS).groups


def test_an_empty_consumer_group_that_turns_classic_drops_its_records(tmp_path):
    from kafkalab.broker.groups import JoinRequest
    store = Store(str(tmp_path))
    store.create_topic("t", 2)
    coordinator = GroupCoordinator(store, SETTINGS)
    a = heartbeat(coordinator, 0)
    heartbeat(coordinator, 1, a["member_id"], -1, topics=None)
    assert store.consumer_group_records["g"]
    coordinator.join(2, "g", JoinRequest("", None, "client", "/127.0.0.1", 10_000, 10_000,
                                         [("range", b"")], protocol_type="consumer"))
    assert "g" not in store.consumer_group_records
    store.close()
    assert not Store(str(tmp_path)).consumer_group_records
