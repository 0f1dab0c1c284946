"""DescribeQuorum (55), v0-v2 (KIP-595): the KRaft quorum of the cluster metadata log.

The first node is the one voter and the leader (the controller); the other nodes are observers. The high
watermark and every replica's log end offset are the cluster's count of metadata changes (leader moves,
reassignments, feature updates). Only ``__cluster_metadata`` partition 0 exists (else
UNKNOWN_TOPIC_OR_PARTITION); v2 adds the controller's endpoint.
"""
from __future__ import annotations

import uuid

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

METADATA_TOPIC = "__cluster_metadata"
NO_DIRECTORY = uuid.UUID(int=0)


def handle(ctx, body: dict) -> dict:
    topics = [{"topic_name": t.get("topic_name"), "partitions": [_partition(ctx, t.get("topic_name"), p)
                                                                  for p in t.get("partitions", ())]}
              for t in body.get("topics", ())]
    cluster = ctx.state.cluster
    host, port = next((h, p) for node, h, p in ctx.state.brokers(ctx.local_host, ctx.local_port)
                      if node == cluster.controller)
    name = cluster.listener_at(ctx.local_port) or "PLAINTEXT"        # the listener the request came in on
    nodes = [{"node_id": cluster.controller, "listeners": [{"name": name, "host": host, "port": port}]}]
    return {"error_code": ErrorCode.NONE, "error_message": None, "topics": topics, "nodes": nodes}


def _partition(ctx, topic: str, item: dict) -> dict:
    index = item.get("partition_index")
    cluster = ctx.state.cluster
    if topic != METADATA_TOPIC or index != 0:
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": "Only __cluster_metadata partition 0 has a quorum.", "leader_id": -1,
                "leader_epoch": -1, "high_watermark": -1, "current_voters": [], "observers": []}
    offset = cluster.metadata_offset
    replica = lambda node: {"replica_id": node, "replica_directory_id": NO_DIRECTORY, "log_end_offset": offset,
                            "last_fetch_timestamp": ctx.now_ms, "last_caught_up_timestamp": ctx.now_ms}  # noqa: E731
    return {"partition_index": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "leader_id": cluster.controller, "leader_epoch": 1, "high_watermark": offset,
            "current_voters": [replica(cluster.controller)],
            "observers": [replica(n) for n in cluster.node_ids if n != cluster.controller]}


HANDLER = Handler(ApiKey.DESCRIBE_QUORUM, 0, 2, handle)
