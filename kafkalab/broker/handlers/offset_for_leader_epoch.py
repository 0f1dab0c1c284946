"""OffsetForLeaderEpoch (23), v0-v4 (KIP-101, KIP-320): where a leader epoch ended, for log truncation checks.

This broker has led every partition since epoch 0 (Metadata says so), so the epoch history is one entry:
epoch 0 from offset 0. Any requested epoch >= 0 therefore ends at the log end offset, answered as epoch 0
(the largest epoch not above the one asked, as Kafka answers); -1, or a log that never held a record, gives
epoch -1 / offset -1. From v2 a consumer states the leader epoch it believes in: above ours is
UNKNOWN_LEADER_EPOCH, below it FENCED_LEADER_EPOCH. v0 has no epoch in the answer.
"""
from __future__ import annotations

from kafkalab.protocol import ErrorCode

from .base import Handler

NONE, UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 0, 3, 74, 75
TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
LEADER_EPOCH = 0


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    topics = []
    for t in body.get("topics", ()):
        topic = store.topic(t["topic"])
        if ctx.allowed("DESCRIBE", "TOPIC", t["topic"]):
            partitions = [_answer(topic, p) for p in t.get("partitions", ())]
        else:
            partitions = [_result(p["partition"], TOPIC_AUTHORIZATION_FAILED) for p in t.get("partitions", ())]
        topics.append({"topic": t["topic"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _answer(topic, p: dict) -> dict:
    index = p["partition"]
    if topic is None or not 0 <= index < len(topic.partitions):
        return _result(index, UNKNOWN_TOPIC_OR_PARTITION)
    current = p.get("current_leader_epoch", -1)
    if current > LEADER_EPOCH:
        return _result(index, UNKNOWN_LEADER_EPOCH)
    if 0 <= current < LEADER_EPOCH:
        return _result(index, FENCED_LEADER_EPOCH)
    log = topic.partitions[index].log
    if p["leader_epoch"] < 0 or log.next_offset == 0:
        return _result(index, NONE)
    return _result(index, NONE, LEADER_EPOCH, log.next_offset)


def _result(index: int, error: int, epoch: int = -1, end_offset: int = -1) -> dict:
    return {"partition": index, "error_code": error, "leader_epoch": epoch, "end_offset": end_offset}


HANDLER = Handler(23, 0, 4, handle)
