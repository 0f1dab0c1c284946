"""AddPartitionsToTxn (24), v0-v5: partitions join a producer's transaction (starting it).

v0-v3 (clients) name one transaction; v4+ (brokers, KIP-890) batch several, each optionally ``verify_only``:
then nothing changes and each partition answers NONE if it already is in the ongoing transaction, else
INVALID_TXN_STATE. Errors are per partition: a wrong producer id or epoch applies to all of them; one unknown
partition gets UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED (nothing is added).
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey, ErrorCode

from ..transactions import TxnState, for_version
from .base import Handler

FENCED_SINCE, BATCHED_SINCE = 2, 4


def handle(ctx, body: dict) -> dict:
    if ctx.api_version < BATCHED_SINCE:
        results = _transaction(ctx, body.get("v3_and_below_transactional_id"), body.get("v3_and_below_producer_id"),
                               body.get("v3_and_below_producer_epoch"), body.get("v3_and_below_topics", ()), False)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": [
        {"transactional_id": t["transactional_id"],
         "topic_results": _transaction(ctx, t["transactional_id"], t["producer_id"], t["producer_epoch"],
                                       t.get("topics", ()), t.get("verify_only", False))}
        for t in body.get("transactions", ())]}


def _transaction(ctx, transactional_id, producer_id, epoch, topics, verify_only: bool) -> list[dict]:
    coordinator = ctx.state.transactions
    wanted = [(t["name"], p) for t in topics for p in t.get("partitions", ())]
    meta, error = ctx.transaction(transactional_id, producer_id, epoch)
    if error:
        errors = dict.fromkeys(wanted, for_version(error, ctx.api_version, FENCED_SINCE))
    elif verify_only:
        joined = meta.partitions if meta.state is TxnState.ONGOING else set()
        errors = {tp: ErrorCode.NONE if tp in joined else ErrorCode.INVALID_TXN_STATE for tp in wanted}
    else:
        denied = {tp for tp in wanted if not ctx.allowed("WRITE", "TOPIC", tp[0])}
        unknown = {tp for tp in wanted if ctx.state.store.partition(*tp) is None}
        if denied:
            errors = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in denied else
                      ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
        elif unknown:
            errors = {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else
                      ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
        else:
            errors = dict.fromkeys(wanted, coordinator.add_partitions(meta, set(wanted), ctx.now_ms))
    return _by_topic(errors)


def _by_topic(errors: dict[tuple[str, int], int]) -> list[dict]:
    topics: dict[str, list[dict]] = {}
    for (topic, partition), error in errors.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": error})
    return [{"name": name, "results_by_partition": partitions} for name, partitions in topics.items()]


HANDLER = Handler(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, handle)
