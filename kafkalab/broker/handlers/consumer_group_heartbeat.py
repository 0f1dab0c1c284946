"""ConsumerGroupHeartbeat (68), v0-v1: KIP-848's consumer protocol, where the broker assigns partitions.

Joining (epoch 0), heartbeating and leaving (epoch -1, -2 for static members) are one request; the answer
carries the member's epoch and, when it changed, its assignment. v1 lets the client choose its member id
(KIP-1082) and subscribe by regular expression. The group logic is :mod:`kafkalab.broker.groups.consumer`.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler
from .group_waits import client_host


def handle(ctx, body: dict) -> dict:
    if not body.get("group_id"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_GROUP_ID, "error_message": "empty group id",
                "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}
    if not ctx.allowed("READ", "GROUP", body["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}
    if any(not ctx.allowed("DESCRIBE", "TOPIC", t) for t in body.get("subscribed_topic_names") or ()):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": body.get("member_id"), "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}
    return ctx.state.groups.consumer_heartbeat(ctx.now_ms, body, ctx.client_id or "", client_host(ctx))


HANDLER = Handler(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, handle)
