"""JoinGroup (11), v0-v9: a member joins a classic group; the answer waits for the rebalance to settle.

v0 has no rebalance timeout (the session timeout serves); v4+ gives a new member its id with
MEMBER_ID_REQUIRED first (KIP-394); v5+ carries ``group_instance_id`` (static membership, KIP-345); v9 may
tell a static leader rejoining a stable group to skip the assignment. The group logic is
:mod:`kafkalab.broker.groups.classic`.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.protocol.payloads import SUBSCRIPTION

from ..groups import JoinRequest
from ..groups.classic_members import join_error
from ..groups.coordinator import as_bytes
from .base import Handler
from .group_waits import client_host, when_decided

GRACE_MS = 5_000        # past the rebalance timeout, the coordinator has answered: this bounds the wait only


def handle(ctx, body: dict):
    session = body["session_timeout_ms"]
    rebalance = body.get("rebalance_timeout_ms", -1) if ctx.api_version >= 1 else session
    req = JoinRequest(body.get("member_id") or "", body.get("group_instance_id"), ctx.client_id or "",
                      client_host(ctx), session, rebalance,
                      [(p["name"], as_bytes(SUBSCRIPTION, p["metadata"])) for p in body.get("protocols") or ()],
                      protocol_type=body.get("protocol_type") or "", require_member_id=ctx.api_version >= 4,
                      skip_assignment_ok=ctx.api_version >= 9)
    if not body.get("group_id"):
        return {"throttle_time_ms": 0, **join_error(ErrorCode.INVALID_GROUP_ID, req.member_id)}
    if not ctx.allowed("READ", "GROUP", body["group_id"]):
        return {"throttle_time_ms": 0, **join_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, req.member_id)}
    result = ctx.state.groups.join(ctx.now_ms, body["group_id"], req)
    give_up = join_error(ErrorCode.REBALANCE_IN_PROGRESS, req.member_id)
    return when_decided(result, max(rebalance, session) + GRACE_MS, give_up)


HANDLER = Handler(ApiKey.JOIN_GROUP, 0, 9, handle)
