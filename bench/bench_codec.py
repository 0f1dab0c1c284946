#!/usr/bin/env python3
"""Codec throughput: kafkalab's compiled path (and its annotated path) beside kafka-python 3, on the same bytes.

    python bench/bench_codec.py [--repeat N]

Messages (realistic sizes): a MetadataResponse v12 with 100 topics x 100 partitions (~386 KB, the anchor
message), a ProduceRequest v9 carrying 10 x 16 KB record batches, a FetchResponse v12 with 10 x 64 KB
record batches (record sets kept as bytes, as kafka-python does, and also decoded into batch objects), a MetadataRequest v12 for 100 topics, and a small mix (ApiVersions, Heartbeat,
OffsetCommit, FindCoordinator). Reports MB/s and messages/s, best CPU time of N runs, and kafkalab's speed as
a multiple of kafka-python's (the two measured in alternation, so machine load cancels out). kafka-python
decodes with ``kafka.protocol.<api>.<Name>.decode(data, version=...)`` when it is installed. Both keep
record sets undecoded: kafka-python as a copied ``bytes``, kafkalab as a zero-copy view of the frame.
"""
from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkalab.protocol import api_spec  # noqa: E402
from kafkalab.protocol.codec import decode, encode  # noqa: E402


def metadata_response() -> dict:
    return {"throttle_time_ms": 0, "brokers": [{"node_id": i, "host": f"broker-{i}.example", "port": 9092,
                                                 "rack": f"rack-{i % 3}"} for i in range(3)],
            "cluster_id": "kafkalab-bench", "controller_id": 0,
            "topics": [{"error_code": 0, "name": f"topic-{t:04d}", "topic_id": uuid.UUID(int=t + 1),
                        "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p % 3,
                                        "leader_epoch": 7, "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2],
                                        "offline_replicas": []} for p in range(100)],
                        "topic_authorized_operations": -2147483648} for t in range(100)]}


def record_set(records: int, value_size: int) -> bytes:
    """A real, uncompressed v2 batch: ``records`` records of ``value_size`` bytes with 8-byte keys."""
    from kafkalab.protocol.records import build_batch, encode_records
    batch = build_batch([{"key": f"key-{i:04d}".encode(), "value": bytes([i % 251]) * value_size}
                         for i in range(records)], base_timestamp=1_700_000_000_000)
    return encode_records([batch])


def produce_request() -> dict:
    data = record_set(100, 150)                   # ~16 KB per partition
    return {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": f"orders-{t}", "partition_data": [
                {"index": p, "records": data} for p in range(5)]} for t in range(2)]}


def fetch_response() -> dict:
    data = record_set(400, 150)                   # ~64 KB per partition
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 1,
            "responses": [{"topic": "orders", "partitions": [
                {"partition_index": p, "error_code": 0, "high_watermark": 1000, "last_stable_offset": 1000,
                 "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
                 "records": data} for p in range(10)]}]}


def metadata_request() -> dict:
    return {"topics": [{"name": f"topic-{t:04d}"} for t in range(100)], "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False}


SMALL_MIX = [
    ("ApiVersions", "request", 3, {"client_software_name": "bench", "client_software_version": "1.0"}),
    ("Heartbeat", "request", 4, {"group_id": "g", "generation_id": 3, "member_id": "m-1",
                                 "group_instance_id": None}),
    ("FindCoordinator", "request", 4, {"key_type": 0, "coordinator_keys": ["group-1"]}),
    ("OffsetCommit", "request", 8, {"group_id": "g", "generation_id_or_member_epoch": 3, "member_id": "m-1",
                                    "group_instance_id": None,
                                    "topics": [{"name": "orders", "partitions": [
                                        {"partition_index": p, "committed_offset": 1000 + p,
                                         "committed_leader_epoch": 1, "committed_metadata": ""}
                                        for p in range(4)]}]}),
]

CASES = [
    ("MetadataResponse v12 (10k partitions)", "Metadata", "response", 12, metadata_response),
    ("ProduceRequest v9 (10 x 16 KB)", "Produce", "request", 9, produce_request),
    ("FetchResponse v12 (10 x 64 KB)", "Fetch", "response", 12, fetch_response),
    ("MetadataRequest v12 (100 topics)", "Metadata", "request", 12, metadata_request),
]


def best_time(fn, repeat: int, inner: int = 1) -> float:
    """Best CPU time of one whole call (process time: a busy machine that takes the CPU away between
    samples does not count against either side)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(inner):
            fn()
        best = min(best, (time.process_time() - start) / inner)
    return best


def best_times(fns, repeat: int) -> list[float]:
    """Best whole-call time of each function, measured in alternation (a loaded machine slows all alike);
    each sample loops long enough (~5 ms) for the clock to be exact."""
    inner = [max(1, int(0.005 / max(best_time(fn, 1), 1e-7))) for fn in fns]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_time(fn, 1, inner[i]))
    return best


def kafka_python_decoder(api: str, kind: str, version: int):
    try:
        import kafka.protocol as kp
    except ImportError:
        return None
    name = api + kind.capitalize()
    for module in ("metadata", "producer", "consumer", "admin"):
        try:
            package = __import__(f"kafka.protocol.{module}", fromlist=[name])
        except ImportError:
            continue
        cls = getattr(package, name, None)
        if cls is not None:
            return lambda data: cls.decode(data, version=version)
    del kp
    return None


def row(label: str, size: int, seconds: float, ratio: float | None = None) -> str:
    vs = f" {ratio:>6.2f}x" if ratio is not None else ""
    return f"{label:<58} {size / 1024:>8.1f} KB {seconds * 1000:>9.3f} ms {size / seconds / 1e6:>9.1f} MB/s" \
           f" {1 / seconds:>11,.0f} msg/s{vs}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"{'case':<58} {'size':>11} {'time':>12} {'throughput':>14} {'rate':>15} {'vs kafka-python':>8}")
    for label, api, kind, version, make in CASES:
        spec = api_spec(api).message(kind)
        body = make()
        data = encode(spec, version, body)
        other = kafka_python_decoder(api, kind, version)
        ours = lambda: decode(spec, version, data, records="raw")  # noqa: E731
        if other is not None:
            other(data)
            mine, theirs = best_times([ours, lambda: other(data)], args.repeat)
            print(row(f"{label} kafkalab decode", len(data), mine, theirs / mine))
            print(row(f"{label} kafka-python 3 decode", len(data), theirs))
        else:
            print(row(f"{label} kafkalab decode", len(data), best_times([ours], args.repeat)[0]))
        if api in ("Produce", "Fetch"):
            print(row(f"{label} kafkalab decode + batches", len(data),
                      best_time(lambda: decode(spec, version, data), args.repeat)))
        print(row(f"{label} kafkalab encode", len(data), best_time(lambda: encode(spec, version, body), args.repeat)))
    encoded = [(api_spec(a).message(k), v, encode(api_spec(a).message(k), v, b)) for a, k, v, b in SMALL_MIX]
    total = sum(len(d) for _, _, d in encoded)

    def decode_mix():
        for spec, version, data in encoded:
            decode(spec, version, data)
    seconds = best_time(decode_mix, args.repeat, inner=2000) / len(encoded)
    print(row("small mix (4 requests) kafkalab decode", total // len(encoded), seconds))


if __name__ == "__main__":
    main()
