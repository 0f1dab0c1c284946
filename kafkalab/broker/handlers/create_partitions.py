"""CreatePartitions (37), v0-v3: grow a topic to ``count`` partitions.

Per topic: INVALID_REQUEST when named twice, UNKNOWN_TOPIC_OR_PARTITION when missing, INVALID_PARTITIONS when
the count does not grow the topic or exceeds ``max_partitions_per_topic``, INVALID_REPLICA_ASSIGNMENT when explicit assignments do not give exactly one
list per new partition, each naming this broker (the only one) once. ``validate_only`` checks without creating.
"""
from __future__ import annotations

from collections import Counter

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler
from .create_topics import partitions_above_limit


def handle(ctx, body: dict) -> dict:
    topics = body.get("topics", ())
    counts = Counter(t["name"] for t in topics)
    validate_only = body.get("validate_only", False)
    results, answered = [], set()
    for t in topics:
        if t["name"] in answered:
            continue
        answered.add(t["name"])
        if counts[t["name"]] > 1:
            error = (ErrorCode.INVALID_REQUEST, f"Topic {t['name']} appears more than once in the request.")
        else:
            error = _grow(ctx, t, validate_only)
        code, message = error or (ErrorCode.NONE, None)
        results.append({"name": t["name"], "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "results": results}


def _grow(ctx, t: dict, validate_only: bool) -> tuple[int, str] | None:
    if not ctx.allowed("ALTER", "TOPIC", t["name"]):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
    topic = ctx.state.store.topic(t["name"])
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t['name']}' does not exist."
    current, wanted = len(topic.partitions), t["count"]
    if wanted < current:
        return ErrorCode.INVALID_PARTITIONS, (f"Topic currently has {current} partitions, which is higher than "
                                              f"the requested {wanted}.")
    if wanted == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions."
    if wanted > ctx.state.config.max_partitions_per_topic:
        return ErrorCode.INVALID_PARTITIONS, partitions_above_limit(ctx, wanted)
    assignments = t.get("assignments")
    if assignments is not None:
        if len(assignments) != wanted - current:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (f"{len(assignments)} assignments given for "
                                                          f"{wanted - current} new partitions.")
        for a in assignments:
            if a.get("broker_ids") != [ctx.state.node_id]:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (f"Assignment {a.get('broker_ids')} is not possible: "
                                                              f"the only broker is {ctx.state.node_id}.")
    if not validate_only:
        ctx.state.add_partitions(topic, wanted)
    return None


HANDLER = Handler(ApiKey.CREATE_PARTITIONS, 0, 3, handle)
