"""StreamsGroupHeartbeat (88), v0 (KIP-1071): a Kafka Streams member joins (epoch 0, with its topology),
heartbeats, or leaves (epoch -1); the answer carries its active tasks when they changed.

The member id is the client's own (INVALID_REQUEST when empty); a group id a classic or consumer group already
uses is INCONSISTENT_GROUP_PROTOCOL. The first topology, or one with a higher epoch, becomes the group's (tasks
are dealt again: streams/groups.py); a member whose topology epoch is lower is told STALE_TOPOLOGY, and
source topics that do not exist give MISSING_SOURCE_TOPICS. Unknown members are UNKNOWN_MEMBER_ID, a member
epoch other than the last one given FENCED_MEMBER_EPOCH. ``shutdown_application`` tells every member
SHUTDOWN_APPLICATION. Members with a user endpoint are published with the partitions they serve (interactive
queries).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..streams import StreamsMember
from .base import Handler

LEAVE, HEARTBEAT_MS, RECOVERY_LAG, TASK_OFFSET_INTERVAL_MS = -1, 5000, 10_000, 60_000


def handle(ctx, body: dict) -> dict:
    streams = ctx.state.streams_groups
    group_id, member_id, epoch = body.get("group_id"), body.get("member_id") or "", body.get("member_epoch", 0)
    topology = body.get("topology")
    sources = [t for s in (topology or {}).get("subtopologies", ()) for t in s.get("source_topics", ())]
    if not member_id:
        return _error(member_id, epoch, ErrorCode.INVALID_REQUEST, "A streams member id is required.")
    if group_id in ctx.state.groups.groups:
        return _error(member_id, epoch, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "The group is not a streams group.")
    if any(not ctx.allowed("DESCRIBE", "TOPIC", t) for t in sources):
        return _error(member_id, epoch, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    if epoch == LEAVE:
        group = streams.group(group_id)
        if group is not None:
            streams.leave(group, member_id)
        return _error(member_id, LEAVE, ErrorCode.NONE, None)
    if epoch == 0:
        if not topology or not topology.get("subtopologies"):
            return _error(member_id, epoch, ErrorCode.INVALID_REQUEST, "A joining member must send its topology.")
        group = streams.group(group_id, create=True)
        member = group.members.get(member_id)
        if member is None:
            host = ctx.client_address.rpartition(":")[0]
            member = group.members[member_id] = StreamsMember(member_id, ctx.client_id or "", host)
            member.epoch = -1
        member.topology_epoch = topology["epoch"]
        before = group.epoch
        streams.set_topology(group, topology)
        if group.epoch == before:
            streams.rebalance(group)
    else:
        group = streams.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None:
            return _error(member_id, epoch, ErrorCode.UNKNOWN_MEMBER_ID, None)
        if epoch != member.epoch:
            return _error(member_id, epoch, ErrorCode.FENCED_MEMBER_EPOCH, None)
    _remember(member, body, ctx.now_ms)
    group.shutdown |= bool(body.get("shutdown_application"))
    changed, member.epoch = member.epoch != group.epoch, group.epoch
    tasks = [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(member.active.items())]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
            "member_epoch": member.epoch, "heartbeat_interval_ms": HEARTBEAT_MS,
            "acceptable_recovery_lag": RECOVERY_LAG, "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS,
            "status": group.statuses(member) or None, "active_tasks": tasks if changed else None,
            "standby_tasks": [] if changed else None, "warmup_tasks": [] if changed else None,
            "endpoint_information_epoch": group.epoch, "partitions_by_user_endpoint": _endpoints(group)}


def _remember(member, body: dict, now_ms: int) -> None:
    """Fields sent only when they change (null otherwise) are kept from earlier heartbeats."""
    for name in ("process_id", "instance_id", "rack_id", "user_endpoint", "client_tags"):
        if body.get(name) is not None:
            setattr(member, name, body[name])
    member.last_seen_ms = now_ms


def _endpoints(group) -> list[dict] | None:
    """Interactive queries: each member's endpoint and the source partitions its active tasks serve."""
    subs = {s["subtopology_id"]: s.get("source_topics", ()) for s in (group.topology or {}).get("subtopologies", ())}
    out = []
    for member in sorted(group.members.values(), key=lambda m: m.member_id):
        if member.user_endpoint:
            by_topic: dict[str, list[int]] = {}
            for sub, partitions in member.active.items():
                for topic in subs.get(sub, ()):
                    by_topic.setdefault(topic, []).extend(partitions)
            out.append({"user_endpoint": member.user_endpoint, "standby_partitions": [], "active_partitions": [
                {"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]})
    return out or None


def _error(member_id: str, epoch: int, code: int, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "member_id": member_id,
            "member_epoch": epoch, "heartbeat_interval_ms": HEARTBEAT_MS, "acceptable_recovery_lag": RECOVERY_LAG,
            "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS, "status": None, "active_tasks": None,
            "standby_tasks": None, "warmup_tasks": None, "endpoint_information_epoch": -1,
            "partitions_by_user_endpoint": None}


HANDLER = Handler(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 0, handle)
