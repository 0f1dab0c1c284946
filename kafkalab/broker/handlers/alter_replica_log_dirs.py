"""AlterReplicaLogDirs (34), v0-v2 (KIP-113): move partitions' replicas to another of the broker's log dirs.

The path must be one of the directories DescribeLogDirs lists (the main one or a ``log_dirs`` entry), else
LOG_DIR_NOT_FOUND; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION. The move completes at once (the nodes
share one log), so the next DescribeLogDirs lists the partition under its new directory. Needs ALTER on the
cluster (CLUSTER_AUTHORIZATION_FAILED on every partition otherwise, as Kafka answers).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler
from .describe_log_dirs import log_dirs


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    allowed = ctx.allowed("ALTER", "CLUSTER")
    known = log_dirs(state)
    results: dict[str, list[dict]] = {}
    for d in body.get("dirs", ()):
        path = d.get("path")
        for t in d.get("topics", ()):
            name = t.get("name")
            topic = state.store.topic(name)
            for index in t.get("partitions", ()):
                if not allowed:
                    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif topic is None or not 0 <= index < len(topic.partitions):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif path not in known:
                    code = ErrorCode.LOG_DIR_NOT_FOUND
                else:
                    state.replica_dirs[(name, index)] = path
                    code = ErrorCode.NONE
                results.setdefault(name, []).append({"partition_index": index, "error_code": int(code)})
    return {"throttle_time_ms": 0, "results": [{"topic_name": n, "partitions": ps} for n, ps in results.items()]}


HANDLER = Handler(ApiKey.ALTER_REPLICA_LOG_DIRS, 0, 2, handle)
