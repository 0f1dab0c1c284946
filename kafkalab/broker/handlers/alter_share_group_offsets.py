"""AlterShareGroupOffsets (91), v0 (KIP-932): set share-partitions' start offsets (SPSO), forgetting their
delivery state. Only while the group has no members (NON_EMPTY_GROUP otherwise); an unknown group is
GROUP_ID_NOT_FOUND. The offset is clamped to the partition's log, as Kafka's reset does.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..share.groups import offsets_request
from .base import Handler


def handle(ctx, body: dict) -> dict:
    group, answer = offsets_request(ctx.state.share_groups, body)
    if answer["error_code"]:
        return answer
    for t in body.get("topics", ()):
        topic = ctx.state.store.topic(t.get("topic_name"))
        partitions = []
        for p in t.get("partitions", ()):
            index = p.get("partition_index")
            if not ctx.allowed("READ", "TOPIC", t.get("topic_name") or ""):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= index < len(topic.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                log = topic.partitions[index].log
                start = min(max(p.get("start_offset"), log.log_start_offset), log.high_watermark)
                group.partition(topic.name, index, start).reset(start)
                code = ErrorCode.NONE
            partitions.append({"partition_index": index, "error_code": int(code), "error_message": None})
        answer["responses"].append({"topic_name": t.get("topic_name"),
                                    "topic_id": topic.topic_id if topic else None, "partitions": partitions})
    return answer


HANDLER = Handler(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, handle)
