"""TxnOffsetCommit (28), v0-v5: a transaction's consumed offsets, committed only if the transaction commits.

The group must have joined the transaction (AddOffsetsToTxn); the offsets wait in it, invisible to
OffsetFetch, and go to the group's committed offsets when EndTxn commits (an abort drops them). Membership is
not checked (a consumer with manual assignment sends generation -1). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
before v3.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey

from ..storage import Committed
from ..transactions import for_version
from .base import Handler

FENCED_SINCE = 3


def handle(ctx, body: dict) -> dict:
    coordinator = ctx.state.transactions
    topics = body.get("topics", ())
    meta, error = ctx.transaction(body["transactional_id"], body["producer_id"], body["producer_epoch"])
    if not error:
        offsets = {(t["name"], p["partition_index"]): Committed(p["committed_offset"],
                                                                p.get("committed_leader_epoch", -1),
                                                                p.get("committed_metadata"))
                   for t in topics for p in t.get("partitions", ())}
        error = coordinator.stage_offsets(meta, body["group_id"], offsets)
    error = for_version(error, ctx.api_version, FENCED_SINCE)
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": error}
                                           for p in t.get("partitions", ())]} for t in topics]}


HANDLER = Handler(ApiKey.TXN_OFFSET_COMMIT, 0, 5, handle)
