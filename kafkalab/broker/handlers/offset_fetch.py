"""OffsetFetch (9), v0-v10: committed offsets, -1 where none was committed.

v0-v7 ask for one group (null topics from v2: every partition the group committed); v8+ batch several
groups (KIP-709); v10 names topics by id. With ``require_stable`` (v7+, KIP-447) a partition whose offset an
open transaction is still committing answers UNSTABLE_OFFSET_COMMIT, so the consumer retries rather than
start from an offset that is about to change.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    if ctx.api_version >= 8:
        groups = [_group(ctx, g["group_id"], g.get("topics")) for g in body.get("groups", ())]
        if body.get("require_stable"):
            for answer in groups:
                _mark_unstable(ctx, answer)
        return {"throttle_time_ms": 0, "groups": groups}
    answer = _group(ctx, body["group_id"], body.get("topics"))
    if body.get("require_stable"):
        _mark_unstable(ctx, answer)
    return {"throttle_time_ms": 0, "topics": answer["topics"], "error_code": answer["error_code"]}


def _group(ctx, group: str, topics) -> dict:
    store = ctx.state.store
    if not ctx.allowed("DESCRIBE", "GROUP", group):
        return {"group_id": group, "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if topics is None:
        names: dict[str, list[int]] = {}
        for (topic, index) in sorted(store.committed.get(group, {})):
            if ctx.allowed("DESCRIBE", "TOPIC", topic):          # all topics: Kafka leaves out hidden ones
                names.setdefault(topic, []).append(index)
        topics = [{"name": n, "topic_id": store.topics[n].topic_id if n in store.topics else None,
                   "partition_indexes": idx} for n, idx in names.items()]
    out = []
    for t in topics:
        topic = store.by_id.get(t.get("topic_id")) if ctx.api_version >= 10 else store.topic(t.get("name"))
        name = topic.name if topic is not None else t.get("name", "")
        allowed = ctx.allowed("DESCRIBE", "TOPIC", name)
        out.append({"name": name, "topic_id": t.get("topic_id"), "partitions": [
            _partition(store, group, name, i) if allowed else _denied(i) for i in t.get("partition_indexes", ())]})
    return {"group_id": group, "topics": out, "error_code": ErrorCode.NONE}


def _mark_unstable(ctx, answer: dict) -> None:
    pending = ctx.state.transactions.pending_offsets(answer["group_id"])
    for t in answer["topics"] if pending else ():
        for p in t["partitions"]:
            if (t["name"], p["partition_index"]) in pending:
                p["error_code"] = ErrorCode.UNSTABLE_OFFSET_COMMIT


def _denied(index: int) -> dict:
    return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
            "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def _partition(store, group: str, topic: str, index: int) -> dict:
    committed = store.fetch_committed(group, topic, index)
    if committed is None:
        return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                "error_code": ErrorCode.NONE}
    return {"partition_index": index, "committed_offset": committed.offset,
            "committed_leader_epoch": committed.leader_epoch, "metadata": committed.metadata or "",
            "error_code": ErrorCode.NONE}


HANDLER = Handler(ApiKey.OFFSET_FETCH, 0, 10, handle)
