"""SyncGroup (14), v0-v5: the leader brings the assignment; every member's answer waits for it.

v3+ carries ``group_instance_id``; v5 names the protocol type and name, which must match the group's.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.protocol.payloads import ASSIGNMENT

from ..groups.classic_members import sync_answer
from ..groups.coordinator import as_bytes
from .base import Handler
from .group_waits import when_decided

MAX_WAIT_MS = 300_000       # the leader's session expiring ends the wait first


def handle(ctx, body: dict):
    if not body.get("group_id"):
        return {"throttle_time_ms": 0, **sync_answer(ErrorCode.INVALID_GROUP_ID)}
    if not ctx.allowed("READ", "GROUP", body["group_id"]):
        return {"throttle_time_ms": 0, **sync_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    assignments = {a["member_id"]: as_bytes(ASSIGNMENT, a["assignment"]) for a in body.get("assignments") or ()}
    result = ctx.state.groups.sync(ctx.now_ms, body["group_id"], body["member_id"], body.get("group_instance_id"),
                                   body["generation_id"], body.get("protocol_type"), body.get("protocol_name"),
                                   assignments)
    return when_decided(result, MAX_WAIT_MS, sync_answer(ErrorCode.REBALANCE_IN_PROGRESS))


HANDLER = Handler(ApiKey.SYNC_GROUP, 0, 5, handle)
