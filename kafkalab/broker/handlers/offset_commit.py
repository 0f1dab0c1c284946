"""OffsetCommit (8), v0-v10: store committed offsets per group, topic and partition.

Group membership is not checked yet (consumer groups come with a later issue): commits from consumers that
assign partitions themselves (generation -1) and from members alike are stored. v10 names topics by id.
"""
from __future__ import annotations

from kafkalab.protocol import ErrorCode

from ..storage import Committed
from .base import Handler

NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 0, 3, 100


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    group = body["group_id"]
    topics = []
    group_denied = not ctx.allowed("READ", "GROUP", group)
    for t in body.get("topics", ()):
        topic = store.by_id.get(t.get("topic_id")) if ctx.api_version >= 10 else store.topic(t.get("name"))
        denied = (ErrorCode.GROUP_AUTHORIZATION_FAILED if group_denied else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                  if topic is not None and not ctx.allowed("READ", "TOPIC", topic.name) else None)
        if denied is not None:
            topics.append({"name": t.get("name", ""), "topic_id": t.get("topic_id"), "partitions": [
                {"partition_index": p["partition_index"], "error_code": denied} for p in t.get("partitions", ())]})
            continue
        partitions = []
        for p in t.get("partitions", ()):
            index = p["partition_index"]
            if topic is None or not 0 <= index < len(topic.partitions):
                error = UNKNOWN_TOPIC_ID if topic is None and ctx.api_version >= 10 else UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = NONE
                store.commit(group, topic.name, index, Committed(p["committed_offset"],
                                                                 p.get("committed_leader_epoch", -1),
                                                                 p.get("committed_metadata")))
            partitions.append({"partition_index": index, "error_code": error})
        topics.append({"name": t.get("name", ""), "topic_id": t.get("topic_id"), "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


HANDLER = Handler(8, 0, 10, handle)
