"""DescribeShareGroupOffsets (90), v0-v1 (KIP-932): each share-partition's start offset (SPSO) and lag.

Partitions the group never fetched have no start offset (-1). A null topic list means every partition the group
has state for. v1 adds the lag: records from the SPSO to the high watermark not yet done.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

UNKNOWN = -1


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0, "groups": [_group(ctx, g) for g in body.get("groups", ())]}


def _group(ctx, item: dict) -> dict:
    group = ctx.state.share_groups.group(item.get("group_id"))
    store = ctx.state.store
    if not ctx.allowed("DESCRIBE", "GROUP", item.get("group_id") or ""):
        return {"group_id": item.get("group_id"), "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": None}
    wanted = item.get("topics")
    if wanted is None:
        names = sorted({t for t, _ in group.partitions}) if group else []
        wanted = [{"topic_name": t, "partitions": sorted(p for n, p in group.partitions if n == t)} for t in names]
    topics = []
    for t in wanted:
        topic = store.topic(t.get("topic_name"))
        partitions = []
        for index in t.get("partitions", ()):
            state = group.partitions.get((t.get("topic_name"), index)) if group else None
            if not ctx.allowed("DESCRIBE", "TOPIC", t.get("topic_name") or ""):
                code, start, lag = ErrorCode.TOPIC_AUTHORIZATION_FAILED, UNKNOWN, UNKNOWN
            elif topic is None or not 0 <= index < len(topic.partitions):
                code, start, lag = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN, UNKNOWN
            elif state is None:
                code, start, lag = ErrorCode.NONE, UNKNOWN, UNKNOWN
            else:
                done = sum(1 for o in range(state.spso, topic.partitions[index].log.high_watermark)
                           if state.delivery_state(o)[0] == "done")
                code, start = ErrorCode.NONE, state.spso
                lag = topic.partitions[index].log.high_watermark - state.spso - done
            partitions.append({"partition_index": index, "start_offset": start, "leader_epoch": 0, "lag": lag,
                               "error_code": int(code), "error_message": None})
        topics.append({"topic_name": t.get("topic_name"), "topic_id": topic.topic_id if topic else None,
                       "partitions": partitions})
    return {"group_id": item.get("group_id"), "topics": topics, "error_code": ErrorCode.NONE, "error_message": None}


HANDLER = Handler(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, handle)
