"""Heartbeat (12), v0-v4: a classic member is alive; REBALANCE_IN_PROGRESS tells it to join again.

v3+ carries ``group_instance_id`` (FENCED_INSTANCE_ID when another member took that instance id)."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    if not ctx.allowed("READ", "GROUP", body["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = ctx.state.groups.heartbeat(ctx.now_ms, body["group_id"], body["member_id"],
                                       body.get("group_instance_id"), body["generation_id"])
    return {"throttle_time_ms": 0, "error_code": error}


HANDLER = Handler(ApiKey.HEARTBEAT, 0, 4, handle)
