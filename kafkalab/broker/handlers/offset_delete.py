"""OffsetDelete (47), v0: forget a group's committed offsets for some partitions (KIP-496).

Offsets of topics the group's current members subscribe to stay (GROUP_SUBSCRIBED_TO_TOPIC); unknown topics
or partitions answer ErrorCode.UNKNOWN_TOPIC_OR_PARTITION; an unknown group GROUP_ID_NOT_FOUND.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    if not ctx.allowed("DELETE", "GROUP", body["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
    asked, known, denied = [], [], {}
    for t in body.get("topics") or ():
        indexes = [p["partition_index"] for p in t.get("partitions") or ()]
        asked.append((t["name"], indexes))
        if ctx.allowed("READ", "TOPIC", t["name"]):
            known.append((t["name"], [i for i in indexes if store.partition(t["name"], i) is not None]))
        else:
            denied.update(((t["name"], i), ErrorCode.TOPIC_AUTHORIZATION_FAILED) for i in indexes)
    error, results = ctx.state.groups.delete_offsets(ctx.now_ms, body["group_id"], known)
    results = {**results, **denied}
    topics = [] if error else [
        {"name": name, "partitions": [{"partition_index": i,
                                       "error_code": results.get((name, i), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
                                      for i in indexes]} for name, indexes in asked]
    return {"error_code": error, "throttle_time_ms": 0, "topics": topics}


HANDLER = Handler(ApiKey.OFFSET_DELETE, 0, 0, handle)
