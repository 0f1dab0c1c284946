"""CreateTopics (19), v0-v7, with Kafka's validation and error codes.

INVALID_TOPIC_EXCEPTION (17) for illegal names, TOPIC_ALREADY_EXISTS (36), INVALID_PARTITIONS (37) for a
partition count of 0, below -1 or above ``max_partitions_per_topic``, INVALID_REPLICATION_FACTOR (38) above the one broker there is,
INVALID_REQUEST (42) for a name given twice, assignments together with counts or a null config value,
INVALID_CONFIG (40) for an unknown or invalid topic config. -1 means the broker default (v4+, KIP-464).
``validate_only`` checks without creating. v5+ echoes the topic's configs as DescribeConfigs reports them; v7
its id.
"""
from __future__ import annotations

import uuid
from collections import Counter

from kafkalab.protocol import ApiKey, ErrorCode

from ..config import topic_collision, topic_name_problem
from ..configs import TOPIC_CONFIGS
from .base import Handler


def handle(ctx, body: dict) -> dict:
    counts = Counter(t["name"] for t in body.get("topics", ()))
    results = [_create(ctx, t, counts[t["name"]] > 1, body.get("validate_only", False))
               for t in body.get("topics", ())]
    return {"throttle_time_ms": 0, "topics": results}


def _problem(ctx, t: dict, duplicated: bool) -> tuple[int, str] | None:
    name = t["name"]
    if duplicated:
        return ErrorCode.INVALID_REQUEST, f"Create topics request from client contains a duplicate topic name: {name}"
    if not (ctx.allowed("CREATE", "CLUSTER") or ctx.allowed("CREATE", "TOPIC", name)):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
    problem = topic_name_problem(name)
    if problem:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, problem
    if name in ctx.state.store.topics:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
    collision = topic_collision(name, ctx.state.store.topics)
    if collision:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, collision
    count, factor = t.get("num_partitions", -1), t.get("replication_factor", -1)
    if len(t.get("assignments") or ()) > ctx.state.config.max_partitions_per_topic:
        return ErrorCode.INVALID_PARTITIONS, partitions_above_limit(ctx, len(t["assignments"]))
    if t.get("assignments"):
        if count != -1 or factor != -1:
            return ErrorCode.INVALID_REQUEST, ("Both numPartitions or replicationFactor and replicasAssignments "
                                               "were set.")
        return _config_problem(t.get("configs") or ())
    if count == 0 or count < -1:
        return ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
    if count > ctx.state.config.max_partitions_per_topic:
        return ErrorCode.INVALID_PARTITIONS, partitions_above_limit(ctx, count)
    if factor == 0 or factor < -1:
        return ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
    if factor > 1:
        return ErrorCode.INVALID_REPLICATION_FACTOR, f"Replication factor: {factor} larger than available brokers: 1."
    return _config_problem(t.get("configs") or ())


def partitions_above_limit(ctx, count: int) -> str:
    return f"{count} partitions are more than this broker's limit of {ctx.state.config.max_partitions_per_topic}."


def _config_problem(configs) -> tuple[int, str] | None:
    for c in configs:
        definition = TOPIC_CONFIGS.get(c["name"])
        if c.get("value") is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for topic config {c['name']}."
        if definition is None:
            return ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {c['name']}"
        problem = definition.problem(c["value"])
        if problem:
            return ErrorCode.INVALID_CONFIG, f"Invalid value {c['value']} for configuration {c['name']}: {problem}"
    return None


def _create(ctx, t: dict, duplicated: bool, validate_only: bool) -> dict:
    problem = _problem(ctx, t, duplicated)
    if problem:
        return {"name": t["name"], "topic_id": uuid.UUID(int=0), "error_code": problem[0], "error_message": problem[1],
                "num_partitions": -1, "replication_factor": -1, "configs": None}
    count = len(t["assignments"]) if t.get("assignments") else t.get("num_partitions", -1)
    if count == -1:
        count = ctx.state.config.default_partitions
    configs = {c["name"]: c["value"] for c in t.get("configs", ()) if c.get("value") is not None}
    topic_id = uuid.UUID(int=0)
    if not validate_only:
        topic_id = ctx.state.create_topic(t["name"], count, configs).topic_id
    return {"name": t["name"], "topic_id": topic_id, "error_code": ErrorCode.NONE, "error_message": None,
            "num_partitions": count, "replication_factor": 1, "configs": _configs(ctx, configs)}


def _configs(ctx, configs: dict) -> list[dict]:
    layers = ctx.state.configs
    return [{"name": e.name, "value": e.value, "read_only": False, "is_sensitive": False, "config_source": e.source}
            for e in (layers.topic_entry(n, configs) for n in sorted(set(TOPIC_CONFIGS) | set(configs)))]


HANDLER = Handler(ApiKey.CREATE_TOPICS, 0, 7, handle)
