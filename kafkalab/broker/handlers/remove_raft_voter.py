"""RemoveRaftVoter (81), v0 (KIP-853): take a voter out of the KRaft quorum (it becomes an observer).

Removing the leader hands leadership to the lowest remaining voter with a new leader epoch: DescribeQuorum and
DescribeCluster's controller follow. VOTER_NOT_FOUND for a node (or directory id) that is not a voter,
INVALID_REQUEST for the last voter, INCONSISTENT_CLUSTER_ID for another cluster's id.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .add_raft_voter import cluster_id_problem
from .base import Handler


def handle(ctx, body: dict) -> dict:
    cluster = ctx.state.cluster
    code, message = cluster_id_problem(ctx, body) or cluster.quorum.remove(body.get("voter_id"),
                                                                           body.get("voter_directory_id"))
    if code == ErrorCode.NONE:
        cluster.metadata_offset += 1
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message}


HANDLER = Handler(ApiKey.REMOVE_RAFT_VOTER, 0, 0, handle)
