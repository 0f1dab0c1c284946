"""The classic group state machine (kafkalab.broker.groups.classic, its table in .classic_states), driven
directly with an injected clock: every transition of the table, the membership rules (KIP-394 member ids,
KIP-345 static members) and the error codes members get."""
from __future__ import annotations

import itertools

import pytest

from kafkalab.broker.groups import ClassicGroup, Event, JoinRequest, State, Waiter
from kafkalab.broker.groups.classic_states import TRANSITIONS
from kafkalab.protocol import ErrorCode

SESSION, REBALANCE = 6_000, 10_000


def group() -> ClassicGroup:
    ids = itertools.count(1)
    return ClassicGroup("g", new_id=lambda client: f"{client}-{next(ids)}")


def request(member_id: str = "", client: str = "c", instance: str | None = None, protocols=(("range", b"r"),),
            version: int = 9, session: int = SESSION) -> JoinRequest:
    return JoinRequest(member_id, instance, client, "/127.0.0.1", session, REBALANCE, list(protocols),
                       protocol_type="consumer", require_member_id=version >= 4, skip_assignment_ok=version >= 9)


def join_new(g: ClassicGroup, now: int, client: str = "c", **kw):
    """KIP-394: the first JoinGroup gets an id with ErrorCode.MEMBER_ID_REQUIRED, the second joins with it."""
    first = g.join(now, request(client=client, **kw))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    return first["member_id"], g.join(now, request(first["member_id"], client=client, **kw))


