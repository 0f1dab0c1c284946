"""AddRaftVoter (80), v0-v1 (KIP-853): make an observer node of the cluster a KRaft voter.

The new voter shows in DescribeQuorum's voters (with its directory id and listeners) and leaves its
observers. A cluster id other than this cluster's is INCONSISTENT_CLUSTER_ID; see controls/quorum.py for the
rest. The metadata log grows by one record, as the voter-set change would in Kafka.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def cluster_id_problem(ctx, body: dict) -> tuple[int, str | None] | None:
    asked = body.get("cluster_id")
    if asked is not None and asked != ctx.state.cluster_id:
        return ErrorCode.INCONSISTENT_CLUSTER_ID, f"Cluster id {asked} is not {ctx.state.cluster_id}."
    return None


def handle(ctx, body: dict) -> dict:
    cluster = ctx.state.cluster
    code, message = cluster_id_problem(ctx, body) or cluster.quorum.add(
        cluster.node_ids, body.get("voter_id"), body.get("voter_directory_id"), body.get("listeners") or [])
    if code == ErrorCode.NONE:
        cluster.metadata_offset += 1
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message}


HANDLER = Handler(ApiKey.ADD_RAFT_VOTER, 0, 1, handle)
