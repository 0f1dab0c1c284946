"""ConsumerGroupDescribe (69), v0-v1: KIP-848 groups with their epochs, assignor, and each member's current
and target assignment. Other ids answer ErrorCode.GROUP_ID_NOT_FOUND (a classic group is not a consumer group)."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..groups import ConsumerGroup
from .base import Handler

NOT_PROVIDED = -2147483648


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0, "groups": [_describe(ctx, g) for g in body.get("group_ids") or ()]}


def _describe(ctx, group_id: str) -> dict:
    group = ctx.state.groups.groups.get(group_id)
    if not ctx.allowed("DESCRIBE", "GROUP", group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None, "group_id": group_id,
                "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
                "authorized_operations": NOT_PROVIDED}
    if not isinstance(group, ConsumerGroup):
        return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"group {group_id} is not a consumer group",
                "group_id": group_id, "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1,
                "assignor_name": "", "members": [], "authorized_operations": NOT_PROVIDED}
    return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
            "group_state": group.state_name(),
            "group_epoch": group.epoch, "assignment_epoch": group.assignment_epoch, "assignor_name": group.assignor,
            "members": [group.describe_member(m) for m in group.members.values()],
            "authorized_operations": NOT_PROVIDED}


HANDLER = Handler(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, handle)