def stable_pair(now: int = 0):
    """Two members in a Stable group, generation 2 (the second join started a rebalance)."""
    g = group()
    a, answer = join_new(g, now, "a")
    assert answer["generation_id"] == 1 and answer["leader"] == a
    g.sync(now, a, None, 1, None, None, {a: b"all"})
    b, waiting_b = join_new(g, now, "b")
    assert isinstance(waiting_b, Waiter) and g.state is State.PREPARING_REBALANCE
    assert g.heartbeat(now, a, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    answer_a = g.join(now, request(a, "a"))
    assert answer_a["generation_id"] == 2 and waiting_b.result["generation_id"] == 2
    assert len(answer_a["members"]) == 2 and waiting_b.result["members"] == []      # only the leader gets them
    follower = g.sync(now, b, None, 2, "consumer", "range", {})
    assert isinstance(follower, Waiter) and g.state is State.COMPLETING_REBALANCE
    leader = g.sync(now, a, None, 2, "consumer", "range", {a: b"A", b: b"B"})
    assert leader["assignment"] == b"A" and follower.result["assignment"] == b"B" and g.state is State.STABLE
    return g, a, b


def test_the_table_covers_kafkas_transitions():
    assert set(TRANSITIONS.values()) <= set(State)
    assert {state for state, _ in TRANSITIONS} == set(State) - {State.DEAD}     # nothing leaves Dead
    g = group()
    with pytest.raises(KeyError):
        g.fire(Event.LEADER_SYNCED, 0)                                          # Empty cannot sync


def test_empty_to_preparing_to_completing_to_stable():
    g = group()
    member, answer = join_new(g, 0)
    assert answer["error_code"] == ErrorCode.NONE and answer["member_id"] == member
    assert g.state is State.COMPLETING_REBALANCE and g.generation == 1 and g.protocol == "range"
    assert g.heartbeat(1, member, None, 1) == ErrorCode.NONE                              # heartbeats while completing are fine
    assert g.sync(2, member, None, 1, None, None, {member: b"x"})["assignment"] == b"x"
    assert g.state is State.STABLE and g.persist


def test_stable_to_preparing_on_join_and_rebalance_to_stable():
    g, a, b = stable_pair()
    assert g.generation == 2 and g.members[a].assignment == b"A" and g.members[b].assignment == b"B"


def test_member_id_required_then_unknown_ids_refused_and_v3_joins_at_once():
    g = group()
    assert g.join(0, request("nobody"))["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    answer = g.join(0, request(version=3))                                     # before v4: an id and a join at once
    assert answer["error_code"] == ErrorCode.NONE and answer["member_id"] in g.members


def test_pending_member_ids_expire():
    g = group()
    first = g.join(0, request())
    g.tick(SESSION + 1)
    assert g.join(SESSION + 2, request(first["member_id"]))["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_drops_members_that_did_not_rejoin():
    g, a, b = stable_pair()
    waiting = g.join(100, request(b, "b"))                                     # b rejoins, a never does
    assert isinstance(waiting, Waiter) and waiting.result is None
    for now in (5_000, 100 + REBALANCE - 1):                                    # a heartbeats but does not rejoin
        assert g.heartbeat(now, a, None, 2) == ErrorCode.REBALANCE_IN_PROGRESS
        g.tick(now)
    assert waiting.result is None
    g.tick(100 + REBALANCE)                                                    # the rebalance timeout passed
    assert waiting.result["generation_id"] == 3 and waiting.result["leader"] == b
    assert list(g.members) == [b] and g.state is State.COMPLETING_REBALANCE


def test_session_expiry_in_stable_rebalances_and_the_last_one_empties():
    g, a, b = stable_pair()
    g.heartbeat(SESSION - 1, b, None, 2)
    g.tick(SESSION)                                                             # a's session ran out, b's did not
    assert list(g.members) == [b] and g.state is State.PREPARING_REBALANCE
    assert g.heartbeat(SESSION, b, None, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    g.tick(2 * SESSION)                                                         # b stops too: nobody is left
    assert g.state is State.EMPTY and g.generation == 3 and g.leader is None


def test_leader_missing_in_completing_rebalance_fails_waiting_syncs():
    g, a, b = stable_pair()
    g.join(0, request(a, "a"))
    answer_b = g.join(0, request(b, "b"))                                      # the last one in completes the round
    assert answer_b["leader"] == a
    follower = g.sync(0, b, None, 3, None, None, {})
    assert isinstance(follower, Waiter) and g.state is State.COMPLETING_REBALANCE
    g.tick(SESSION)                                                             # the leader never syncs
    assert follower.result["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS and g.state is State.PREPARING_REBALANCE


def test_leave_rebalances_and_last_leave_empties_then_delete():
    g, a, b = stable_pair()
    assert g.leave(0, a, None) == ErrorCode.NONE and g.state is State.PREPARING_REBALANCE
    assert g.leave(0, "stranger", None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.leave(0, b, None) == ErrorCode.NONE and g.state is State.EMPTY and g.generation == 3
    g.delete(0)
    assert g.state is State.DEAD


def test_generation_and_member_checks():
    g, a, b = stable_pair()
    assert g.heartbeat(0, a, None, 1) == ErrorCode.ILLEGAL_GENERATION
    assert g.heartbeat(0, "x", None, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.sync(0, a, None, 1, None, None, {})["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert g.sync(0, a, None, 2, "consumer", "roundrobin", {})["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert g.sync(0, b, None, 2, None, None, {})["assignment"] == b"B"           # Stable: the current assignment
    assert g.commit_problem(0, a, None, 2) == ErrorCode.NONE
    assert g.commit_problem(0, a, None, 1) == ErrorCode.ILLEGAL_GENERATION
    assert g.commit_problem(0, "", None, -1) == ErrorCode.UNKNOWN_MEMBER_ID                # simple commits need an Empty group
    g.join(0, request(a, "a"))
    assert g.commit_problem(0, a, None, 2) == ErrorCode.NONE                              # preparing: still its generation
    g.join(0, request(b, "b"))
    assert g.commit_problem(0, a, None, 3) == ErrorCode.REBALANCE_IN_PROGRESS             # completing: wait for the assignment


def test_protocols_must_overlap():
    g, a, b = stable_pair()
    other = g.join(0, request(client="c", protocols=(("roundrobin", b""),), version=3))
    assert other["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert g.join(0, request(protocols=()))["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_vote_picks_what_every_member_supports():
    g = group()
    a, _ = join_new(g, 0, "a", protocols=(("cooperative-sticky", b"1"), ("range", b"2")))
    g.sync(0, a, None, 1, None, None, {})
    assert g.protocol == "cooperative-sticky"
    b, _ = join_new(g, 0, "b", protocols=(("range", b"3"),))
    g.join(0, request(a, "a", protocols=(("cooperative-sticky", b"1"), ("range", b"2"))))
    assert g.protocol == "range" and g.members[a].metadata("range") == b"2"


def test_static_member_restart_keeps_its_place_without_rebalance():
    g = group()
    first = g.join(0, request(client="s", instance="i-1"))                     # static members need no second join
    old = first["member_id"]
    g.sync(0, old, "i-1", 1, None, None, {old: b"mine"})
    again = g.join(5, request(client="s", instance="i-1"))                     # restarted: no member id
    new = again["member_id"]
    assert new != old and again["generation_id"] == 1 and again["skip_assignment"] is True
    assert g.state is State.STABLE and g.members[new].assignment == b"mine"
    assert g.heartbeat(6, old, "i-1", 1) == ErrorCode.FENCED_INSTANCE_ID                  # the old incarnation is fenced
    assert g.join(6, request(old, instance="i-1"))["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    assert g.leave(7, old, "i-1") == ErrorCode.FENCED_INSTANCE_ID
    assert g.leave(7, "", "i-1") == ErrorCode.NONE and g.state is State.EMPTY


def test_static_leader_before_v9_triggers_a_rebalance():
    g = group()
    first = g.join(0, request(client="s", instance="i-1", version=5))
    g.sync(0, first["member_id"], "i-1", 1, None, None, {})
    again = g.join(1, request(client="s", instance="i-1", version=5))
    assert again["generation_id"] == 2 and again["leader"] == again["member_id"]


def test_static_members_survive_the_rebalance_timeout():
    g = group()
    static = g.join(0, request(client="s", instance="i-1"))["member_id"]
    g.sync(0, static, "i-1", 1, None, None, {})
    dynamic, waiting = join_new(g, 0, "d")
    g.heartbeat(REBALANCE - 1, static, "i-1", 1)
    g.tick(REBALANCE)
    assert waiting.result["generation_id"] == 2 and set(g.members) == {static, dynamic}


def test_waiting_members_do_not_expire():
    g, a, b = stable_pair()
    waiting = g.join(0, request(b, "b"))
    g.heartbeat(SESSION - 1, a, None, 2)
    g.tick(SESSION + 1)                                                         # b waits in JoinGroup: alive
    assert b in g.members and waiting.result is None


def test_initial_rebalance_delay_gathers_members_started_together():
    g = ClassicGroup("g", initial_delay_ms=3_000)
    a = g.join(0, request(client="a", version=3))
    assert isinstance(a, Waiter)                                                # alone, but the round stays open
    b = g.join(1_000, request(client="b", version=3))
    g.tick(3_500)
    assert a.result is None and b.result is None                               # b's join extended the round
    g.tick(4_000)
    assert a.result["generation_id"] == b.result["generation_id"] == 1 and len(g.members) == 2
