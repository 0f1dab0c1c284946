"""CreateTopics (19), v0-v7, with Kafka's validation and error codes.

INVALID_TOPIC_EXCEPTION (17) for illegal names, TOPIC_ALREADY_EXISTS (36), INVALID_PARTITIONS (37) for a
partition count of 0 or below -1, INVALID_REPLICATION_FACTOR (38) above the one broker there is,
INVALID_REQUEST (42) for a name given twice or assignments together with counts. -1 means the broker default
(v4+, KIP-464). ``validate_only`` checks without creating. v5+ echoes the topic's configs; v7 its id.
"""
from __future__ import annotations

import uuid
from collections import Counter

from ..config import TOPIC_CONFIG_DEFAULTS, topic_name_problem
from .base import Handler

NONE, INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS = 0, 17, 36, 37
INVALID_REPLICATION_FACTOR, INVALID_REQUEST = 38, 42
DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG = 5, 1


def handle(ctx, body: dict) -> dict:
    counts = Counter(t["name"] for t in body.get("topics", ()))
    results = [_create(ctx, t, counts[t["name"]] > 1, body.get("validate_only", False))
               for t in body.get("topics", ())]
    return {"throttle_time_ms": 0, "topics": results}


def _problem(ctx, t: dict, duplicated: bool) -> tuple[int, str] | None:
    name = t["name"]
    if duplicated:
        return INVALID_REQUEST, f"Create topics request from client contains a duplicate topic name: {name}"
    problem = topic_name_problem(name)
    if problem:
        return INVALID_TOPIC_EXCEPTION, problem
    if name in ctx.state.store.topics:
        return TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
    count, factor = t.get("num_partitions", -1), t.get("replication_factor", -1)
    if t.get("assignments"):
        if count != -1 or factor != -1:
            return INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments were set."
        return None
    if count == 0 or count < -1:
        return INVALID_PARTITIONS, "Number of partitions must be larger than 0."
    if factor == 0 or factor < -1:
        return INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
    if factor > 1:
        return INVALID_REPLICATION_FACTOR, f"Replication factor: {factor} larger than available brokers: 1."
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
    return {"name": t["name"], "topic_id": topic_id, "error_code": NONE, "error_message": None,
            "num_partitions": count, "replication_factor": 1, "configs": _configs(ctx, configs)}


def _configs(ctx, configs: dict) -> list[dict]:
    out = []
    for name in sorted(set(TOPIC_CONFIG_DEFAULTS) | set(configs)):
        value = configs.get(name, ctx.state.config.topic_config_default(name))
        out.append({"name": name, "value": value, "read_only": False, "is_sensitive": False,
                    "config_source": DYNAMIC_TOPIC_CONFIG if name in configs else DEFAULT_CONFIG})
    return out


HANDLER = Handler(19, 0, 7, handle)
