"""ElectLeaders (43), v0-v2: move leadership back to each partition's preferred replica (KIP-460).

Preferred elections (type 0) move a partition whose leader is not its first replica; one already led by it is
ELECTION_NOT_NEEDED, as Kafka answers. Unclean elections (type 1) are never needed: every replica is in sync
(the nodes share one log). A null partition list means every partition. v0 has no election type (preferred)
and no top-level error. A topic without a partition list means all its partitions.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

PREFERRED = 0


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    wanted = body.get("topic_partitions")
    if wanted is None:
        wanted = [{"topic": name, "partitions": list(range(len(t.partitions)))}
                  for name, t in state.store.topics.items()]
    preferred = body.get("election_type", PREFERRED) == PREFERRED
    if not ctx.allowed("ALTER", "CLUSTER"):      # v0 has no top-level error: every partition says so too
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": denied, "replica_election_results": [
            {"topic": item.get("topic"), "partition_result": [
                _result(p, denied, "Cluster authorization failed.") for p in item.get("partitions") or ()]}
            for item in wanted]}
    results = []
    for item in wanted:
        topic = state.store.topic(item.get("topic"))
        outcome = []
        partitions = item.get("partitions")
        if partitions is None:                 # a topic named without partitions: all of them
            partitions = range(len(topic.partitions)) if topic is not None else ()
        for p in partitions:
            if topic is None or not 0 <= p < len(topic.partitions):
                outcome.append(_result(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                       "The partition does not exist."))
            elif preferred and state.cluster.elect_preferred(topic.name, p):
                outcome.append(_result(p, ErrorCode.NONE, None))
            else:
                outcome.append(_result(p, ErrorCode.ELECTION_NOT_NEEDED,
                                       "Leader election not needed for topic partition."))
        results.append({"topic": item.get("topic"), "partition_result": outcome})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": results}


def _result(partition: int, code: int, message: str | None) -> dict:
    return {"partition_id": partition, "error_code": int(code), "error_message": message}


HANDLER = Handler(ApiKey.ELECT_LEADERS, 0, 2, handle)
