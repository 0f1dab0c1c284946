"""DeleteRecords (21), v0-v2: move a partition's log start offset forward (the low watermark).

``offset`` -1 means the high watermark. An offset below -1 or past the high watermark is OFFSET_OUT_OF_RANGE;
one at or below the current log start changes nothing. Records before the new log start are gone for readers:
Fetch below it is OFFSET_OUT_OF_RANGE, ListOffsets earliest returns it, and the whole batches before it are
never served again (a batch straddling it still is, as in Kafka; consumers skip the earlier records).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

HIGH_WATERMARK = -1


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    topics = []
    for t in body.get("topics", ()):
        topic = store.topic(t["name"])
        if not ctx.allowed("DELETE", "TOPIC", t["name"]):
            partitions = [{"partition_index": p["partition_index"], "low_watermark": -1,
                           "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED} for p in t.get("partitions", ())]
        else:
            partitions = [_delete(topic, p) for p in t.get("partitions", ())]
        topics.append({"name": t["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _delete(topic, p: dict) -> dict:
    index, offset = p["partition_index"], p["offset"]
    if topic is None or not 0 <= index < len(topic.partitions):
        return {"partition_index": index, "low_watermark": -1, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    partition = topic.partitions[index]
    log = partition.log
    if offset == HIGH_WATERMARK:
        offset = log.high_watermark
    if offset < 0 or offset > log.high_watermark:
        return {"partition_index": index, "low_watermark": -1, "error_code": ErrorCode.OFFSET_OUT_OF_RANGE}
    return {"partition_index": index, "low_watermark": partition.delete_before(offset), "error_code": ErrorCode.NONE}


HANDLER = Handler(ApiKey.DELETE_RECORDS, 0, 2, handle)
