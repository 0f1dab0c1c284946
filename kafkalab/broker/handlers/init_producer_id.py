"""InitProducerId (22), v0-v6: producer ids for idempotent producers.

A new producer gets a fresh id at epoch 0. From v3 a producer may present its current id and epoch to have
the epoch bumped (KIP-360) instead of getting a new id. Transactional ids get an id too; transaction state
(coordinator, markers) is a later issue.
"""
from __future__ import annotations

from .base import Handler

MAX_EPOCH = 32767


def handle(ctx, body: dict) -> dict:
    pid, epoch = body.get("producer_id", -1), body.get("producer_epoch", -1)
    if pid >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        new_pid, new_epoch = pid, epoch + 1
    else:
        new_pid, new_epoch = ctx.state.allocate_producer_id(), 0
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": new_pid, "producer_epoch": new_epoch,
            "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}


HANDLER = Handler(22, 0, 6, handle)
