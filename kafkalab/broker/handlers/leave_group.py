"""LeaveGroup (13), v0-v5: members leave a classic group; the others rebalance.

v0-v2 name one member; v3+ a batch (KIP-345), each by member id or ``group_instance_id``, each answered
with its own error; v5 adds a reason (logged by Kafka, ignored here).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    groups, group_id = ctx.state.groups, body["group_id"]
    if not ctx.allowed("READ", "GROUP", group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    if ctx.api_version < 3:
        return {"throttle_time_ms": 0, "error_code": groups.leave(ctx.now_ms, group_id, body["member_id"], None)}
    members = [{"member_id": m["member_id"], "group_instance_id": m.get("group_instance_id"),
                "error_code": groups.leave(ctx.now_ms, group_id, m["member_id"], m.get("group_instance_id"))}
               for m in body.get("members") or ()]
    return {"throttle_time_ms": 0, "error_code": 0, "members": members}


HANDLER = Handler(ApiKey.LEAVE_GROUP, 0, 5, handle)
