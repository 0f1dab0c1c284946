"""The classic group's states and the one table of moves between them.

Owns: :class:`State` (Kafka's five, named as ``DescribeGroups`` reports them), :class:`Event` (what moves a
group) and :data:`TRANSITIONS`. Kept apart from :mod:`.classic`, which decides *when* an event happens, so
the whole machine can be read (and tested, every pair) in one screen.
"""
from __future__ import annotations

import enum


class State(str, enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class Event(enum.Enum):
    MEMBER_JOINED = "a member joins or rejoins"
    MEMBER_GONE = "a member leaves or its session expires"
    ALL_JOINED = "the join phase ends with members (all rejoined, or the rebalance timeout passed)"
    NONE_JOINED = "the join phase ends with no member left"
    LEADER_SYNCED = "the leader's SyncGroup brings the assignment"
    DELETED = "DeleteGroups, or the group's last offsets are gone"


E, P, C, S, D = State.EMPTY, State.PREPARING_REBALANCE, State.COMPLETING_REBALANCE, State.STABLE, State.DEAD
#: (state, event) -> next state. A pair not in the table is a bug in the caller, not a peer's mistake.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (E, Event.MEMBER_JOINED): P,
    (P, Event.MEMBER_JOINED): P,
    (C, Event.MEMBER_JOINED): P,
    (S, Event.MEMBER_JOINED): P,
    (P, Event.MEMBER_GONE): P,
    (C, Event.MEMBER_GONE): P,
    (S, Event.MEMBER_GONE): P,
    (P, Event.ALL_JOINED): C,
    (P, Event.NONE_JOINED): E,
    (C, Event.LEADER_SYNCED): S,
    (E, Event.DELETED): D,
}
