"""kafka-python 3 against the broker: produce, read back by assignment, compression, timestamps, admin."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

TIMEOUT = 20


def _producer(broker, **kw):
    return KafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000, **kw)


def _consume(broker, partitions, expected: int):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000, fetch_max_wait_ms=100)
    consumer.assign(partitions)
    got, deadline = [], time.time() + TIMEOUT
    while len(got) < expected and time.time() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            got.extend(batch)
    consumer.close()
    return got


def test_kafka_python_keyed_records_with_headers_by_assignment(broker):
    producer = _producer(broker)
    sent = []
    for i in range(20):
        meta = producer.send("t", key=f"key-{i}".encode(), value=f"value-{i}".encode(),
                             headers=[("h", f"{i}".encode()), ("empty", b"")], partition=i % 2).get(TIMEOUT)
        sent.append((meta.partition, meta.offset, f"key-{i}".encode(), f"value-{i}".encode()))
    producer.close()
    assert sorted(o for p, o, *_ in sent if p == 0) == list(range(10))
    got = _consume(broker, [TopicPartition("t", 0), TopicPartition("t", 1)], 20)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in got) == sorted(sent)
    by_key = {r.key: r for r in got}
    assert by_key[b"key-7"].headers == [("h", b"7"), ("empty", b"")]


@pytest.mark.parametrize("codec", ["gzip"])
def test_kafka_python_compression_round_trip(broker, codec):
    producer = _producer(broker, compression_type=codec, linger_ms=20)
    values = [bytes([i % 251]) * (50 + i) for i in range(200)]
    futures = [producer.send("t", key=b"k%d" % i, value=v, partition=0) for i, v in enumerate(values)]
    producer.flush(TIMEOUT)
    assert [f.get(TIMEOUT).offset for f in futures] == list(range(200))
    producer.close()
    got = _consume(broker, [TopicPartition("t", 0)], 200)
    assert [r.value for r in got] == values
    assert [r.key for r in got] == [b"k%d" % i for i in range(200)]


def test_kafka_python_timestamps_and_offsets_for_times(broker):
    producer = _producer(broker)
    base = 1_700_000_000_000
    for i in range(10):
        producer.send("t", value=b"v%d" % i, partition=1, timestamp_ms=base + 1000 * i).get(TIMEOUT)
    producer.close()
    got = _consume(broker, [TopicPartition("t", 1)], 10)
    assert [r.timestamp for r in got] == [base + 1000 * i for i in range(10)]
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    tp = TopicPartition("t", 1)
    found = consumer.offsets_for_times({tp: base + 3500})[tp]
    assert (found.offset, found.timestamp) == (4, base + 4000)
    assert consumer.offsets_for_times({tp: base + 10**7})[tp] is None
    assert consumer.beginning_offsets([tp])[tp] == 0
    assert consumer.end_offsets([tp])[tp] == 10
    consumer.close()


def test_kafka_python_admin_create_topics(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    admin.create_topics([NewTopic("made-by-admin", num_partitions=4, replication_factor=1)])
    assert broker.topics["made-by-admin"] == 4
    with pytest.raises(Exception, match="TopicAlreadyExists"):
        admin.create_topics([NewTopic("made-by-admin", num_partitions=1, replication_factor=1)])
    admin.close()
    producer = _producer(broker)
    assert producer.send("made-by-admin", value=b"x", partition=3).get(TIMEOUT).offset == 0
    producer.close()
