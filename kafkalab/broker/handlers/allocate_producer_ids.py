"""AllocateProducerIds (67), v0 (KIP-730): a block of producer ids for a broker, from the cluster's counter.

The block is taken from the same counter InitProducerId draws on, so ids handed out afterwards follow the
block (a producer never gets an id a block holds). Only cluster nodes may ask (BROKER_ID_NOT_REGISTERED
otherwise); the ACL table asks CLUSTER_ACTION on the cluster, which brokers (super users) hold.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

BLOCK_SIZE = 1000          # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    if body.get("broker_id") not in state.cluster.node_ids:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.BROKER_ID_NOT_REGISTERED, "producer_id_start": -1,
                "producer_id_len": 0}
    start = state.next_producer_id
    state.next_producer_id += BLOCK_SIZE
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id_start": start,
            "producer_id_len": BLOCK_SIZE}


HANDLER = Handler(ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0, handle)
