"""ListOffsets (2), v0-v11: earliest (-2), latest (-1), max timestamp (-3, KIP-734), or by timestamp.

By timestamp: the first offset whose record timestamp is >= the target, else offset -1 / timestamp -1.
read_committed (isolation level 1) caps "latest" at the last stable offset. v0 answers in
``old_style_offsets`` (a list holding the one offset).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    committed_only = body.get("isolation_level", 0) == 1
    topics = []
    for t in body.get("topics", ()):
        topic = store.topic(t["name"])
        if not ctx.allowed("DESCRIBE", "TOPIC", t["name"]):
            partitions = [{"partition_index": p["partition_index"], "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                           "timestamp": -1, "offset": -1, "leader_epoch": -1, "old_style_offsets": []}
                          for p in t.get("partitions", ())]
        else:
            partitions = [_answer(topic, p, committed_only, ctx.state.cluster) for p in t.get("partitions", ())]
        topics.append({"name": t["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _answer(topic, p: dict, committed_only: bool, cluster) -> dict:
    """One partition's offset, with the partition's current leader epoch (it moves with its leader)."""
    index = p["partition_index"]
    if topic is None or not 0 <= index < len(topic.partitions):
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "timestamp": -1,
                "offset": -1, "leader_epoch": -1, "old_style_offsets": []}
    offset, timestamp = _lookup(topic.partitions[index].log, p["timestamp"], committed_only)
    return {"partition_index": index, "error_code": ErrorCode.NONE, "timestamp": timestamp, "offset": offset,
            "leader_epoch": cluster.leader(topic.name, index)[1] if offset >= 0 else -1,
            "old_style_offsets": [offset] if offset >= 0 else []}


def _lookup(log, target: int, committed_only: bool) -> tuple[int, int]:
    if target == EARLIEST:
        return log.log_start_offset, -1
    if target == LATEST:
        return (log.last_stable_offset if committed_only else log.high_watermark), -1
    if target == MAX_TIMESTAMP:
        found = log.max_timestamp()
    else:
        found = log.offset_for_timestamp(target)
    return found if found is not None else (-1, -1)


HANDLER = Handler(ApiKey.LIST_OFFSETS, 0, 11, handle)
