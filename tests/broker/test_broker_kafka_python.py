"""kafka-python 3 against the broker: produce, read back by assignment, compression, timestamps, admin."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

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


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
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
    codecs = {b.codec for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
              for t in f.body["topic_data"] for p in t["partition_data"] for b in p["records"]}
    assert codecs == {codec}


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


def test_kafka_python_admin_describe_alter_partitions_delete(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    admin.create_topics([NewTopic("adm", 2, 1, topic_configs={"retention.ms": "60000"})])
    topic = ConfigResource(ConfigResourceType.TOPIC, "adm")
    described = admin.describe_configs([topic], include_synonyms=True, config_filter="all")["topic"]["adm"]
    assert (described["retention.ms"]["value"], described["retention.ms"]["config_source"]) == (
        "60000", "DYNAMIC_TOPIC_CONFIG")
    assert [s["name"] for s in described["retention.ms"]["synonyms"]] == ["retention.ms", "log.retention.hours"]
    assert described["message.timestamp.type"]["config_source"] == "DEFAULT_CONFIG"
    brokers = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    assert brokers["broker"]["1"]["node.id"]["value"] == "1"
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "adm",
                                        configs={"message.timestamp.type": "LogAppendTime"})])
    modified = admin.describe_configs([topic])["topic"]["adm"]
    assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "60000",
                                                             "message.timestamp.type": "LogAppendTime"}
    producer = _producer(broker)
    stamped = producer.send("adm", value=b"x", partition=1, timestamp_ms=5).get(TIMEOUT)
    producer.close()
    assert stamped.timestamp > 1_600_000_000_000                     # the broker's clock, not 5
    admin.create_partitions({"adm": NewPartitions(total_count=5)})
    assert len(admin.describe_topics(["adm"])[0]["partitions"]) == 5
    with pytest.raises(Exception, match="InvalidPartitions"):
        admin.create_partitions({"adm": NewPartitions(total_count=3)})
    admin.delete_topics(["adm"])
    assert admin.list_topics() == ["t"]
    with pytest.raises(Exception, match="UnknownTopicOrPartition"):
        admin.delete_topics(["adm"])
    admin.close()
