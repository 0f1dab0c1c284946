"""DescribeQuorum (55), v0-v2 (KIP-595, KIP-853): the KRaft quorum of the cluster metadata log.

The voters and the leader are the cluster's quorum (controls/quorum.py: at first the lowest node alone;
Add/Remove/UpdateRaftVoter change it); the other nodes are observers. The high watermark and every replica's
log end offset are the cluster's count of metadata changes (leader moves, reassignments, feature and voter
changes). Only ``__cluster_metadata`` partition 0 exists (else UNKNOWN_TOPIC_OR_PARTITION); v2 adds the
voters' directory ids and endpoints.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..controls.quorum import NO_DIRECTORY
from .base import Handler

METADATA_TOPIC = "__cluster_metadata"


def handle(ctx, body: dict) -> dict:
    topics = [{"topic_name": t.get("topic_name"), "partitions": [_partition(ctx, t.get("topic_name"), p)
                                                                  for p in t.get("partitions", ())]}
              for t in body.get("topics", ())]
    return {"error_code": ErrorCode.NONE, "error_message": None, "topics": topics, "nodes": voter_nodes(ctx)}


def voter_nodes(ctx) -> list[dict]:
    """Each voter's listeners: the ones it registered with Add/UpdateRaftVoter, else its node's own (named
    after the listener the request came in on, whose port each node has too)."""
    name = ctx.state.cluster.listener_at(ctx.local_port) or "PLAINTEXT"
    own = {node: (host, port) for node, host, port in ctx.state.brokers(ctx.local_host, ctx.local_port)}
    nodes = []
    for node, voter in sorted(ctx.state.cluster.quorum.voters.items()):
        host, port = own.get(node, ("", 0))
        listeners = voter.listeners or [{"name": name, "host": host, "port": port}]
        nodes.append({"node_id": node, "listeners": listeners})
    return nodes


def _partition(ctx, topic: str, item: dict) -> dict:
    index = item.get("partition_index")
    cluster = ctx.state.cluster
    quorum = cluster.quorum
    if topic != METADATA_TOPIC or index != 0:
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": "Only __cluster_metadata partition 0 has a quorum.", "leader_id": -1,
                "leader_epoch": -1, "high_watermark": -1, "current_voters": [], "observers": []}
    offset = cluster.metadata_offset

    def replica(node: int) -> dict:
        voter = quorum.voters.get(node)
        return {"replica_id": node, "replica_directory_id": voter.directory_id if voter else NO_DIRECTORY,
                "log_end_offset": offset, "last_fetch_timestamp": ctx.now_ms, "last_caught_up_timestamp": ctx.now_ms}
    return {"partition_index": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "leader_id": quorum.leader, "leader_epoch": quorum.epoch, "high_watermark": offset,
            "current_voters": [replica(n) for n in sorted(quorum.voters)],
            "observers": [replica(n) for n in cluster.node_ids if n not in quorum.voters]}


HANDLER = Handler(ApiKey.DESCRIBE_QUORUM, 0, 2, handle)
