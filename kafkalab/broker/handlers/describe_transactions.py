"""DescribeTransactions (65), v0: the coordinator's view of transactional ids (state, producer, partitions).

An id the coordinator does not know answers TRANSACTIONAL_ID_NOT_FOUND.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler



def handle(ctx, body: dict) -> dict:
    txns = ctx.state.transactions.txns
    return {"throttle_time_ms": 0, "transaction_states": [_describe(ctx, txns.get(tid), tid)
                                                          for tid in body.get("transactional_ids", ())]}


def _describe(ctx, meta, transactional_id: str) -> dict:
    """Kafka's rules: DESCRIBE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; the
    partitions of topics the principal may not DESCRIBE are left out."""
    allowed = ctx.allowed("DESCRIBE", "TRANSACTIONAL_ID", transactional_id)
    if meta is None or not allowed:
        return {"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if not allowed else
                ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": transactional_id,
                "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                "producer_id": -1, "producer_epoch": -1, "topics": []}
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        if ctx.allowed("DESCRIBE", "TOPIC", topic):
            topics.setdefault(topic, []).append(partition)
    return {"error_code": ErrorCode.NONE, "transactional_id": transactional_id, "transaction_state": meta.state.label,
            "transaction_timeout_ms": meta.timeout_ms, "transaction_start_time_ms": meta.start_ms,
            "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}


HANDLER = Handler(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, handle)
