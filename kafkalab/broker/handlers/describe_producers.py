"""DescribeProducers (61), v0: the producers a partition remembers (KIP-664), as ``kafka-transactions.sh``
shows them: id, epoch, last sequence, and where the producer's open transaction starts (-1 if none).
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler



def handle(ctx, body: dict) -> dict:
    store = ctx.state.store
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [_partition(store.partition(t["name"], index), index)
                                           if ctx.allowed("READ", "TOPIC", t["name"]) else
                                           {"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            "error_message": None, "active_producers": []}
                                           for index in t.get("partition_indexes", ())]}
        for t in body.get("topics", ())]}


def _partition(partition, index: int) -> dict:
    if partition is None:
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": None,
                "active_producers": []}
    open_txns = partition.log.open_txns
    return {"partition_index": index, "error_code": ErrorCode.NONE, "error_message": None, "active_producers": [
        {"producer_id": pid, "producer_epoch": entry.epoch, "last_sequence": entry.last_sequence,
         "last_timestamp": -1, "coordinator_epoch": 0, "current_txn_start_offset": open_txns.get(pid, -1)}
        for pid, entry in sorted(partition.producers.entries.items())]}


HANDLER = Handler(ApiKey.DESCRIBE_PRODUCERS, 0, 0, handle)
