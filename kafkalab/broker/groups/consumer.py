"""One KIP-848 consumer group (ConsumerGroupHeartbeat, ConsumerGroupDescribe): server-side assignment, sans-IO.

Owns: the members, their subscriptions, the group epoch, the target assignment computed by a server-side
assignor (:mod:`.assignors`), and each member's reconciliation towards its target. Must not know: sockets,
clocks (``now_ms`` is a parameter), the wire encoding beyond the heartbeat's field names.

Theory of operation. A member joins with epoch 0 and its subscription; leaves with epoch -1 (-2: a static
member leaving for now). Any change of membership, subscription, or of the partition count of a subscribed
topic bumps the group epoch and recomputes the target assignment. Each heartbeat then moves its member
towards its target in two steps, so that no partition is ever owned twice: first the member is told to drop
what is no longer its own (its epoch stays), and once it reports (``topic_partitions``) that it let those
go, it gets the group epoch and the partitions of its target that no other member still holds; partitions
still held elsewhere come on a later heartbeat. An assignment is sent only when it differs from the last one
sent to that member. Members expire ``group.consumer.session.timeout.ms`` after their last heartbeat, or when
they still hold revoked partitions their rebalance timeout after being told to let them go. State:
Empty (no member), Reconciling (some member not yet at its target), Stable. The coordinator writes the group
to ``__consumer_offsets`` as Kafka's KIP-848 records (:mod:`.consumer_records`) after every change, so a
restarted broker knows each member's epoch and assignment and its consumers carry on without rejoining.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode

from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR

JOIN, LEAVE, STATIC_LEAVE = 0, -1, -2
TopicPartitions = set[tuple[str, int]]


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topic_names: list[str] = field(default_factory=list)
    topic_regex: str | None = None
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = -1
    assigned: TopicPartitions = field(default_factory=set)
    revoking: TopicPartitions = field(default_factory=set)
    revoke_by_ms: int | None = None          # a member still holding revoked partitions then is removed
    sent: TopicPartitions | None = None
    last_seen_ms: int = 0


class GroupError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class ConsumerGroup:
    kind = "consumer"

    def __init__(self, group_id: str, store, settings) -> None:
        self.group_id, self.store, self.settings = group_id, store, settings
        self.members: dict[str, ConsumerMember] = {}
        self.epoch = 0
        self.assignment_epoch = 0                  # the group epoch the target assignment was computed at
        self.target: dict[str, TopicPartitions] = {}
        self.topic_sizes: dict[str, int] = {}
        self.assignor = DEFAULT_ASSIGNOR

    # --- ConsumerGroupHeartbeat ---------------------------------------------------------------------------

    def heartbeat(self, now_ms: int, body: dict, client_id: str, client_host: str) -> dict:
        try:
            member = self._member(now_ms, body, client_id, client_host)
        except GroupError as exc:
            return _answer(exc.code, body.get("member_id") or None, -1, 0, None, exc.message)
        if member is None:
            return _answer(ErrorCode.NONE, body["member_id"], body["member_epoch"], 0, None)
        member.last_seen_ms = now_ms
        if self._topics_changed():
            self._rebalance()
        owned = body.get("topic_partitions")
        self._reconcile(now_ms, member, None if owned is None else self.named(owned))
        assignment = None
        if member.sent != member.assigned:
            member.sent = set(member.assigned)
            assignment = {"topic_partitions": self.by_id(member.assigned)}
        interval = self.settings.consumer_heartbeat_interval_ms
        return _answer(ErrorCode.NONE, member.member_id, member.epoch, interval, assignment)

    def _member(self, now_ms: int, body: dict, client_id: str, client_host: str) -> ConsumerMember | None:
        epoch, member_id = body["member_epoch"], body.get("member_id") or ""
        _check_subscription(body)
        if epoch in (LEAVE, STATIC_LEAVE):
            if self.members.pop(member_id, None) is not None:
                self._rebalance()
            return None
        if epoch == JOIN:
            if body.get("subscribed_topic_names") is None and body.get("subscribed_topic_regex") is None:
                raise GroupError(ErrorCode.INVALID_REQUEST, "a joining member must name its subscription")
            member = ConsumerMember(member_id or str(uuid.uuid4()), body.get("instance_id"), body.get("rack_id"),
                                    client_id, client_host, body.get("rebalance_timeout_ms", -1))
            self.members.pop(member.member_id, None)
            self.members[member.member_id] = member
            self._subscribe(member, body, force=True)
            return member
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {self.group_id}")
        if epoch not in (member.epoch, member.previous_epoch):
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, f"epoch {epoch} is not the member's epoch {member.epoch}")
        self._subscribe(member, body, force=False)
        return member

    def _subscribe(self, member: ConsumerMember, body: dict, force: bool) -> None:
        names, regex = body.get("subscribed_topic_names"), body.get("subscribed_topic_regex")
        assignor = body.get("server_assignor")
        changed = force
        if names is not None and sorted(names) != sorted(member.topic_names):
            member.topic_names, changed = list(names), True
        if regex is not None and (regex or None) != member.topic_regex:     # librdkafka sends "" for no regex
            member.topic_regex, changed = regex or None, True
        if assignor is not None and assignor != member.server_assignor:
            member.server_assignor, changed = assignor, True
        if changed:
            self._rebalance()

    # --- the target assignment ------------------------------------------------------------------------

    def _subscribed(self, member: ConsumerMember) -> set[str]:
        topics = {t for t in member.topic_names if t in self.store.topics}
        if member.topic_regex:
            pattern = re.compile(member.topic_regex)
            topics |= {t for t in self.store.topics if not t.startswith("__") and pattern.fullmatch(t)}
        return topics

    def _topics_changed(self) -> bool:
        sizes = self._sizes()
        return sizes != self.topic_sizes

    def _sizes(self) -> dict[str, int]:
        wanted = set().union(*(self._subscribed(m) for m in self.members.values())) if self.members else set()
        return {t: len(self.store.topics[t].partitions) for t in sorted(wanted)}

    def _rebalance(self) -> None:
        """A new group epoch: the target assignment is computed again."""
        self.epoch += 1
        self.topic_sizes = self._sizes()
        chosen = next((m.server_assignor for m in self.members.values() if m.server_assignor), DEFAULT_ASSIGNOR)
        self.assignor = chosen
        subscriptions = {m.member_id: self._subscribed(m) for m in self.members.values()}
        current = {m.member_id: m.assigned for m in self.members.values()}
        self.target = ASSIGNORS[chosen](subscriptions, self.topic_sizes, current)
        self.assignment_epoch = self.epoch

    def _reconcile(self, now_ms: int, member: ConsumerMember, owned: TopicPartitions | None) -> None:
        target = self.target.get(member.member_id, set())
        if member.revoking and owned is not None and not owned & member.revoking:
            member.revoking, member.revoke_by_ms = set(), None
        dropped = member.assigned - target
        if dropped:
            member.assigned -= dropped
            member.revoking |= dropped
            member.revoke_by_ms = now_ms + max(member.rebalance_timeout_ms, 0)
        if member.revoking:
            return
        held = set().union(*(m.assigned | m.revoking for m in self.members.values() if m is not member))
        member.assigned |= (target - member.assigned) - held
        if member.epoch != self.epoch:
            member.previous_epoch, member.epoch = (member.epoch if member.epoch > 0 else -1), self.epoch

    # --- offsets, time, views ---------------------------------------------------------------------------

    def commit_problem(self, now_ms: int, member_id: str, instance_id: str | None, epoch: int) -> int:
        if epoch < 0 and not self.members:
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch in (member.epoch, member.previous_epoch):
            return ErrorCode.NONE
        return ErrorCode.FENCED_MEMBER_EPOCH if epoch > member.epoch else ErrorCode.STALE_MEMBER_EPOCH

    def tick(self, now_ms: int) -> None:
        timeout = self.settings.consumer_session_timeout_ms
        expired = [m for m in self.members.values() if now_ms >= m.last_seen_ms + timeout
                   or (m.revoke_by_ms is not None and now_ms >= m.revoke_by_ms)]
        for m in expired:
            del self.members[m.member_id]
        if expired:
            self._rebalance()

    def state_name(self) -> str:
        if not self.members:
            return "Empty"
        settled = all(m.epoch == self.epoch and m.assigned == self.target.get(m.member_id, set())
                      for m in self.members.values())
        return "Stable" if settled else "Reconciling"

    def signature(self) -> tuple:
        return self.state_name(), self.epoch, len(self.members)

    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topics(self) -> set[str]:
        return set().union(*(self._subscribed(m) for m in self.members.values())) if self.members else set()

    def delete(self, now_ms: int) -> None:
        self.members.clear()

    def describe_member(self, m: ConsumerMember) -> dict:
        return {"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id, "member_epoch": m.epoch,
                "client_id": m.client_id, "client_host": m.client_host, "subscribed_topic_names": m.topic_names,
                "subscribed_topic_regex": m.topic_regex, "member_type": 1,
                "assignment": {"topic_partitions": self.by_id(m.assigned, names=True)},
                "target_assignment": {"topic_partitions": self.by_id(self.target.get(m.member_id, set()),
                                                                      names=True)}}

    # --- topic ids ------------------------------------------------------------------------------------

    def named(self, owned: list[dict]) -> TopicPartitions:
        out = set()
        for item in owned:
            topic = self.store.by_id.get(item["topic_id"])
            if topic is not None:
                out.update((topic.name, p) for p in item["partitions"])
        return out

    def by_id(self, partitions: TopicPartitions, names: bool = False) -> list[dict]:
        grouped: dict[str, list[int]] = {}
        for topic, p in sorted(partitions):
            grouped.setdefault(topic, []).append(p)
        out = []
        for topic, indexes in grouped.items():
            known = self.store.topics.get(topic)
            if known is not None:
                out.append({"topic_id": known.topic_id, "topic_name": topic, "partitions": indexes} if names
                           else {"topic_id": known.topic_id, "partitions": indexes})
        return out


def _check_subscription(body: dict) -> None:
    """UNSUPPORTED_ASSIGNOR and INVALID_REGULAR_EXPRESSION, before anything about the member changes."""
    assignor, regex = body.get("server_assignor"), body.get("subscribed_topic_regex")
    if assignor is not None and assignor not in ASSIGNORS:
        raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"assignor {assignor!r} (known: {', '.join(ASSIGNORS)})")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as exc:
            raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION, str(exc)) from None


def _answer(code: int, member_id: str | None, epoch: int, interval: int, assignment: dict | None,
            message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "member_id": member_id,
            "member_epoch": epoch, "heartbeat_interval_ms": interval, "assignment": assignment}
