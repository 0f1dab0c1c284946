"""DescribeTopicPartitions (75), v0 (KIP-966): topics and partitions, paged by a cursor.

Topics (all when the list is empty) are answered in name order, from the cursor's topic on (its partitions from
the cursor's index), at most ``response_partition_limit`` partitions per response (capped at 2000, Kafka's
max.request.partition.size.limit). When the limit cuts a topic short, ``next_cursor`` names the first partition
left out; when it runs out exactly at a topic's end and more topics follow, the next topic's partition 0.
Unknown names get UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION if illegal). A cursor whose topic is not
among the requested ones makes the whole request INVALID_REQUEST.
"""
from __future__ import annotations

import uuid

from kafkalab.protocol import ApiKey, ErrorCode

from ..config import INTERNAL_TOPICS, topic_name_problem
from .base import Handler

TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
PARTITION_LIMIT = 2000
ZERO_UUID = uuid.UUID(int=0)
# AclOperation codes allowed on a topic without an authorizer: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
# DESCRIBE_CONFIGS, ALTER_CONFIGS
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    cursor = body.get("cursor")
    start_topic = cursor["topic_name"] if cursor else ""
    requested = [t["name"] for t in body.get("topics", ())]
    if cursor is not None and requested and start_topic not in requested:
        return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
            _error(name, ErrorCode.INVALID_REQUEST) for name in requested]}
    names = sorted({n for n in (requested or store.topics) if n >= start_topic})
    remaining = max(0, min(body.get("response_partition_limit", PARTITION_LIMIT), PARTITION_LIMIT))
    topics, next_cursor = [], None
    for name in names:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = store.topic(name)
        if not ctx.allowed("DESCRIBE", "TOPIC", name):
            if requested:                  # asked by name: say so; listing all: leave it out, as Kafka does
                topics.append(_error(name, TOPIC_AUTHORIZATION_FAILED))
            continue
        if topic is None:
            topics.append(_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_problem(name)
                                 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        first = cursor["partition_index"] if cursor and name == start_topic else 0
        chosen = topic.partitions[max(first, 0):max(first, 0) + remaining]
        topics.append(_describe(ctx, topic, chosen))
        remaining -= len(chosen)
        following = max(first, 0) + len(chosen)
        if following < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": following}
            break
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}


def _describe(ctx, topic, partitions) -> dict:
    cluster = ctx.state.cluster
    return {"error_code": ErrorCode.NONE, "name": topic.name, "topic_id": topic.topic_id,
            "is_internal": topic.name in INTERNAL_TOPICS,
            "topic_authorized_operations": TOPIC_OPERATIONS, "partitions": [
                {"error_code": ErrorCode.NONE, "partition_index": p.index, "leader_id": leader, "leader_epoch": epoch,
                 "replica_nodes": cluster.replicas(topic.name, p.index),
                 "isr_nodes": cluster.replicas(topic.name, p.index), "eligible_leader_replicas": [],
                 "last_known_elr": [], "offline_replicas": []}
                for p in partitions for leader, epoch in [cluster.leader(topic.name, p.index)]]}


def _error(name: str, code: int) -> dict:
    return {"error_code": code, "name": name, "topic_id": ZERO_UUID, "is_internal": False, "partitions": [],
            "topic_authorized_operations": -2147483648}


HANDLER = Handler(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, handle)
