"""ShareFetch (78), v0-v2 (KIP-932): acknowledge what was delivered, then acquire records for one member.

The member's share session (epoch 0 opens it with the request's partitions, later epochs add to it and drop
``forgotten_topics_data``, -1 closes it after applying acknowledgements) names the partitions. Piggybacked
acknowledgement batches are applied first (``acknowledge_error_code``). Then, per partition, up to
``max_records`` available offsets up to the high watermark are acquired for the member under a lock of
``acquisition_lock_timeout_ms``, and the batches holding them are returned with ``acquired_records`` ranges
(offset, delivery count). With nothing to hand out, the request long-polls like Fetch until ``max_wait_ms``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..share.groups import LOCK_MS
from .base import Handler, Wait

CLOSE, OPEN = -1, 0
DEFAULT_MAX_RECORDS, FETCH_BYTES = 500, 1 << 20


def handle(ctx, body: dict) -> dict | Wait:
    group = ctx.state.share_groups.group(body.get("group_id"))
    member = body.get("member_id")
    epoch = body.get("share_session_epoch", OPEN)
    if group is None or not group.knows(member) or (epoch == OPEN and member not in group.members):
        return _top(ErrorCode.UNKNOWN_MEMBER_ID)
    if epoch > OPEN and member not in group.sessions:
        return _top(ErrorCode.SHARE_SESSION_NOT_FOUND)
    acks = acknowledge(ctx, group, member, body.get("topics", ()))
    named = {(t.get("topic_id"), p["partition_index"]) for t in body.get("topics", ()) for p in t.get("partitions", ())}
    if epoch == CLOSE:
        group.close_session(member)
        return _answer(ctx, {k: _partition(k[1], ack=code) for k, code in acks.items()})
    if epoch == OPEN:
        group.sessions[member] = set()
    session = group.sessions[member]
    session |= named
    session -= {(t.get("topic_id"), p) for t in body.get("forgotten_topics_data", ()) for p in t.get("partitions", ())}
    max_records = body.get("max_records") or DEFAULT_MAX_RECORDS

    def attempt(now_ms: int, final: bool) -> dict | None:
        results = {key: _partition(key[1], ack=code) for key, code in acks.items()}
        delivered = False
        for key in sorted(session, key=str):
            result = results.setdefault(key, _partition(key[1]))
            delivered |= _acquire(ctx, group, member, key, result, max_records, now_ms)
        return _answer(ctx, results) if delivered or final or acks else None
    first = attempt(ctx.now_ms, body.get("max_wait_ms", 0) <= 0)
    return first if first is not None else Wait(body["max_wait_ms"], attempt)


def acknowledge(ctx, group, member: str, topics) -> dict[tuple, int]:
    """Apply acknowledgement batches; {(topic id, partition): error code} for the partitions that had any."""
    by_id = ctx.state.store.by_id
    codes: dict[tuple, int] = {}
    for t in topics:
        topic = by_id.get(t.get("topic_id"))
        for p in t.get("partitions", ()):
            batches = p.get("acknowledgement_batches") or ()
            if not batches:
                continue
            key = (t.get("topic_id"), p["partition_index"])
            if topic is not None and not ctx.allowed("READ", "TOPIC", topic.name):
                codes[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            state = group.partitions.get((topic.name, key[1])) if topic is not None else None
            code = ErrorCode.NONE if state is not None else ErrorCode.INVALID_RECORD_STATE
            for b in batches:
                if state is not None:
                    code = state.acknowledge(member, b["first_offset"], b["last_offset"],
                                             list(b["acknowledge_types"])) or code
            codes[key] = code
    return codes


def _acquire(ctx, group, member, key, result: dict, max_records: int, now_ms: int) -> bool:
    topic = ctx.state.store.by_id.get(key[0])
    if topic is None or not 0 <= key[1] < len(topic.partitions):
        result["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return False
    if not ctx.allowed("READ", "TOPIC", topic.name):
        result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return False
    log = topic.partitions[key[1]].log
    state = group.partition(topic.name, key[1], log.log_start_offset)
    ranges = state.acquire(member, log.high_watermark, max_records, now_ms, LOCK_MS)
    if not ranges:
        return False
    result["records"] = log.read(ranges[0][0], FETCH_BYTES, ranges[-1][1] + 1, at_least_one=True)
    result["acquired_records"] = [{"first_offset": f, "last_offset": last, "delivery_count": n}
                                  for f, last, n in ranges]
    return True


def _partition(index: int, ack: int = ErrorCode.NONE) -> dict:
    return {"partition_index": index, "error_code": ErrorCode.NONE, "error_message": None,
            "acknowledge_error_code": int(ack), "acknowledge_error_message": None,
            "current_leader": {"leader_id": -1, "leader_epoch": -1}, "records": None, "acquired_records": []}


def _answer(ctx, results: dict) -> dict:
    by_topic: dict = {}
    for (topic_id, _), result in results.items():
        by_topic.setdefault(topic_id, []).append(result)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "acquisition_lock_timeout_ms": LOCK_MS, "node_endpoints": [],
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]}


def _top(code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": None,
            "acquisition_lock_timeout_ms": LOCK_MS, "responses": [], "node_endpoints": []}


HANDLER = Handler(ApiKey.SHARE_FETCH, 0, 2, handle)
