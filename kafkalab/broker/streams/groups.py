"""Streams groups (KIP-1071), sans-IO: topology, members and the assignment of tasks to members.

Owns: each group's topology (the subtopologies a Streams application sent with its first heartbeat, and their
epoch), its members, the tasks the topology makes and who runs them. A subtopology has one task per partition of
its source topics (the most partitions among them); a subtopology whose source topics do not exist has none,
and the group says MISSING_SOURCE_TOPICS. Internal topics (repartition sources and state changelogs) are
created as the coordinator does, with the subtopology's task count (or the partitions a repartition topic
asks for). Active tasks are dealt round-robin over the members in member-id order; any change of members or
topology bumps the group epoch and deals again. Simplification: tasks move at once, without Kafka's
revoke-then-assign reconciliation, and there are no standby or warm-up tasks.
Must not know: requests, sockets, clocks (``now_ms`` is passed in).
"""
from __future__ import annotations

from dataclasses import dataclass, field

SESSION_TIMEOUT_MS = 45_000
MISSING_SOURCE_TOPICS, SHUTDOWN_APPLICATION, STALE_TOPOLOGY = 1, 4, 0


@dataclass
class StreamsMember:
    member_id: str
    client_id: str
    client_host: str
    process_id: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    user_endpoint: dict | None = None
    client_tags: list = field(default_factory=list)
    epoch: int = 0
    topology_epoch: int = 0
    active: dict[str, list[int]] = field(default_factory=dict)     # subtopology id -> partitions
    last_seen_ms: int = 0


@dataclass
class StreamsGroup:
    group_id: str
    topology: dict | None = None          # the request's topology struct
    epoch: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    shutdown: bool = False

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        return "NotReady" if self.missing else "Stable"

    def statuses(self, member: StreamsMember) -> list[dict]:
        out = []
        if self.missing:
            out.append({"status_code": MISSING_SOURCE_TOPICS,
                        "status_detail": f"Source topics {', '.join(self.missing)} are missing."})
        if self.topology is not None and member.topology_epoch < self.topology["epoch"]:
            out.append({"status_code": STALE_TOPOLOGY, "status_detail": "The topology epoch is stale."})
        if self.shutdown:
            out.append({"status_code": SHUTDOWN_APPLICATION, "status_detail": "A client asked the application "
                                                                             "to shut down."})
        return out


class StreamsGroups:
    def __init__(self, store, create_topic) -> None:
        self.store, self.create_topic = store, create_topic      # create_topic(name, partitions)
        self.groups: dict[str, StreamsGroup] = {}

    def group(self, group_id: str, create: bool = False) -> StreamsGroup | None:
        found = self.groups.get(group_id)
        if found is None and create:
            found = self.groups[group_id] = StreamsGroup(group_id)
        return found

    def set_topology(self, group: StreamsGroup, topology: dict) -> None:
        if group.topology is None or topology["epoch"] > group.topology["epoch"]:
            group.topology = topology
            self.rebalance(group)

    def leave(self, group: StreamsGroup, member_id: str) -> None:
        if group.members.pop(member_id, None) is not None:
            self.rebalance(group)

    def expire(self, now_ms: int) -> None:
        for group in self.groups.values():
            gone = [m for m, member in group.members.items() if now_ms - member.last_seen_ms > SESSION_TIMEOUT_MS]
            for member_id in gone:
                self.leave(group, member_id)

    def rebalance(self, group: StreamsGroup) -> None:
        """A new group epoch: tasks from the topology as it stands, dealt over the members."""
        group.epoch += 1
        tasks, group.missing = self._tasks(group)
        members = sorted(group.members)
        for member in group.members.values():
            member.active = {}
        for i, (subtopology, partition) in enumerate(tasks):
            if members:
                owner = group.members[members[i % len(members)]]
                owner.active.setdefault(subtopology, []).append(partition)

    def _tasks(self, group: StreamsGroup) -> tuple[list[tuple[str, int]], list[str]]:
        tasks, missing = [], []
        for sub in (group.topology or {}).get("subtopologies", ()):
            sources = list(sub.get("source_topics", ()))
            absent = [t for t in sources if self.store.topic(t) is None]
            internal = {r["name"]: r.get("partitions", 0) for r in sub.get("repartition_source_topics", ())}
            absent = [t for t in absent if t not in internal]
            if absent or not (sources or internal):
                missing += absent
                continue
            count = max([len(self.store.topic(t).partitions) for t in sources if self.store.topic(t) is not None]
                        + [n for n in internal.values() if n > 0] or [1])
            for name, partitions in internal.items():
                self._ensure(name, partitions or count)
            for changelog in sub.get("state_changelog_topics", ()):
                self._ensure(changelog["name"], count)
            tasks += [(sub["subtopology_id"], p) for p in range(count)]
        return tasks, sorted(set(missing))

    def _ensure(self, name: str, partitions: int) -> None:
        if self.store.topic(name) is None:
            self.create_topic(name, partitions)
