"""The group coordinator: every group of this broker, their offsets checks, persistence and timers, sans-IO.

Owns: the table group id -> group (a :class:`~.classic.ClassicGroup` for JoinGroup/SyncGroup clients or a
:class:`~.consumer.ConsumerGroup` for KIP-848's ConsumerGroupHeartbeat), creating groups on first use, the
checks an OffsetCommit must pass (who may commit to which group in which generation), writing a group's
records to ``__consumer_offsets`` whenever its generation, members or assignment change (a classic group's
GroupMetadata record, a KIP-848 group's records of :mod:`.consumer_records`), rebuilding both kinds of group
from those records after a restart, and the list/describe/delete views. Restored members get a whole session
from the first tick to come back, as Kafka gives them after loading a group. Must not know: sockets,
clocks (``now_ms`` is a parameter), the wire encoding. ``notify`` is called when something a waiting
JoinGroup/SyncGroup may be waiting for happened (the server then retries its long polls).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kafkalab.protocol import ErrorCode
from kafkalab.protocol.payloads import ASSIGNMENT, SUBSCRIPTION, encode_payload

from .classic import ClassicGroup
from .classic_members import JoinRequest, Member, Waiter, join_error, sync_answer
from .classic_states import State
from .consumer import ConsumerGroup
from .consumer_records import changes, fingerprint, group_records, restore

@dataclass(frozen=True)
class GroupSettings:
    """Kafka's group.* broker settings. Session timeouts from 1 s are accepted (Kafka's minimum is 6 s) so lab
    demos of an expiring member stay short."""
    min_session_timeout_ms: int = 1_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000           # group.initial.rebalance.delay.ms
    consumer_heartbeat_interval_ms: int = 1_000       # group.consumer.heartbeat.interval.ms (Kafka: 5 s)
    consumer_session_timeout_ms: int = 45_000         # group.consumer.session.timeout.ms


def as_bytes(payload: str, value) -> bytes:
    """A consumer-protocol payload as bytes (the codec hands them over decoded when it can)."""
    if value is None:
        return b""
    return value if isinstance(value, (bytes, bytearray)) else encode_payload(payload, value)


class GroupCoordinator:
    def __init__(self, store, settings: GroupSettings | None = None, notify: Callable[[], None] = lambda: None) -> None:
        self.store, self.settings, self.notify = store, settings or GroupSettings(), notify
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        self._restored: list = []          # members (of either kind) whose session starts at the next tick
        self._fingerprints: dict[str, tuple] = {}     # KIP-848 group id -> its state when last written
        for group_id, value in store.group_records.items():
            self.groups[group_id] = self._restore(group_id, value)
        for group_id, records in store.consumer_group_records.items():
            group = self.groups[group_id] = ConsumerGroup(group_id, store, self.settings)
            self._restored.extend(restore(group, records))

    # --- classic groups -------------------------------------------------------------------------------

    def join(self, now_ms: int, group_id: str, req: JoinRequest) -> dict | Waiter:
        s = self.settings
        if not s.min_session_timeout_ms <= req.session_timeout_ms <= s.max_session_timeout_ms:
            return join_error(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            if group.members:
                return join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
            group = None
            self._write_consumer_records(group_id, None, now_ms)     # the empty KIP-848 group is gone
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, state_since_ms=now_ms,
                                                         initial_delay_ms=s.initial_rebalance_delay_ms)
        return self._after(group, now_ms, group.join(now_ms, req))

    def sync(self, now_ms: int, group_id: str, member_id: str, instance_id: str | None, generation: int,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes]) -> dict | Waiter:
        group = self._classic(group_id)
        if group is None:
            return sync_answer(ErrorCode.UNKNOWN_MEMBER_ID)
        return self._after(group, now_ms, group.sync(now_ms, member_id, instance_id, generation, protocol_type,
                                                     protocol_name, assignments))

    def heartbeat(self, now_ms: int, group_id: str, member_id: str, instance_id: str | None, generation: int) -> int:
        group = self._classic(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return group.heartbeat(now_ms, member_id, instance_id, generation)

    def leave(self, now_ms: int, group_id: str, member_id: str, instance_id: str | None) -> int:
        group = self._classic(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return self._after(group, now_ms, group.leave(now_ms, member_id, instance_id))

    def _classic(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    # --- KIP-848 consumer groups ------------------------------------------------------------------------

    def consumer_heartbeat(self, now_ms: int, body: dict, client_id: str, client_host: str) -> dict:
        group_id = body["group_id"]
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup):
            if group.members or group.pending:
                return {"error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                        "error_message": "a classic group is active",
                        "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}
            group = None
        if group is None:
            group = self.groups[group_id] = ConsumerGroup(group_id, self.store, self.settings)
            self.store.write_group(group_id, None, now_ms)        # an empty classic group becomes this one
        answer = group.heartbeat(now_ms, body, client_id, client_host)
        self._persist(group, now_ms)
        return answer

    # --- offsets ----------------------------------------------------------------------------------------

    def commit_problem(self, now_ms: int, group_id: str, member_id: str, instance_id: str | None,
                       generation: int) -> int:
        """Whether an OffsetCommit naming this member and generation (member epoch, for KIP-848 groups) may
        commit: a commit with generation -1 and no member ("simple", from consumers that assign themselves)
        goes to a group nobody is a member of."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        return group.commit_problem(now_ms, member_id, instance_id, generation)

    def delete_offsets(self, now_ms: int, group_id: str, topics: list[tuple[str, list[int]]]) -> tuple[int, dict]:
        """OffsetDelete: (group error, {(topic, partition): error}); offsets of topics the group's members
        subscribe to stay (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)."""
        if group_id not in self.groups and group_id not in self.store.committed:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        group = self.groups.get(group_id)
        subscribed = group.subscribed_topics() if group is not None else set()
        errors = {}
        for topic, partitions in topics:
            for index in partitions:
                if topic in subscribed:
                    errors[(topic, index)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    self.store.delete_committed(group_id, topic, index, now_ms)
                    errors[(topic, index)] = ErrorCode.NONE
        return ErrorCode.NONE, errors

    # --- views and deletion -------------------------------------------------------------------------------

    def known(self) -> list[str]:
        return sorted(set(self.groups) | set(self.store.committed))

    def state_of(self, group_id: str) -> str:
        group = self.groups.get(group_id)
        if group is None:
            return State.EMPTY.value if group_id in self.store.committed else State.DEAD.value
        return group.state_name()

    def kind_of(self, group_id: str) -> str:
        group = self.groups.get(group_id)
        return group.kind if group is not None else ClassicGroup.kind

    def describe(self, group_id: str) -> dict:
        """DescribeGroups' view of a group: members with their metadata and assignment when Stable (Kafka's
        group summary), members alone otherwise; KIP-848 groups list their members without payloads."""
        group = self.groups.get(group_id)
        out = {"group_id": group_id, "group_state": self.state_of(group_id), "protocol_type": "",
               "protocol_data": "", "members": []}
        if isinstance(group, ClassicGroup):
            stable = group.state is State.STABLE
            out.update(protocol_type=group.protocol_type or "", protocol_data=(group.protocol or "") if stable else "",
                       members=[{"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                                 "client_host": m.client_host,
                                 "member_metadata": m.metadata(group.protocol) if stable else b"",
                                 "member_assignment": m.assignment if stable else b""}
                                for m in group.members.values()])
        elif isinstance(group, ConsumerGroup):
            out.update(protocol_type="consumer", members=[
                {"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                 "client_host": m.client_host, "member_metadata": b"", "member_assignment": b""}
                for m in group.members.values()])
        return out

    def delete_group(self, now_ms: int, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None and group_id not in self.store.committed:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group is not None and not group.is_empty():
            return ErrorCode.NON_EMPTY_GROUP
        if group is not None:
            group.delete(now_ms)
            del self.groups[group_id]
        for topic, partition in list(self.store.committed.get(group_id, {})):
            self.store.delete_committed(group_id, topic, partition, now_ms)
        self.store.write_group(group_id, None, now_ms)
        self._write_consumer_records(group_id, None, now_ms)
        return ErrorCode.NONE

    # --- time ---------------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Expire sessions and end join phases whose time is up; wake long polls if any group changed."""
        for member in self._restored:
            member.last_seen_ms = now_ms          # restored members get a whole session to come back
        self._restored.clear()
        changed = False
        for group in list(self.groups.values()):
            before = group.signature()
            group.tick(now_ms)
            self._persist(group, now_ms)
            changed = changed or group.signature() != before
        if changed:
            self.notify()

    # --- persistence ----------------------------------------------------------------------------------------

    def _after(self, group, now_ms: int, result):
        self._persist(group, now_ms)
        self.notify()
        return result

    def _persist(self, group, now_ms: int) -> None:
        if isinstance(group, ConsumerGroup):
            state = fingerprint(group)
            if self._fingerprints.get(group.group_id) != state:
                self._fingerprints[group.group_id] = state
                self._write_consumer_records(group.group_id, group, now_ms)
        elif group.persist:
            group.persist = False
            self.store.write_group(group.group_id, metadata_value(group, now_ms), now_ms)

    def _write_consumer_records(self, group_id: str, group: ConsumerGroup | None, now_ms: int) -> None:
        """Write what changed in a KIP-848 group since its records were last written (with None: tombstones)."""
        if group is None:
            self._fingerprints.pop(group_id, None)
        written = self.store.consumer_group_records.get(group_id, {})
        if written or group is not None:
            self.store.write_consumer_group(group_id, changes(written, group_records(group)), now_ms)

    def _restore(self, group_id: str, value: dict) -> ClassicGroup:
        """A classic group as its last metadata record left it: Stable with its members, or Empty."""
        group = ClassicGroup(group_id, generation=value["generation"], protocol_type=value["protocol_type"] or None,
                             protocol=value.get("protocol"), leader=value.get("leader"),
                             initial_delay_ms=self.settings.initial_rebalance_delay_ms)
        for m in value.get("members", ()):
            member = Member(m["member_id"], m.get("group_instance_id"), m["client_id"], m["client_host"],
                            m["session_timeout"], m.get("rebalance_timeout", m["session_timeout"]),
                            [(group.protocol, as_bytes(SUBSCRIPTION, m["subscription"]))],
                            as_bytes(ASSIGNMENT, m["assignment"]))
            group.members[member.member_id] = member
            if member.instance_id is not None:
                group.static[member.instance_id] = member.member_id
            self._restored.append(member)
        group.state = State.STABLE if group.members and group.protocol else State.EMPTY
        return group


def metadata_value(group: ClassicGroup, now_ms: int) -> dict:
    """GroupMetadataValue's fields for a classic group as it is now."""
    return {"protocol_type": group.protocol_type or "", "generation": group.generation, "protocol": group.protocol,
            "leader": group.leader, "current_state_timestamp": now_ms,
            "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                         "client_host": m.client_host, "rebalance_timeout": m.rebalance_timeout_ms,
                         "session_timeout": m.session_timeout_ms, "subscription": m.metadata(group.protocol),
                         "assignment": m.assignment} for m in group.members.values()]}

