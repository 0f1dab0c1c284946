"""EndTxn (26), v0-v5: commit or abort a producer's transaction.

The coordinator writes a commit or abort marker (a control batch) to every partition of the transaction
before answering, so the partitions' last stable offsets have moved by the time the producer hears back. A
retried EndTxn of a transaction that already ended the same way succeeds. PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v2; v5 (KIP-890 transactions v2) echoes the producer id and epoch.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey

from ..transactions import for_version
from .base import Handler

FENCED_SINCE = 2


def handle(ctx, body: dict) -> dict:
    coordinator = ctx.state.transactions
    meta, error = ctx.transaction(body["transactional_id"], body["producer_id"], body["producer_epoch"])
    if not error:
        error = coordinator.end_txn(meta, body["committed"], ctx.now_ms)
    return {"throttle_time_ms": 0, "error_code": for_version(error, ctx.api_version, FENCED_SINCE),
            "producer_id": meta.producer_id if meta else -1, "producer_epoch": meta.producer_epoch if meta else -1}


HANDLER = Handler(ApiKey.END_TXN, 0, 5, handle)
