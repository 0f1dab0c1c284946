"""AlterPartitionReassignments (45), v0-v1 (KIP-455): give partitions new replica lists.

The nodes share one log, so a reassignment completes as it is accepted: the replica list changes, and a leader
that is no longer a replica hands over to the new first replica (leader epoch bumped). Replica lists must name
cluster nodes, once each (INVALID_REPLICA_ASSIGNMENT); v1 without ``allow_replication_factor_change`` keeps
the replica count (INVALID_REPLICATION_FACTOR). A null list cancels a reassignment, and there is never one in
progress to cancel (NO_REASSIGNMENT_IN_PROGRESS).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    allow_change = ctx.api_version < 1 or body.get("allow_replication_factor_change", True)
    responses = []
    for item in body.get("topics", ()):
        topic = state.store.topic(item.get("name"))
        partitions = []
        for p in item.get("partitions", ()):
            index, replicas = p.get("partition_index"), p.get("replicas")
            code, message = _check(state, topic, index, replicas, allow_change)
            if code == ErrorCode.NONE:
                state.cluster.reassign(topic.name, index, replicas)
            partitions.append({"partition_index": index, "error_code": int(code), "error_message": message})
        responses.append({"name": item.get("name"), "partitions": partitions})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow_change,
            "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


def _check(state, topic, index, replicas, allow_change) -> tuple[int, str | None]:
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "There is no reassignment in progress to cancel."
    problem = state.cluster.replica_problem(replicas)
    if problem:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    if not allow_change and len(replicas) != len(state.cluster.replicas(topic.name, index)):
        return ErrorCode.INVALID_REPLICATION_FACTOR, "The replication factor would change."
    return ErrorCode.NONE, None


HANDLER = Handler(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, handle)
