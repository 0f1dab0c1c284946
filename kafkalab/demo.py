"""``kafkalab demo``: the main job on the embedded default, start to finish in well under a minute.

1. start kafkalab's broker in this process (loopback, random port);
2. drive real client traffic at it: confluent-kafka (librdkafka) creates topics, produces keyed records with
   headers in every compression codec and reads them back; kafka-python produces idempotently;
3. write the broker's frame journal as a pcap file;
4. decode that pcap with kafkalab's capture reader (TCP reassembly, pairing, every API decoded);
5. print a summary (per-API counts and latencies, records per topic and codec) and one annotated frame.

Both clients are kafkalab dependencies; should one be missing anyway (a partial install), the demo says in
one line what to install instead of failing halfway. ``demo_frames()`` also provides a few codec-built frames
for examples and tests that need no broker.
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TextIO

from kafkalab.dissect import format_tree
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.records import build_batch

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_CODEC = 40
CLIENTS = {"confluent_kafka": "confluent-kafka", "kafka": "kafka-python"}    # module -> distribution


def missing_clients() -> list[str]:
    """The distributions of the demo's clients that cannot be imported here."""
    return [dist for module, dist in CLIENTS.items() if importlib.util.find_spec(module) is None]


def demo_frames() -> list[tuple[str, bytes, tuple[str, int] | None]]:
    """(title, frame, (api, version) for responses) for a few frames built with the codec."""
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


# ---------------------------------------------------------------- client traffic

def confluent_traffic(bootstrap: str) -> dict[str, int]:
    """Admin, produce in every codec, consume by assignment; returns records read back per topic."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(f"demo.{codec}", num_partitions=2) for codec in CODECS])
    for future in futures.values():
        future.result(timeout=10)
    for codec in CODECS:
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5,
                             "client.id": f"demo-producer-{codec}", "enable.idempotence": True})
        for i in range(RECORDS_PER_CODEC):
            producer.produce(f"demo.{codec}", key=f"key-{i % 7}".encode(), value=f"{codec} record {i}".encode(),
                             headers=[("codec", codec.encode()), ("seq", str(i).encode())])
        if producer.flush(10) != 0:
            raise RuntimeError(f"records left unsent for {codec}")
    read: dict[str, int] = {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo", "client.id": "demo-consumer",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(f"demo.{codec}", p, 0) for codec in CODECS for p in range(2)])
        deadline = time.monotonic() + 15
        while sum(read.values()) < RECORDS_PER_CODEC * len(CODECS) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read[message.topic()] = read.get(message.topic(), 0) + 1
    finally:
        consumer.close()
    return read


def kafka_python_traffic(bootstrap: str) -> int:
    """An idempotent kafka-python producer (its default), gzip: returns records acknowledged."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="demo-kafka-python", compression_type="gzip",
                             linger_ms=5)
    try:
        futures = [producer.send("demo.kafka-python", key=b"k", value=f"value {i}".encode()) for i in range(20)]
        return sum(1 for f in futures if f.get(timeout=10) is not None)
    finally:
        producer.close(timeout=5)


# ---------------------------------------------------------------- summary

def summary_tables(capture):
    """Per-API request counts and latencies, and records per topic with their codecs."""
    exchanges = capture.exchanges
    per_api = exchanges.groupby("api_name").agg(
        requests=("api_name", "size"), versions=("api_version", lambda s: ",".join(map(str, sorted(set(s))))),
        p50_ms=("latency_ms", "median"), p99_ms=("latency_ms", lambda s: s.quantile(0.99)),
        errors=("error_code", lambda s: int((s.fillna(0) != 0).sum())))
    records = capture.records
    produced = records[records["kind"] == "request"]
    per_topic = produced.groupby("topic").agg(records=("topic", "size"),
                                              codecs=("codec", lambda s: ",".join(sorted(set(s)))))
    return per_api.round(2), per_topic


def run_demo(out: TextIO, err: TextIO = sys.stderr, workdir: str | Path | None = None) -> int:
    """The demo, printed to ``out``; 0 when every record made the round trip, 1 when some did not, 2 when it
    could not run (a client missing, client traffic failing), with one line on ``err`` saying why."""
    from kafkalab.broker import Broker
    from kafkalab.capture import read_capture

    missing = missing_clients()
    if missing:
        print(f"kafkalab demo: the demo's clients are missing: {', '.join(missing)} "
              f"(pip install {' '.join(missing)})", file=err)
        return 2
    started = time.monotonic()
    folder = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kafkalab-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    with Broker() as broker:
        print(f"broker listening on {broker.bootstrap_servers}", file=out)
        try:
            read = confluent_traffic(broker.bootstrap_servers)
            acked = kafka_python_traffic(broker.bootstrap_servers)
        except Exception as exc:        # noqa: BLE001 - the clients raise many types; one line says which
            print(f"kafkalab demo: client traffic failed: {type(exc).__name__}: {exc} (a loaded machine? "
                  f"try again)", file=err)
            return 2
        pcap = folder / "kafkalab-demo.pcap"
        written = broker.write_pcap(pcap)
    print(f"confluent-kafka read back {sum(read.values())} of {RECORDS_PER_CODEC * len(CODECS)} records; "
          f"kafka-python got {acked} acks", file=out)
    capture = read_capture(pcap)
    frames = capture.frames
    print(f"journal written as {pcap} ({pcap.stat().st_size:,} bytes, {written} frames); "
          f"decoded {len(frames)} frames on {frames['stream'].nunique()} connections", file=out)
    parquet = folder / "frames.parquet"
    frames.drop(columns=["topics", "diagnostics"]).to_parquet(parquet)
    per_api, per_topic = summary_tables(capture)
    print("\nRequests by API (latency in ms):", file=out)
    print(per_api.to_string(), file=out)
    print("\nRecords produced by topic:", file=out)
    print(per_topic.to_string(), file=out)
    produce = frames[(frames["api_name"] == "Produce") & (frames["kind"] == "request")]
    compressed = produce[produce["summary"].str.contains("demo.zstd")]
    if len(compressed):
        number = int(compressed["frame"].iloc[0])
        print(f"\nFrame {number}, a zstd-compressed Produce request, as an annotated tree (first 45 lines):",
              file=out)
        print("\n".join(format_tree(capture[number].tree).splitlines()[:45]), file=out)
    print(f"\nfiles: {pcap}  {parquet}", file=out)
    print(f"done in {time.monotonic() - started:.1f} s", file=out)
    return 0 if sum(read.values()) == RECORDS_PER_CODEC * len(CODECS) and acked == 20 else 1
