"""DescribeLogDirs (35), v0-v5: the one log directory and the size of every partition in it.

The directory is ``data_dir`` (absolute), or ``memory:`` for an in-memory broker. ``topics`` null means every
partition; otherwise the listed ones that exist (unknown ones are left out, as Kafka does). Sizes are the bytes
of stored batches from the log start on; ``offset_lag`` is 0 (no future replicas). v4+ reports the file
system's total and usable bytes (-1 in memory); v5 ``is_cordoned`` is false.
"""
from __future__ import annotations

import os
import shutil

from kafkalab.protocol import ErrorCode

from .base import Handler

MEMORY_DIR = "memory:"


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    if not ctx.allowed("DESCRIBE", "CLUSTER"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    wanted = body.get("topics")
    if wanted is None:
        selection = [(t, range(len(t.partitions))) for t in store.topics.values()]
    else:
        selection = [(store.topics[w["topic"]], w.get("partitions", ())) for w in wanted if w["topic"] in store.topics]
    topics = []
    for topic, indexes in selection:
        partitions = [{"partition_index": i, "partition_size": _size(topic.partitions[i].log), "offset_lag": 0,
                       "is_future_key": False} for i in indexes if 0 <= i < len(topic.partitions)]
        if partitions:
            topics.append({"name": topic.name, "partitions": partitions})
    total = usable = -1
    if store.data_dir is not None:
        usage = shutil.disk_usage(store.data_dir)
        total, usable = usage.total, usage.free
    log_dir = os.path.abspath(store.data_dir) if store.data_dir is not None else MEMORY_DIR
    return {"throttle_time_ms": 0, "error_code": 0, "results": [
        {"error_code": 0, "log_dir": log_dir, "topics": topics, "total_bytes": total, "usable_bytes": usable,
         "is_cordoned": False}]}


def _size(log) -> int:
    return sum(e.size for e in log.entries[log.find(log.log_start_offset):])


HANDLER = Handler(35, 0, 5, handle)
