"""ShareGroupDescribe (77), v0-v1 (KIP-932): a share group's state, epoch, members and their assignments.

An unknown group is GROUP_ID_NOT_FOUND, with state "Dead" as Kafka answers.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

OMITTED = -2147483648


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0, "groups": [_describe(ctx, g) for g in body.get("group_ids", ())]}


def _describe(ctx, group_id: str) -> dict:
    group = ctx.state.share_groups.group(group_id)
    denied = not ctx.allowed("DESCRIBE", "GROUP", group_id)
    if group is None or denied:
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED if denied else ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {group_id} not found." if not denied else None,
                "group_id": group_id, "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1,
                "assignor_name": "", "members": [], "authorized_operations": OMITTED}
    store = ctx.state.store
    assignment = [{"topic_id": store.topics[t].topic_id, "topic_name": t,
                   "partitions": list(range(len(store.topics[t].partitions)))}
                  for t in sorted(group.subscribed) if t in store.topics]
    members = [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.epoch, "client_id": m.client_id or "",
                "client_host": "", "subscribed_topic_names": m.subscribed,
                "assignment": {"topic_partitions": assignment}} for m in group.members.values()]
    return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id, "group_state": group.state,
            "group_epoch": group.epoch, "assignment_epoch": group.epoch, "assignor_name": "simple",
            "members": members, "authorized_operations": OMITTED}


HANDLER = Handler(ApiKey.SHARE_GROUP_DESCRIBE, 0, 1, handle)
