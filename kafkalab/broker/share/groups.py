"""Share groups (KIP-932): members joined by ShareGroupHeartbeat, share sessions, delivery state per partition.

Assignment is the simple one share groups allow: every member gets every partition of the topics the group
subscribes to (members of a share group may share partitions; the delivery state keeps each record with one
member at a time). The group epoch rises on every membership or subscription change; members adopt it on
their next heartbeat. A share session (per member) remembers the partitions its ShareFetches named, so
incremental fetches (epoch > 0) may name none; it outlives the member's group membership until it is closed
(epoch -1), which releases what the member still holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode

from .partition import SharePartition

LOCK_MS = 30_000              # group.share.record.lock.duration.ms
HEARTBEAT_MS = 5_000


@dataclass
class ShareMember:
    member_id: str
    client_id: str | None
    subscribed: list[str]
    epoch: int = 0
    rack_id: str | None = None


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    partitions: dict[tuple[str, int], SharePartition] = field(default_factory=dict)   # (topic, p) -> state
    sessions: dict[str, set[tuple[str, int]]] = field(default_factory=dict)           # member -> session

    @property
    def subscribed(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def partition(self, topic: str, index: int, start_offset: int) -> SharePartition:
        found = self.partitions.get((topic, index))
        if found is None:
            found = self.partitions[(topic, index)] = SharePartition(start_offset)
        return found

    def leave(self, member_id: str) -> None:
        """The member leaves the group; its share session (and what it holds) lives on until closed, so the
        acknowledgements a closing consumer sends after its last heartbeat still count."""
        if self.members.pop(member_id, None) is not None:
            self.epoch += 1

    def knows(self, member_id: str) -> bool:
        return member_id in self.members or member_id in self.sessions

    def close_session(self, member_id: str) -> None:
        """The session ends: the records the member still holds become available again."""
        self.sessions.pop(member_id, None)
        for state in self.partitions.values():
            state.release_member(member_id)


class ShareGroups:
    def __init__(self) -> None:
        self.groups: dict[str, ShareGroup] = {}

    def group(self, group_id: str, create: bool = False) -> ShareGroup | None:
        found = self.groups.get(group_id)
        if found is None and create:
            found = self.groups[group_id] = ShareGroup(group_id)
        return found

    def expire(self, now_ms: int) -> None:
        for group in self.groups.values():
            for state in group.partitions.values():
                state.expire(now_ms)


def offsets_request(groups: ShareGroups, body: dict) -> tuple[ShareGroup | None, dict]:
    """(the group, the answer to fill) for the share-group offset changes. The group must exist and have no
    members; if not, the answer already carries the error."""
    group = groups.group(body.get("group_id"))
    answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": []}
    if group is None:
        answer.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message="The group does not exist.")
    elif group.members:
        answer.update(error_code=ErrorCode.NON_EMPTY_GROUP,
                      error_message="The group has members: stop its consumers first.")
    return group, answer
