"""FindCoordinator (10), v0-v6: the first node coordinates every group and transactional id.

v0 asks for a group; v1-v3 for one key of a type (0 group, 1 transaction); v4+ for a list
(``coordinator_keys``, KIP-699) answered one entry each. An unknown key type is ErrorCode.INVALID_REQUEST, an empty
group id ErrorCode.INVALID_GROUP_ID (as Kafka answers).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

GROUP, TRANSACTION = 0, 1


def handle(ctx, body: dict) -> dict:
    key_type = body.get("key_type", GROUP)
    if ctx.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [_entry(ctx, key, key_type) | {"key": key}
                                                        for key in body.get("coordinator_keys", ())]}
    return {"throttle_time_ms": 0, **_entry(ctx, body.get("key", ""), key_type)}


def _entry(ctx, key: str, key_type: int) -> dict:
    state = ctx.state
    error = ErrorCode.INVALID_REQUEST if key_type not in (GROUP, TRANSACTION) else \
        ErrorCode.INVALID_GROUP_ID if key_type == GROUP and not key else ErrorCode.NONE
    if error:
        return {"node_id": -1, "host": "", "port": -1, "error_code": error, "error_message": None}
    host, port = next((h, p) for node, h, p in state.brokers(ctx.local_host, ctx.local_port) if node == state.node_id)
    return {"node_id": state.node_id, "host": host, "port": port, "error_code": ErrorCode.NONE, "error_message": None}


HANDLER = Handler(ApiKey.FIND_COORDINATOR, 0, 6, handle)
