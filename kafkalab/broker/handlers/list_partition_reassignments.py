"""ListPartitionReassignments (46), v0 (KIP-455): the reassignments in progress.

Reassignments here complete as they are accepted (the nodes share one log), so none is ever in progress: the
answer lists no partitions, for the topics asked about or for all (a null list). Unknown topics are simply
absent, as in Kafka.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "topics": []}


HANDLER = Handler(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, handle)
