"""ShareGroupHeartbeat (76), v0-v1 (KIP-932): join, stay in, or leave a share group, and get the assignment.

A member joins with epoch 0 (v1: the client makes its member id; v0: the broker does when it is empty), names
the topics it subscribes to, and gets the group epoch and every partition of the group's subscribed topics
(share groups may give one partition to several members). Later heartbeats carry its epoch (a stale one is
FENCED_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID) and a null subscription means "unchanged"; epoch -1
leaves (the member's share session, closed by its last ShareFetch or ShareAcknowledge, releases what it held).
"""
from __future__ import annotations

import uuid

from kafkalab.protocol import ApiKey, ErrorCode

from ..share.groups import HEARTBEAT_MS, ShareMember
from .base import Handler

LEAVE = -1


def handle(ctx, body: dict) -> dict:
    shares, store = ctx.state.share_groups, ctx.state.store
    group_id, member_id, epoch = body.get("group_id"), body.get("member_id") or "", body.get("member_epoch", 0)
    topics = body.get("subscribed_topic_names")
    if any(not ctx.allowed("DESCRIBE", "TOPIC", name) for name in topics or ()):
        return {**_answer(member_id, epoch, None), "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    if epoch == LEAVE:
        group = shares.group(group_id)
        if group is not None:
            group.leave(member_id)
        return _answer(member_id, LEAVE, None)
    group = shares.group(group_id, create=epoch == 0)
    member = group.members.get(member_id) if group else None
    if epoch == 0:
        if not member_id:
            member_id = str(uuid.uuid4())
        if member is None:
            member = group.members[member_id] = ShareMember(member_id, ctx.client_id, sorted(topics or ()))
            group.epoch += 1
        elif topics is not None and sorted(topics) != member.subscribed:
            member.subscribed = sorted(topics)
            group.epoch += 1
    elif member is None:
        return {**_answer(member_id, epoch, None), "error_code": ErrorCode.UNKNOWN_MEMBER_ID}
    elif epoch > group.epoch or epoch < member.epoch:
        return {**_answer(member_id, epoch, None), "error_code": ErrorCode.FENCED_MEMBER_EPOCH}
    elif topics is not None and sorted(topics) != member.subscribed:
        member.subscribed = sorted(topics)
        group.epoch += 1
    member.epoch, member.rack_id = group.epoch, body.get("rack_id")
    assignment = [{"topic_id": store.topics[name].topic_id, "partitions": list(range(len(store.topics[name].partitions)))}
                  for name in sorted(group.subscribed) if name in store.topics]
    return _answer(member_id, member.epoch, {"topic_partitions": assignment})


def _answer(member_id: str, epoch: int, assignment) -> dict:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
            "member_epoch": epoch, "heartbeat_interval_ms": HEARTBEAT_MS, "assignment": assignment}


HANDLER = Handler(ApiKey.SHARE_GROUP_HEARTBEAT, 0, 1, handle)
