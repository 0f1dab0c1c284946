"""OffsetCommit (8), v0-v10: store committed offsets per group, topic and partition.

The group coordinator checks who commits first (:meth:`GroupCoordinator.commit_problem`): a member of a
classic group in its generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS while the group
waits for its assignment, FENCED_INSTANCE_ID), a KIP-848 member in its epoch (STALE_MEMBER_EPOCH), or a
"simple" commit (generation -1, no member: consumers that assign partitions themselves, and every v0 commit)
to a group without members. A refused commit answers the error for every partition. v10 names topics by id.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..storage import Committed
from .base import Handler


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    group = body["group_id"]
    refused = ctx.state.groups.commit_problem(ctx.now_ms, group, body.get("member_id") or "",
                                              body.get("group_instance_id"),
                                              body.get("generation_id_or_member_epoch", -1))
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
            if refused:
                error = refused
            elif topic is None or not 0 <= index < len(topic.partitions):
                by_id = topic is None and ctx.api_version >= 10
                error = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = ErrorCode.NONE
                store.commit(group, topic.name, index, Committed(p["committed_offset"],
                                                                 p.get("committed_leader_epoch", -1),
                                                                 p.get("committed_metadata"), ctx.now_ms))
            partitions.append({"partition_index": index, "error_code": error})
        topics.append({"name": t.get("name", ""), "topic_id": t.get("topic_id"), "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


HANDLER = Handler(ApiKey.OFFSET_COMMIT, 0, 10, handle)
