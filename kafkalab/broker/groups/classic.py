"""One classic consumer group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): Kafka's group state machine, sans-IO.

Owns: a group's members (dynamic and static), the pending member ids handed out with ErrorCode.MEMBER_ID_REQUIRED, the
generation, the protocol type, the chosen protocol, the leader, each member's assignment, and when the group
moves between its five states (every move goes through :data:`TRANSITIONS`). Must not know:
sockets, clocks (every call takes ``now_ms``), the wire encoding (it returns response bodies as dicts),
storage (it sets ``persist`` when its metadata record must be written) or other groups.
The states and their table live in :mod:`.classic_states`, the member records and answer shapes in
:mod:`.classic_members`.

Theory of operation. A group starts Empty. A JoinGroup moves it to PreparingRebalance: every known member must
send JoinGroup again (the ones already in the group learn of the rebalance from ErrorCode.REBALANCE_IN_PROGRESS on their
heartbeats). JoinGroup answers are held back (a :class:`Waiter`) until every member has rejoined or the
rebalance timeout (the largest of the members') passes; members that did not rejoin then leave (static ones
stay), the generation grows by one and the group is CompletingRebalance: each waiter gets the generation,
the chosen protocol and the leader, and the leader also gets every member's subscription. The leader computes
the assignment on the client side and sends it in its SyncGroup; SyncGroups of the others wait for it. When
it arrives the group is Stable and every waiting SyncGroup gets its member's assignment. Any member joining
again, leaving, or missing heartbeats for its session timeout starts a new rebalance; when the last member
goes, the join phase ends with nobody and the group is Empty, one generation later. Eager and cooperative
(incremental) rebalancing differ only in what the clients put in their subscriptions and assignments and in
how often they rejoin; the coordinator runs the same rounds for both.

A new group (Empty) holds its first round open for ``group.initial.rebalance.delay.ms`` (each member joining
meanwhile extends it, up to the rebalance timeout), so consumers started together land in one generation.

Membership rules: from JoinGroup v4 a member without an id is given one with ErrorCode.MEMBER_ID_REQUIRED and must
join again with it (KIP-394); a member with a ``group.instance.id`` (static membership, KIP-345) keeps its
place across restarts: a rejoin with the same instance id and no member id takes over the old member (whose
id is then fenced with ErrorCode.FENCED_INSTANCE_ID) and, in a Stable group with unchanged protocols, gets the current
generation back without a rebalance. Members waiting for a JoinGroup or SyncGroup answer are alive; the
others expire ``session_timeout_ms`` after their last request.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kafkalab.protocol import ErrorCode, ProtocolError
from kafkalab.protocol.payloads import CONSUMER, SUBSCRIPTION, decode_payload

from .classic_members import JoinRequest, Member, Waiter, join_error, new_member_id, sync_answer
from .classic_states import TRANSITIONS, Event, State


@dataclass
class ClassicGroup:
    group_id: str
    state: State = State.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)          # instance id -> member id
    pending: dict[str, int] = field(default_factory=dict)         # member id -> expiry (ErrorCode.MEMBER_ID_REQUIRED)
    rebalance_deadline_ms: int = 0
    initial_delay_ms: int = 0       # group.initial.rebalance.delay.ms: a new group's first round waits for more
    join_not_before_ms: int = 0
    state_since_ms: int = -1
    persist: bool = False           # the group's metadata record must be written
    new_id: Callable[[str], str] = new_member_id
    kind = "classic"

    # --- the transition table ---------------------------------------------------------------------------

    def fire(self, event: Event, now_ms: int) -> None:
        self.state = TRANSITIONS[(self.state, event)]
        self.state_since_ms = now_ms

    # --- JoinGroup ------------------------------------------------------------------------------------

    def join(self, now_ms: int, req: JoinRequest) -> dict | Waiter:
        problem = self._protocol_problem(req)
        if problem:
            return join_error(problem, req.member_id)
        if req.instance_id is not None:
            return self._join_static(now_ms, req)
        if not req.member_id:
            member_id = self.new_id(req.client_id)
            if req.require_member_id:
                self.pending[member_id] = now_ms + req.session_timeout_ms
                return join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id)
            return self._add(now_ms, member_id, req)
        if self.pending.pop(req.member_id, None) is not None:
            return self._add(now_ms, req.member_id, req)
        member = self.members.get(req.member_id)
        if member is None:
            return join_error(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
        return self._rejoin(now_ms, member, req)

    def _protocol_problem(self, req: JoinRequest) -> int:
        if not req.protocol_type or not req.protocols:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        others = [m for m in self.members.values() if m.member_id != req.member_id]
        if not others:
            return ErrorCode.NONE
        common = set.intersection(*({name for name, _ in m.protocols} for m in others))
        if req.protocol_type != self.protocol_type or not common & {name for name, _ in req.protocols}:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return ErrorCode.NONE

    def _join_static(self, now_ms: int, req: JoinRequest) -> dict | Waiter:
        known = self.static.get(req.instance_id)
        if known is None:
            if req.member_id:
                return join_error(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            return self._add(now_ms, self.new_id(req.client_id), req)
        if req.member_id:
            if req.member_id != known:
                return join_error(ErrorCode.FENCED_INSTANCE_ID, req.member_id)
            return self._rejoin(now_ms, self.members[known], req)
        return self._replace_static(now_ms, self.members[known], req)

    def _replace_static(self, now_ms: int, member: Member, req: JoinRequest) -> dict | Waiter:
        """KIP-345: a restarted static member takes the old member's place under a new id; the old id is fenced."""
        old_id, new_id = member.member_id, self.new_id(req.client_id)
        self._settle(member, ErrorCode.FENCED_INSTANCE_ID, old_id)
        del self.members[old_id]
        member.member_id = new_id
        self.members[new_id] = member
        self.static[req.instance_id] = new_id
        was_leader = self.leader == old_id
        if was_leader:
            self.leader = new_id
        unchanged = self._same_subscription(member, req.protocols)
        if self.state is not State.STABLE or not unchanged or (was_leader and not req.skip_assignment_ok):
            return self._rejoin(now_ms, member, req)
        member.last_seen_ms = now_ms
        self.persist = True
        answer = self._join_answer(member, members=False)
        answer["skip_assignment"] = was_leader
        return answer

    def _same_subscription(self, member: Member, protocols: list[tuple[str, bytes]]) -> bool:
        """Kafka's test for a static member's rejoin in a Stable group: the group's protocol is still offered and
        (for consumers) names the same topics; owned partitions and generations inside the metadata may differ."""
        offered = dict(protocols)
        if self.protocol not in offered:
            return False
        if self.protocol_type != CONSUMER:
            return offered[self.protocol] == member.metadata(self.protocol)
        return _topics(offered[self.protocol]) == _topics(member.metadata(self.protocol))

    def _add(self, now_ms: int, member_id: str, req: JoinRequest) -> dict | Waiter:
        member = Member(member_id, req.instance_id, req.client_id, req.client_host, req.session_timeout_ms,
                        req.rebalance_timeout_ms, req.protocols)
        self.members[member_id] = member
        if req.instance_id is not None:
            self.static[req.instance_id] = member_id
        if self.protocol_type is None or len(self.members) == 1:
            self.protocol_type = req.protocol_type
        return self._rejoin(now_ms, member, req)

    def _rejoin(self, now_ms: int, member: Member, req: JoinRequest) -> dict | Waiter:
        member.protocols, member.client_id, member.client_host = req.protocols, req.client_id, req.client_host
        member.session_timeout_ms, member.rebalance_timeout_ms = req.session_timeout_ms, req.rebalance_timeout_ms
        member.last_seen_ms = now_ms
        self._settle(member, ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)     # its own older JoinGroup
        waiter = member.join_waiter = Waiter()
        if self.state is State.EMPTY:
            self.join_not_before_ms = now_ms + self.initial_delay_ms
        elif self.state is State.PREPARING_REBALANCE and self.join_not_before_ms > now_ms:
            self.join_not_before_ms = min(now_ms + self.initial_delay_ms, self.rebalance_deadline_ms)
        if self.state is not State.PREPARING_REBALANCE:
            self._prepare(now_ms, Event.MEMBER_JOINED)
        self._maybe_finish_join(now_ms)
        return waiter.result if waiter.result is not None else waiter

    def _prepare(self, now_ms: int, event: Event) -> None:
        """Enter PreparingRebalance: SyncGroups still waiting learn that a new round started."""
        self.fire(event, now_ms)
        self.rebalance_deadline_ms = now_ms + max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        for m in self.members.values():
            if m.sync_waiter is not None:
                m.sync_waiter.result, m.sync_waiter = sync_answer(ErrorCode.REBALANCE_IN_PROGRESS, self), None

    def _maybe_finish_join(self, now_ms: int) -> None:
        if self.state is not State.PREPARING_REBALANCE:
            return
        everyone = all(m.join_waiter for m in self.members.values()) and not self.pending
        if (not everyone or now_ms < self.join_not_before_ms) and now_ms < self.rebalance_deadline_ms:
            return
        for m in [m for m in self.members.values() if m.join_waiter is None and m.instance_id is None]:
            self._remove(m)
        self.pending.clear()
        self.generation += 1
        if not self.members:                   # recorded now; a generation with members once it is Stable
            self.protocol = self.leader = None
            self.persist = True
            self.fire(Event.NONE_JOINED, now_ms)
            return
        self.protocol = self._select_protocol()
        if self.leader not in self.members or self.members[self.leader].join_waiter is None:
            self.leader = next((m.member_id for m in self.members.values() if m.join_waiter), None)
        self.fire(Event.ALL_JOINED, now_ms)
        for m in self.members.values():
            if m.join_waiter is not None:
                m.join_waiter.result, m.join_waiter = self._join_answer(m, m.member_id == self.leader), None
                m.last_seen_ms = now_ms

    def _select_protocol(self) -> str | None:
        """The protocol every member supports that most members list first among those (Kafka's vote)."""
        members = list(self.members.values())
        common = set.intersection(*({name for name, _ in m.protocols} for m in members))
        votes: dict[str, int] = {}
        for m in members:
            choice = next(name for name, _ in m.protocols if name in common)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=votes.get) if votes else None

    def _join_answer(self, member: Member, members: bool) -> dict:
        listed = [{"member_id": m.member_id, "group_instance_id": m.instance_id, "metadata": m.metadata(self.protocol)}
                  for m in self.members.values()] if members else []
        return {"error_code": ErrorCode.NONE, "generation_id": self.generation, "protocol_type": self.protocol_type,
                "protocol_name": self.protocol, "leader": self.leader or "", "skip_assignment": False,
                "member_id": member.member_id, "members": listed}

    # --- SyncGroup, Heartbeat, LeaveGroup -----------------------------------------------------------------

    def member_problem(self, member_id: str, instance_id: str | None, generation: int | None = None) -> int:
        """FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION for a request naming this member, else NONE."""
        if instance_id is not None and instance_id in self.static and self.static[instance_id] != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation is not None and generation != self.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def sync(self, now_ms: int, member_id: str, instance_id: str | None, generation: int,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes]) -> dict | Waiter:
        problem = self.member_problem(member_id, instance_id, generation)
        if problem:
            return sync_answer(problem)
        if (protocol_type and protocol_type != self.protocol_type) or \
                (protocol_name and protocol_name != self.protocol):
            return sync_answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = self.members[member_id]
        member.last_seen_ms = now_ms
        if self.state is State.PREPARING_REBALANCE:
            return sync_answer(ErrorCode.REBALANCE_IN_PROGRESS, self)
        if self.state is State.STABLE:
            return sync_answer(ErrorCode.NONE, self, member.assignment)
        waiter = member.sync_waiter = Waiter()
        if member_id == self.leader:
            for m in self.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            self.fire(Event.LEADER_SYNCED, now_ms)
            self.persist = True
            for m in self.members.values():
                if m.sync_waiter is not None:
                    m.sync_waiter.result, m.sync_waiter = sync_answer(ErrorCode.NONE, self, m.assignment), None
                    m.last_seen_ms = now_ms
        return waiter.result if waiter.result is not None else waiter

    def heartbeat(self, now_ms: int, member_id: str, instance_id: str | None, generation: int) -> int:
        problem = self.member_problem(member_id, instance_id, generation)
        if problem:
            return problem
        self.members[member_id].last_seen_ms = now_ms
        return ErrorCode.REBALANCE_IN_PROGRESS if self.state is State.PREPARING_REBALANCE else ErrorCode.NONE

    def leave(self, now_ms: int, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            known = self.static.get(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and member_id != known:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = known
        if self.pending.pop(member_id, None) is not None:
            self._maybe_finish_join(now_ms)
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._remove(member)
        self._member_gone(now_ms)
        return ErrorCode.NONE

    def commit_problem(self, now_ms: int, member_id: str, instance_id: str | None, generation: int) -> int:
        """Kafka's checks on an OffsetCommit: simple commits (generation < 0) only to an Empty group; members
        commit in their generation, and not while the group waits for its assignment."""
        if generation < 0 and self.state is State.EMPTY:
            return ErrorCode.NONE
        if instance_id is not None and instance_id in self.static and self.static[instance_id] != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if self.state is State.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        problem = self.member_problem(member_id, instance_id, generation)
        if not problem:
            self.members[member_id].last_seen_ms = now_ms
        return problem

    # --- time -------------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Drop expired pending ids and members whose session ran out; end a join phase whose timeout passed."""
        for member_id, expiry in list(self.pending.items()):
            if now_ms >= expiry:
                del self.pending[member_id]
        expired = [m for m in self.members.values() if not m.alive(now_ms)]
        for m in expired:
            self._remove(m)
        if expired:
            self._member_gone(now_ms)
        else:
            self._maybe_finish_join(now_ms)

    # --- membership ---------------------------------------------------------------------------------------

    def _member_gone(self, now_ms: int) -> None:
        if self.state in (State.STABLE, State.COMPLETING_REBALANCE):
            self._prepare(now_ms, Event.MEMBER_GONE)
        self._maybe_finish_join(now_ms)

    def _remove(self, member: Member) -> None:
        self._settle(member, ErrorCode.UNKNOWN_MEMBER_ID, member.member_id)
        self.members.pop(member.member_id, None)
        if member.instance_id is not None and self.static.get(member.instance_id) == member.member_id:
            del self.static[member.instance_id]
        if self.leader == member.member_id:
            self.leader = None

    def _settle(self, member: Member, code: int, member_id: str) -> None:
        """Answer a member's waiting JoinGroup/SyncGroup with an error (it left, was fenced or joined again)."""
        if member.join_waiter is not None:
            member.join_waiter.result, member.join_waiter = join_error(code, member_id), None
        if member.sync_waiter is not None:
            member.sync_waiter.result, member.sync_waiter = sync_answer(code), None

    # --- views and DeleteGroups ------------------------------------------------------------------------------

    def state_name(self) -> str:
        return self.state.value

    def signature(self) -> tuple:
        return self.state, self.generation, len(self.members), len(self.pending)

    def is_empty(self) -> bool:
        return self.state is State.EMPTY

    def subscribed_topics(self) -> set[str]:
        """The topics named in the members' consumer-protocol subscriptions (OffsetDelete keeps their offsets)."""
        if self.protocol_type != CONSUMER:
            return set()
        return set().union(*(_topics(m.metadata(self.protocol)) for m in self.members.values()))

    def delete(self, now_ms: int) -> None:
        self.fire(Event.DELETED, now_ms)


def _topics(subscription: bytes) -> set[str]:
    """The topics a consumer-protocol subscription names (none if the bytes do not decode: a member's own bytes
    are not ours to judge)."""
    try:
        return set(decode_payload(SUBSCRIPTION, subscription).get("topics") or ())
    except ProtocolError:
        return set()
