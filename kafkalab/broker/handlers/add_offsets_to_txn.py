"""AddOffsetsToTxn (25), v0-v4: a group's offsets join a producer's transaction (sendOffsetsToTransaction).

The offsets themselves follow in TxnOffsetCommit and become committed offsets when the transaction commits.
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..transactions import for_version
from .base import Handler

FENCED_SINCE = 2


def handle(ctx, body: dict) -> dict:
    coordinator = ctx.state.transactions
    meta, error = ctx.transaction(body["transactional_id"], body["producer_id"], body["producer_epoch"])
    if not error and not ctx.allowed("READ", "GROUP", body["group_id"]):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not error:
        error = coordinator.add_offsets(meta, body["group_id"], ctx.now_ms)
    return {"throttle_time_ms": 0, "error_code": for_version(error, ctx.api_version, FENCED_SINCE)}


HANDLER = Handler(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, handle)
