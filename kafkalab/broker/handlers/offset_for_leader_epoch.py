"""OffsetForLeaderEpoch (23), v0-v4 (KIP-101, KIP-320): where a leader epoch ended, for log truncation checks.

A partition's leader epoch is 0 until its leadership moves (``Broker.move_leader``, ElectLeaders, a
reassignment: :class:`~kafkalab.broker.controls.cluster.Cluster` bumps it, as Kafka does). Storage is shared
by the nodes and never truncated, so no epoch ever ended before the log's end: any requested epoch >= 0 is
answered with the largest epoch not above it (as Kafka answers) ending at the log end offset, and a client
checking its position never finds it truncated. -1, or a log that never held a record, gives
epoch -1 / offset -1. From v2 a consumer states the leader epoch it believes in: above the partition's is
UNKNOWN_LEADER_EPOCH, below it FENCED_LEADER_EPOCH. v0 has no epoch in the answer.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    store, cluster = ctx.state.store, ctx.state.cluster
    topics = []
    for t in body.get("topics", ()):
        name = t["topic"]
        topic = store.topic(name)
        if ctx.allowed("DESCRIBE", "TOPIC", name):
            partitions = [_answer(topic, p, cluster) for p in t.get("partitions", ())]
        else:
            partitions = [_result(p["partition"], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                          for p in t.get("partitions", ())]
        topics.append({"topic": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _answer(topic, p: dict, cluster) -> dict:
    index = p["partition"]
    if topic is None or not 0 <= index < len(topic.partitions):
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    epoch = cluster.leader(topic.name, index)[1]
    current = p.get("current_leader_epoch", -1)
    if current > epoch:
        return _result(index, ErrorCode.UNKNOWN_LEADER_EPOCH)
    if 0 <= current < epoch:
        return _result(index, ErrorCode.FENCED_LEADER_EPOCH)
    log = topic.partitions[index].log
    if p["leader_epoch"] < 0 or log.next_offset == 0:
        return _result(index, ErrorCode.NONE)
    return _result(index, ErrorCode.NONE, min(p["leader_epoch"], epoch), log.next_offset)


def _result(index: int, error: int, epoch: int = -1, end_offset: int = -1) -> dict:
    return {"partition": index, "error_code": int(error), "leader_epoch": epoch, "end_offset": end_offset}


HANDLER = Handler(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, handle)
