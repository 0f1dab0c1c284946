"""A KIP-848 consumer group as ``__consumer_offsets`` records, and the group those records rebuild.

Owns: which record (key versions 3-8, Kafka's layouts in ``protocol/schema/payloads/consumer_group_*``) holds
which part of a :class:`~.consumer.ConsumerGroup`, the changes between what was last written and the group as
it is now (so a heartbeat that moved one member writes that member's records only), Kafka's record order in
one batch, and rebuilding a group from the replayed records after a restart. Must not know: sockets, clocks,
how records are framed (the store does that).

Why records and not a snapshot file: Kafka keeps a consumer group's whole state in ``__consumer_offsets``
(the group epoch, the topics the assignment was computed from, each member's subscription, the target
assignment and its epoch, each member's current assignment and epoch), so a notebook reading the topic sees
the same story a real broker's log tells, and a restarted broker resumes members at their epochs: a
consumer that heartbeats with its member id and epoch after the restart carries on without rejoining.
"""
from __future__ import annotations

from .consumer import ConsumerGroup, ConsumerMember

GROUP_EPOCH, TOPICS, MEMBER, TARGET_EPOCH, TARGET_MEMBER, CURRENT = 3, 4, 5, 6, 7, 8
# Kafka's order within one write: subscriptions and metadata, then the epoch, then the target, then the
# current assignments; tombstones the other way round (a member's current assignment goes before its
# subscription, the group epoch last).
UPSERT_ORDER = (MEMBER, TOPICS, GROUP_EPOCH, TARGET_MEMBER, TARGET_EPOCH, CURRENT)
TOMBSTONE_ORDER = (CURRENT, TARGET_MEMBER, MEMBER, TOPICS, TARGET_EPOCH, GROUP_EPOCH)
STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = 0, 1, 2       # Kafka's MemberState ids

RecordKey = tuple[int, "str | None"]


def group_records(group: ConsumerGroup | None) -> dict[RecordKey, dict]:
    """Every record value describing ``group`` now, by (key version, member id or None); None: no group."""
    if group is None:
        return {}
    topics = group.store.topics
    out: dict[RecordKey, dict] = {
        (GROUP_EPOCH, None): {"epoch": group.epoch},
        (TOPICS, None): {"topics": [{"topic_id": topics[t].topic_id, "topic_name": t, "num_partitions": n,
                                     "partition_metadata": []} for t, n in sorted(group.topic_sizes.items())
                                    if t in topics]},
        (TARGET_EPOCH, None): {"assignment_epoch": group.assignment_epoch},
    }
    for m in group.members.values():
        out[(MEMBER, m.member_id)] = {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": sorted(m.topic_names),
            "subscribed_topic_regex": m.topic_regex, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor, "classic_member_metadata": None}
        out[(CURRENT, m.member_id)] = {
            "member_epoch": m.epoch, "previous_member_epoch": m.previous_epoch, "state": _member_state(group, m),
            "assigned_partitions": group.by_id(m.assigned),
            "partitions_pending_revocation": group.by_id(m.revoking)}
    for member_id, partitions in group.target.items():
        if member_id in group.members:
            out[(TARGET_MEMBER, member_id)] = {"topic_partitions": group.by_id(partitions)}
    return out


def fingerprint(group: ConsumerGroup) -> tuple:
    """Everything :func:`group_records` reads, in the group's own terms: about five times cheaper to build
    than the records, so a heartbeat that changed nothing (most of them) builds no records at all."""
    target = group.target
    return (group.epoch, group.assignment_epoch, tuple(group.topic_sizes.items()), tuple(
        (m.member_id, m.epoch, m.previous_epoch, frozenset(m.assigned), frozenset(m.revoking),
         frozenset(target.get(m.member_id, ())), tuple(m.topic_names), m.topic_regex, m.server_assignor,
         m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms)
        for m in group.members.values()))


def changes(written: dict[RecordKey, dict], now: dict[RecordKey, dict]) -> list[tuple[int, str | None, dict | None]]:
    """The records that turn ``written`` into ``now``: tombstones for keys gone, then values that differ, each
    in Kafka's order."""
    gone = sorted((key for key in written if key not in now), key=lambda k: (TOMBSTONE_ORDER.index(k[0]), k[1] or ""))
    new = sorted((key for key, value in now.items() if written.get(key) != value),
                 key=lambda k: (UPSERT_ORDER.index(k[0]), k[1] or ""))
    return [(kind, member, None) for kind, member in gone] + [(kind, member, now[(kind, member)]) for kind, member in new]


def restore(group: ConsumerGroup, records: dict[RecordKey, dict]) -> list[ConsumerMember]:
    """Put the state ``records`` describe into the new, empty ``group``; returns the members (whose sessions
    the caller restarts). Topics deleted since are left out of the assignments."""
    group.epoch = records.get((GROUP_EPOCH, None), {}).get("epoch", 0)
    group.assignment_epoch = records.get((TARGET_EPOCH, None), {}).get("assignment_epoch", 0)
    group.topic_sizes = {t["topic_name"]: t["num_partitions"]
                         for t in records.get((TOPICS, None), {}).get("topics", ())}
    for (kind, member_id), value in records.items():
        if kind == MEMBER:
            group.members[member_id] = ConsumerMember(
                member_id, value["instance_id"], value["rack_id"], value["client_id"], value["client_host"],
                value["rebalance_timeout_ms"], list(value["subscribed_topic_names"]),
                value["subscribed_topic_regex"], value["server_assignor"])
    for (kind, member_id), value in records.items():
        member = group.members.get(member_id)
        if kind == TARGET_MEMBER and member is not None:
            group.target[member_id] = group.named(value["topic_partitions"])
        elif kind == CURRENT and member is not None:
            member.epoch, member.previous_epoch = value["member_epoch"], value["previous_member_epoch"]
            member.assigned = group.named(value["assigned_partitions"])
            member.revoking = group.named(value["partitions_pending_revocation"])
    group.assignor = next((m.server_assignor for m in group.members.values() if m.server_assignor), group.assignor)
    return list(group.members.values())


def _member_state(group: ConsumerGroup, member: ConsumerMember) -> int:
    if member.revoking:
        return UNREVOKED_PARTITIONS
    if member.epoch != group.epoch or member.assigned != group.target.get(member.member_id, set()):
        return UNRELEASED_PARTITIONS
    return STABLE
