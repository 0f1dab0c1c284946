"""Idempotent produce with each Python client and kcat: InitProducerId, then batches that carry the producer id
and consecutive sequence numbers from 0, every record written once and read back in order. (kafkajs's
idempotent flow is in test_broker_kafkajs.py.)"""
from __future__ import annotations

import asyncio
import subprocess

import confluent_kafka as ck
from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer

from tests.tools import require_tool
from test_broker_transactions import read

TIMEOUT = 20
VALUES = [b"idem-%d" % i for i in range(20)]


def produce_batches(broker, topic: str = "t") -> list:
    """The record batches of every Produce request to ``topic`` partition 0, as the journal decoded them."""
    return [b for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
            for t in f.body["topic_data"] if t["name"] == topic
            for p in t["partition_data"] if p["index"] == 0 for b in p["records"]]


def assert_idempotent(broker) -> None:
    """One producer id, sequences without gap or repeat from 0, and the log holds each value once, in order."""
    batches = produce_batches(broker)
    assert batches and {b.producer_id for b in batches} != {-1} and len({b.producer_id for b in batches}) == 1
    sequences = [b.base_sequence + i for b in batches for i in range(len(b.records))]
    assert sequences == list(range(len(VALUES)))
    assert read(broker.bootstrap_servers, "t", "read_uncommitted", (0,)) == sorted(VALUES)
    init = [f for f in broker.journal if f.api_name == "InitProducerId" and f.kind == "response"]
    assert init and init[-1].body["producer_id"] == batches[0].producer_id


def test_kafka_python_idempotent_produce(broker):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, acks="all",
                             linger_ms=5)
    for v in VALUES:
        producer.send("t", v, partition=0)
    producer.flush(TIMEOUT)
    producer.close()
    assert_idempotent(broker)


def test_confluent_idempotent_produce(broker):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                            "linger.ms": 5})
    for v in VALUES:
        producer.produce("t", v, partition=0)
    assert producer.flush(TIMEOUT) == 0
    assert_idempotent(broker)


def test_aiokafka_idempotent_produce(broker):
    async def flow():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True)
        await producer.start()
        try:
            futures = [await producer.send("t", v, partition=0) for v in VALUES]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()
    asyncio.run(asyncio.wait_for(flow(), TIMEOUT))
    assert_idempotent(broker)


def test_kcat_idempotent_produce(broker):
    data = "".join(v.decode() + "\n" for v in VALUES)
    done = subprocess.run([require_tool("kcat"), "-b", broker.bootstrap_servers, "-P", "-t", "t", "-p", "0",
                           "-X", "enable.idempotence=true", "-X", "linger.ms=5"], input=data, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert_idempotent(broker)
