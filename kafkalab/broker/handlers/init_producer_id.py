"""InitProducerId (22), v0-v6: producer ids for idempotent and transactional producers.

Without a transactional id a new producer gets a fresh id at epoch 0, and from v3 a producer may present its
current id and epoch to have the epoch bumped (KIP-360) instead of getting a new id. With a transactional id
the transaction coordinator answers: the id's producer id with the next epoch (which fences older instances),
after aborting a transaction the previous instance left open. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
before v4. v6's two-phase-commit flags (KIP-939) are not supported: ``ongoing_txn_*`` stay -1.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey, ErrorCode

from ..transactions import for_version
from ..transactions.machine import MAX_EPOCH
from .base import Handler

FENCED_SINCE = 4


def handle(ctx, body: dict) -> dict:
    pid, epoch = body.get("producer_id", -1), body.get("producer_epoch", -1)
    transactional_id = body.get("transactional_id")
    denied = _authorization_error(ctx, transactional_id)
    if denied:
        error, new_pid, new_epoch = denied, -1, -1
    elif transactional_id is not None:
        error, new_pid, new_epoch = ctx.state.transactions.init_producer_id(
            transactional_id, body.get("transaction_timeout_ms", -1), pid, epoch, ctx.now_ms)
        error = for_version(error, ctx.api_version, FENCED_SINCE)
    elif pid >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        error, new_pid, new_epoch = ErrorCode.NONE, pid, epoch + 1
    else:
        error, new_pid, new_epoch = ErrorCode.NONE, ctx.state.allocate_producer_id(), 0
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": new_pid, "producer_epoch": new_epoch,
            "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}


def _authorization_error(ctx, transactional_id: str | None) -> int:
    """WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the cluster (KIP-679: or WRITE on any
    topic, which this broker approximates by WRITE on the wildcard topic)."""
    if transactional_id is not None:
        return 0 if ctx.allowed("WRITE", "TRANSACTIONAL_ID", transactional_id) else \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.allowed("IDEMPOTENT_WRITE", "CLUSTER") or ctx.allowed("WRITE", "TOPIC", "*"):
        return 0
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


HANDLER = Handler(ApiKey.INIT_PRODUCER_ID, 0, 6, handle)
