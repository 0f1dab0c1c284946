"""``kafkalab demo``: the main job on the embedded default, runnable on a fresh machine in seconds.

Today it shows the codec: it builds a few real-world frames (a client's ApiVersions, a gzip-compressed
Produce with keys and headers, a Metadata answer), decodes them back with byte-exact annotated trees and
prints the trees and a summary. Later stages add the in-process broker, client traffic and capture decoding.
"""
from __future__ import annotations

import uuid
from typing import TextIO

from kafkalab.dissect import format_tree
from kafkalab.protocol import decode_request, decode_response, encode_request, encode_response
from kafkalab.protocol.records import build_batch


def demo_frames() -> list[tuple[str, bytes, tuple[str, int] | None]]:
    """(title, frame, (api, version) for responses) for the frames the demo shows."""
    batch = build_batch([{"key": b"order-1", "value": b'{"qty": 3}', "headers": [("source", b"demo")]},
                         {"key": b"order-2", "value": b'{"qty": 5}', "headers": []}],
                        codec="gzip", base_timestamp=1_700_000_000_000)
    produce = encode_request("Produce", 9, {
        "acks": -1, "timeout_ms": 30_000,
        "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": [batch]}]}],
    }, correlation_id=2, client_id="kafkalab-demo")
    api_versions = encode_request("ApiVersions", 3, {"client_software_name": "kafkalab",
                                                     "client_software_version": "0.1.0"},
                                  correlation_id=1, client_id="kafkalab-demo")
    metadata = encode_response("Metadata", 12, {
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
        "cluster_id": "kafkalab", "controller_id": 1,
        "topics": [{"error_code": 0, "name": "orders", "topic_id": uuid.UUID(int=42), "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 0,
                                    "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}]}],
    }, correlation_id=3)
    return [("ApiVersions v3 request", api_versions, None),
            ("Produce v9 request with a gzip record batch", produce, None),
            ("Metadata v12 response", metadata, ("Metadata", 12))]


def run_demo(out: TextIO) -> int:
    for title, frame, response_of in demo_frames():
        if response_of:
            message = decode_response(frame, *response_of, annotate=True)
        else:
            message = decode_request(frame, annotate=True)
        leaves = list(message.tree.leaves())
        covered = sum(leaf.end - leaf.start for leaf in leaves)
        print(f"=== {title}: {len(frame)} bytes, {len(leaves)} leaf fields covering {covered} bytes", file=out)
        print(format_tree(message.tree), file=out)
        print(file=out)
    return 0
