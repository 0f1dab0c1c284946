"""Metadata (3), v0-v13: the cluster's nodes, its controller, and each partition's leader and leader epoch
(one node leads everything unless the broker runs several, ``Broker(nodes=3)``).

Topics asked for by name that do not exist are created when both the broker (``auto_create_topics``) and,
from v4, the request (``allow_auto_topic_creation``) allow it, at most ``max_auto_created_topics_per_request``
per request (the rest get UNKNOWN_TOPIC_OR_PARTITION, which clients retry). v10+ may ask by topic id; v0 with an
empty list and v1+ with a null list mean "all topics". The coordinators' own topics are listed as internal.

Authorization (KafkaApis' rules): "all topics" lists only those the principal may DESCRIBE; a topic asked by
name without DESCRIBE, or to be created without CREATE (on the cluster or the topic), is
TOPIC_AUTHORIZATION_FAILED. v8+ may ask for the authorized-operations bit fields (cluster ones up to v10).
"""
from __future__ import annotations

import uuid

from kafkalab.protocol import ApiKey, ErrorCode

from ..config import INTERNAL_TOPICS, topic_collision, topic_name_problem
from ..security.authorizer import OMITTED_OPERATIONS
from .base import Handler

ZERO_UUID = uuid.UUID(int=0)


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    requested = body.get("topics")
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [_describe(ctx, t) for t in state.store.topics.values() if ctx.allowed("DESCRIBE", "TOPIC", t.name)]
    else:
        allow = body.get("allow_auto_topic_creation", True) and state.config.auto_create_topics
        creations = [state.config.max_auto_created_topics_per_request] if allow else [0]
        topics = [_lookup(ctx, item, creations) for item in requested]
    if body.get("include_topic_authorized_operations"):
        for t in topics:
            if t["error_code"] == ErrorCode.NONE:
                t["topic_authorized_operations"] = ctx.authorized_operations("TOPIC", t["name"])
    cluster_operations = (ctx.authorized_operations("CLUSTER") if body.get("include_cluster_authorized_operations")
                          else OMITTED_OPERATIONS)
    brokers = [{"node_id": node, "host": host, "port": port, "rack": None}
               for node, host, port in state.brokers(ctx.local_host, ctx.local_port)]
    return {"throttle_time_ms": 0, "brokers": brokers,
            "cluster_id": state.cluster_id, "controller_id": state.cluster.controller, "topics": topics,
            "cluster_authorized_operations": cluster_operations, "error_code": 0}


def _lookup(ctx, item: dict, creations: list[int]) -> dict:
    """The topic's metadata; a missing topic is created while ``creations[0]`` (what this request may still
    create: one request naming 200,000 new topics must not stall the broker) allows."""
    store = ctx.state.store
    name, topic_id = item.get("name"), item.get("topic_id") or ZERO_UUID
    if name is None and topic_id != ZERO_UUID:
        topic = store.by_id.get(topic_id)
        if topic and not ctx.allowed("DESCRIBE", "TOPIC", topic.name):
            return _error(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id)
        return _describe(ctx, topic) if topic else _error(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id)
    if not ctx.allowed("DESCRIBE", "TOPIC", name or ""):
        return _error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    topic = store.topic(name)
    if topic is not None:
        return _describe(ctx, topic)
    if topic_name_problem(name) or topic_collision(name, store.topics):
        return _error(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if creations[0] > 0 and not (ctx.allowed("CREATE", "CLUSTER") or ctx.allowed("CREATE", "TOPIC", name)):
        return _error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if creations[0] > 0:
        creations[0] -= 1
        return _describe(ctx, ctx.state.create_topic(name))
    return _error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _error(name, code: int, topic_id=ZERO_UUID) -> dict:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": [],
            "topic_authorized_operations": OMITTED_OPERATIONS}


def _describe(ctx, topic) -> dict:
    cluster = ctx.state.cluster
    partitions = []
    for p in topic.partitions:
        leader, epoch = cluster.leader(topic.name, p.index)
        replicas = cluster.replicas(topic.name, p.index)
        partitions.append({"error_code": ErrorCode.NONE, "partition_index": p.index, "leader_id": leader,
                           "leader_epoch": epoch, "replica_nodes": replicas, "isr_nodes": replicas,
                           "offline_replicas": []})
    return {"error_code": ErrorCode.NONE, "name": topic.name, "topic_id": topic.topic_id,
            "is_internal": topic.name in INTERNAL_TOPICS,
            "partitions": partitions, "topic_authorized_operations": OMITTED_OPERATIONS}


HANDLER = Handler(ApiKey.METADATA, 0, 13, handle)
