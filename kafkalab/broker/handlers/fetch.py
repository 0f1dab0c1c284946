"""Fetch (1), v0-v18: stored batch bytes served as they are, with long polling.

For each partition: UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID from v13, where topics are named by id),
OFFSET_OUT_OF_RANGE outside [log start, log end], else whole batches from the one holding ``fetch_offset``,
within ``partition_max_bytes`` and the request's ``max_bytes`` - except that the first batch of the response
is sent even when larger (KIP-74), so a consumer can always make progress. read_committed (isolation level 1)
stops at the last stable offset. If fewer than ``min_bytes`` are ready and no partition has an error, the
answer is a :class:`Wait`: the server retries on every append until ``max_wait_ms`` passes. Fetch sessions
(KIP-227) are not kept: session id 0 tells the client to send full requests.
"""
from __future__ import annotations

from .base import Handler, Wait

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 0, 1, 3, 100
READ_COMMITTED = 1
NO_LIMIT = 2**31 - 1


def handle(ctx, body: dict) -> dict | Wait:
    min_bytes = body.get("min_bytes", 0)
    max_wait = body.get("max_wait_ms", 0)

    def attempt(now_ms: int, final: bool) -> dict | None:
        response, total, errors = _build(ctx, body)
        return response if final or errors or total >= min_bytes else None

    response = attempt(ctx.now_ms, max_wait <= 0)
    return response if response is not None else Wait(max_wait, attempt)


def _build(ctx, body: dict) -> tuple[dict, int, bool]:
    store = ctx.state.store
    by_id = ctx.api_version >= 13
    budget = body.get("max_bytes", NO_LIMIT) if ctx.api_version >= 3 else NO_LIMIT
    committed_only = body.get("isolation_level", 0) == READ_COMMITTED
    total, errors, responses = 0, False, []
    for request_topic in body.get("topics", ()):
        topic = store.by_id.get(request_topic.get("topic_id")) if by_id else store.topic(request_topic.get("topic"))
        partitions = []
        for p in request_topic.get("partitions", ()):
            result, size = _partition(topic, p, by_id, budget - total, total == 0, committed_only)
            total += size
            errors = errors or result["error_code"] != NONE
            partitions.append(result)
        responses.append({"topic_id": request_topic.get("topic_id"), "topic": request_topic.get("topic", ""),
                          "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": NONE, "session_id": 0, "responses": responses}, total, errors


def _partition(topic, p: dict, by_id: bool, budget: int, first: bool, committed_only: bool) -> tuple[dict, int]:
    index = p["partition"]
    if topic is None or not 0 <= index < len(topic.partitions):
        return _result(index, UNKNOWN_TOPIC_ID if by_id and topic is None else UNKNOWN_TOPIC_OR_PARTITION), 0
    log = topic.partitions[index].log
    offset = p["fetch_offset"]
    upto = log.last_stable_offset if committed_only else log.high_watermark
    if offset < log.log_start_offset or offset > log.next_offset:
        return _result(index, OFFSET_OUT_OF_RANGE, log), 0
    limit = min(p.get("partition_max_bytes", NO_LIMIT), max(budget, 0))
    data = log.read(offset, limit, upto, at_least_one=first) if offset < upto else b""
    result = _result(index, NONE, log, data)
    if committed_only:
        result["aborted_transactions"] = [{"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                                          for txn in log.aborted_between(offset, upto)] if data else []
    return result, len(data)


def _result(index: int, error: int, log=None, records: bytes = b"") -> dict:
    return {"partition_index": index, "error_code": error,
            "high_watermark": log.high_watermark if log else -1,
            "last_stable_offset": log.last_stable_offset if log else -1,
            "log_start_offset": log.log_start_offset if log else -1,
            "aborted_transactions": None, "preferred_read_replica": -1, "records": records}


HANDLER = Handler(1, 0, 18, handle)
