"""UpdateRaftVoter (82), v0 (KIP-853): a voter tells the leader its new listeners (and directory id).

The listeners show in DescribeQuorum v2's nodes. The leader epoch the voter knows must be the quorum's
(FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); the answer always names the current leader and its endpoint.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .add_raft_voter import cluster_id_problem
from .base import Handler
from .describe_quorum import voter_nodes


def handle(ctx, body: dict) -> dict:
    cluster = ctx.state.cluster
    quorum = cluster.quorum
    problem = cluster_id_problem(ctx, body)
    code = problem[0] if problem else quorum.update(body.get("voter_id"), body.get("voter_directory_id"),
                                                    body.get("current_leader_epoch", -1), body.get("listeners") or [])
    if code == ErrorCode.NONE:
        cluster.metadata_offset += 1
    leader = next(n for n in voter_nodes(ctx) if n["node_id"] == quorum.leader)
    endpoint = leader["listeners"][0] if leader["listeners"] else {"host": "", "port": -1}
    return {"throttle_time_ms": 0, "error_code": int(code), "current_leader": {
        "leader_id": quorum.leader, "leader_epoch": quorum.epoch, "host": endpoint["host"], "port": endpoint["port"]}}


HANDLER = Handler(ApiKey.UPDATE_RAFT_VOTER, 0, 0, handle)
