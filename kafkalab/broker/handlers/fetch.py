"""Fetch (1), v0-v18: stored batch bytes served as they are, with long polling and fetch sessions.

For each partition: UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID from v13, where topics are named by id),
OFFSET_OUT_OF_RANGE outside [log start, log end], else whole batches from the one holding ``fetch_offset``,
within ``partition_max_bytes`` and the request's ``max_bytes`` - except that the first batch of the response
is sent even when larger (KIP-74), so a consumer can always make progress. read_uncommitted (isolation level
0) reads up to the high watermark; read_committed (1) stops at the last stable offset and lists the aborted
transactions the data overlaps (producer id, first offset), which the client uses to drop aborted records.
If fewer than ``min_bytes`` are ready and no partition has an error, the answer is a :class:`Wait`: the
server retries on every append until ``max_wait_ms`` passes. From v7 the broker keeps fetch sessions
(KIP-227, :mod:`..fetch_sessions`): incremental requests name only what changed, and incremental answers
carry only the partitions with news.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.quotas import CONSUMER_BYTE_RATE
from .base import Handler, Wait

READ_COMMITTED = 1
NO_LIMIT = 2**31 - 1
SESSIONS_SINCE, TOPIC_IDS_SINCE = 7, 13
MAX_SESSION_EPOCH = 2**31 - 1


def handle(ctx, body: dict) -> dict | Wait:
    min_bytes = body.get("min_bytes", 0)
    max_wait = body.get("max_wait_ms", 0)
    by_id = ctx.api_version >= TOPIC_IDS_SINCE
    topic_key = (lambda t: t.get("topic_id")) if by_id else (lambda t: t.get("topic"))
    session, incremental = None, False
    if ctx.api_version >= SESSIONS_SINCE:
        error, session, incremental = ctx.state.fetch_sessions.resolve(body.get("session_id", 0),
                                                                       body.get("session_epoch", -1))
        if error:
            return {"throttle_time_ms": 0, "error_code": error, "session_id": 0, "responses": []}
        if session is not None:
            session.update(body.get("topics", ()), body.get("forgotten_topics_data", ()) if incremental else (),
                           topic_key)
    if session is not None:
        targets = list(session.partitions.items())
    else:
        targets = [((topic_key(t), p["partition"]), p) for t in body.get("topics", ()) for p in t.get("partitions", ())]

    def attempt(now_ms: int, final: bool) -> dict | None:
        results, total, errors = _build(ctx, targets, body, by_id)
        if not (final or errors or total >= min_bytes):
            return None
        if session is not None:
            results = [(key, r) for key, r in results if session.changed(key, r) or not incremental]
            if incremental:
                session.next_epoch = session.next_epoch % MAX_SESSION_EPOCH + 1
        return {"throttle_time_ms": ctx.throttle(CONSUMER_BYTE_RATE, total), "error_code": ErrorCode.NONE,
                "session_id": session.session_id if session else 0, "responses": _by_topic(results, by_id)}

    response = attempt(ctx.now_ms, max_wait <= 0)
    return response if response is not None else Wait(max_wait, attempt)


def _build(ctx, targets, body: dict, by_id: bool) -> tuple[list, int, bool]:
    store = ctx.state.store
    budget = body.get("max_bytes", NO_LIMIT) if ctx.api_version >= 3 else NO_LIMIT
    committed_only = body.get("isolation_level", 0) == READ_COMMITTED
    total, errors, results = 0, False, []
    for key, p in targets:
        topic = store.by_id.get(key[0]) if by_id else store.topic(key[0])
        if topic is not None and not ctx.allowed("READ", "TOPIC", topic.name):
            results.append((key, _result(p["partition"], ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
            errors = True
            continue
        result, size = _partition(topic, p, by_id, budget - total, total == 0, committed_only)
        total += size
        errors = errors or result["error_code"] != ErrorCode.NONE
        results.append((key, result))
    return results, total, errors


def _by_topic(results, by_id: bool) -> list[dict]:
    topics: dict = {}
    for (topic, _), result in results:
        topics.setdefault(topic, []).append(result)
    return [{"topic_id": topic if by_id else None, "topic": "" if by_id else topic, "partitions": partitions}
            for topic, partitions in topics.items()]


def _partition(topic, p: dict, by_id: bool, budget: int, first: bool, committed_only: bool) -> tuple[dict, int]:
    index = p["partition"]
    if topic is None or not 0 <= index < len(topic.partitions):
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if by_id and topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return _result(index, unknown), 0
    log = topic.partitions[index].log
    offset = p["fetch_offset"]
    upto = log.last_stable_offset if committed_only else log.high_watermark
    if offset < log.log_start_offset or offset > log.next_offset:
        return _result(index, ErrorCode.OFFSET_OUT_OF_RANGE, log), 0
    limit = min(p.get("partition_max_bytes", NO_LIMIT), max(budget, 0))
    data = log.read(offset, limit, upto, at_least_one=first) if offset < upto else b""
    result = _result(index, ErrorCode.NONE, log, data)
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


HANDLER = Handler(ApiKey.FETCH, 0, 18, handle)
