"""ListTransactions (66), v0-v2: transactional ids, filtered by state, producer id, age (v1, KIP-994: running
longer than ``duration_filter`` ms) and a regular expression on the id (v2, KIP-1152).

State filters the broker does not know come back in ``unknown_state_filters``.
"""
from __future__ import annotations

import re

from kafkalab.protocol import ApiKey, ErrorCode

from ..transactions import TxnState
from .base import Handler

LABELS = {state.label for state in TxnState}


def handle(ctx, body: dict) -> dict:
    states = body.get("state_filters") or []
    pids = set(body.get("producer_id_filters") or ())
    duration = body.get("duration_filter", -1)
    try:
        pattern = re.compile(body["transactional_id_pattern"]) if body.get("transactional_id_pattern") else None
    except re.error:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION, "unknown_state_filters": [],
                "transaction_states": []}
    found = [meta for meta in ctx.state.transactions.txns.values()
             if (not states or meta.state.label in states) and (not pids or meta.producer_id in pids)
             and (duration < 0 or (meta.start_ms >= 0 and ctx.now_ms - meta.start_ms > duration))
             and (pattern is None or pattern.fullmatch(meta.transactional_id))
             and ctx.allowed("DESCRIBE", "TRANSACTIONAL_ID", meta.transactional_id)]   # Kafka lists only these
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "unknown_state_filters": [s for s in states if s not in LABELS],
            "transaction_states": [{"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                                    "transaction_state": m.state.label} for m in found]}


HANDLER = Handler(ApiKey.LIST_TRANSACTIONS, 0, 2, handle)
