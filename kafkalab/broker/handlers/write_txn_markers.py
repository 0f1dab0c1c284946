"""WriteTxnMarkers (27), v0-v2: write commit/abort markers to partitions on request.

In a cluster the transaction coordinator sends it to partition leaders; here the coordinator writes its own
markers directly, and this API serves the admin tools that abort a hanging transaction on one partition
(``kafka-transactions.sh abort``, kafka-python's ``abort_transaction``). A marker older than the epoch the
partition knows for the producer answers INVALID_PRODUCER_EPOCH.
"""
from __future__ import annotations


from kafkalab.protocol import ApiKey, ErrorCode

from ..transactions.coordinator import append_marker, control_batch
from .base import Handler



def handle(ctx, body: dict) -> dict:
    if not ctx.allowed("CLUSTER_ACTION", "CLUSTER"):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED         # only brokers write markers
        return {"markers": [{"producer_id": m["producer_id"], "topics": [
            {"name": t["name"], "partitions": [{"partition_index": i, "error_code": denied}
                                               for i in t.get("partition_indexes", ())]} for t in m.get("topics", ())]}
            for m in body.get("markers", ())]}
    answers = [_marker(ctx, m) for m in body.get("markers", ())]
    ctx.state.appended()
    return {"markers": answers}


def _marker(ctx, m: dict) -> dict:
    pid, epoch = m["producer_id"], m["producer_epoch"]
    marker = control_batch(pid, epoch, m["transaction_result"], ctx.now_ms)
    topics = []
    for t in m.get("topics", ()):
        partitions = []
        for index in t.get("partition_indexes", ()):
            partition = ctx.state.store.partition(t["name"], index)
            entry = partition.producers.entries.get(pid) if partition is not None else None
            if partition is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif entry is not None and entry.epoch > epoch:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            else:
                append_marker(partition, marker, pid, epoch)
                error = ErrorCode.NONE
            partitions.append({"partition_index": index, "error_code": error})
        topics.append({"name": t["name"], "partitions": partitions})
    return {"producer_id": pid, "topics": topics}


HANDLER = Handler(ApiKey.WRITE_TXN_MARKERS, 0, 2, handle)
