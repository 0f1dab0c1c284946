"""DescribeLogDirs (35), v0-v5: every log directory and the size of each partition in it.

The first directory is ``data_dir`` (absolute), or ``memory:`` for an in-memory broker, and holds every
partition that AlterReplicaLogDirs has not moved to one of ``log_dirs`` (the broker's further directories).
``topics`` null means every partition; otherwise the listed ones that exist (unknown ones are left out, as
Kafka does). Sizes are the bytes of stored batches from the log start on; ``offset_lag`` is 0 (moves complete
at once, so there are no future replicas). v4+ reports the file system's total and usable bytes (-1 where the
directory is not on disk); v5 ``is_cordoned`` is false.
"""
from __future__ import annotations

import os
import shutil

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

MEMORY_DIR = "memory:"


def log_dirs(state) -> list[str]:
    """The broker's log directories, the main one first."""
    main = os.path.abspath(state.store.data_dir) if state.store.data_dir is not None else MEMORY_DIR
    return [main, *(d for d in state.config.log_dirs if d != main)]


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    if not ctx.allowed("DESCRIBE", "CLUSTER"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    wanted = body.get("topics")
    if wanted is None:
        selection = [(t, range(len(t.partitions))) for t in store.topics.values()]
    else:
        selection = [(store.topics[w["topic"]], w.get("partitions", ())) for w in wanted if w["topic"] in store.topics]
    dirs = log_dirs(ctx.state)
    placed: dict[str, dict[str, list[dict]]] = {d: {} for d in dirs}
    for topic, indexes in selection:
        for i in indexes:
            if 0 <= i < len(topic.partitions):
                where = ctx.state.replica_dirs.get((topic.name, i), dirs[0])
                placed[where].setdefault(topic.name, []).append(
                    {"partition_index": i, "partition_size": _size(topic.partitions[i].log), "offset_lag": 0,
                     "is_future_key": False})
    return {"throttle_time_ms": 0, "error_code": 0, "results": [
        {"error_code": 0, "log_dir": d, "topics": [{"name": n, "partitions": ps} for n, ps in placed[d].items()],
         **_usage(d), "is_cordoned": False} for d in dirs]}


def _usage(path: str) -> dict:
    if not os.path.isdir(path):
        return {"total_bytes": -1, "usable_bytes": -1}
    usage = shutil.disk_usage(path)
    return {"total_bytes": usage.total, "usable_bytes": usage.free}


def _size(log) -> int:
    return sum(e.size for e in log.entries[log.find(log.log_start_offset):])


HANDLER = Handler(ApiKey.DESCRIBE_LOG_DIRS, 0, 5, handle)
