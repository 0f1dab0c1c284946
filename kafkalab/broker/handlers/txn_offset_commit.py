"""TxnOffsetCommit (28), v0-v5: a transaction's consumed offsets, committed only if the transaction commits.

The group must have joined the transaction (AddOffsetsToTxn); the offsets wait in it, invisible to
OffsetFetch, and go to the group's committed offsets when EndTxn commits (an abort drops them). From v3 the
request names the consumer's member and generation (KIP-447): the group coordinator checks them as it checks an
OffsetCommit (:meth:`GroupCoordinator.commit_problem`), so a member fenced by a rebalance cannot commit through a
transaction either. As in Kafka, a request naming no member and generation -1 (before v3 always; from v3 a
consumer with manual assignment) is not checked. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v3.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey, ErrorCode

from ..storage import Committed
from ..transactions import for_version
from .base import Handler

FENCED_SINCE = 3


def handle(ctx, body: dict) -> dict:
    coordinator = ctx.state.transactions
    topics = body.get("topics", ())
    meta, error = ctx.transaction(body["transactional_id"], body["producer_id"], body["producer_epoch"])
    if not error and not ctx.allowed("READ", "GROUP", body["group_id"]):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not error:
        error = member_problem(ctx, body)
    denied = {t["name"] for t in topics if not ctx.allowed("READ", "TOPIC", t["name"])}
    if denied and not error:
        return {"throttle_time_ms": 0, "topics": [
            {"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED
                 if t["name"] in denied else ErrorCode.OPERATION_NOT_ATTEMPTED} for p in t.get("partitions", ())]}
            for t in topics]}
    if not error:
        offsets = {(t["name"], p["partition_index"]): Committed(p["committed_offset"],
                                                                p.get("committed_leader_epoch", -1),
                                                                p.get("committed_metadata"))
                   for t in topics for p in t.get("partitions", ())}
        error = coordinator.stage_offsets(meta, body["group_id"], offsets, ctx.now_ms)
    error = for_version(error, ctx.api_version, FENCED_SINCE)
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": error}
                                           for p in t.get("partitions", ())]} for t in topics]}


def member_problem(ctx, body: dict) -> int:
    """Why the consumer named in the request may not commit now, or NONE (nobody named: nothing to check)."""
    member_id, generation = body.get("member_id") or "", body.get("generation_id", -1)
    if not member_id and generation < 0:
        return ErrorCode.NONE
    return ctx.state.groups.commit_problem(ctx.now_ms, body["group_id"], member_id, body.get("group_instance_id"),
                                           generation)


HANDLER = Handler(ApiKey.TXN_OFFSET_COMMIT, 0, 5, handle)
