"""confluent-kafka (librdkafka) against the broker: produce/read back, every codec, timestamps, admin, offsets."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic)

TIMEOUT = 20


def _produce(broker, records, **config):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, **config})
    reports = []
    for r in records:
        producer.produce("t", on_delivery=lambda err, msg: reports.append((err, msg)), **r)
    assert producer.flush(TIMEOUT) == 0
    assert all(err is None for err, _ in reports), [err for err, _ in reports if err]
    return reports


def _consume(broker, partitions, expected: int):
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "assign-only",
                            "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    consumer.assign([ck.TopicPartition("t", p, ck.OFFSET_BEGINNING) for p in partitions])
    got, deadline = [], time.time() + TIMEOUT
    while len(got) < expected and time.time() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None:
            assert msg.error() is None, msg.error()
            got.append(msg)
    consumer.close()
    return got


def test_confluent_keyed_records_with_headers_by_assignment(broker):
    records = [{"key": b"key-%d" % i, "value": b"value-%d" % i, "partition": i % 2,
                "headers": [("h", b"%d" % i), ("n", None)]} for i in range(30)]
    reports = _produce(broker, records)
    assert sorted(m.offset() for _, m in reports if m.partition() == 1) == list(range(15))
    got = _consume(broker, [0, 1], 30)
    assert sorted((m.partition(), m.key(), m.value()) for m in got) == \
        sorted((r["partition"], r["key"], r["value"]) for r in records)
    by_key = {m.key(): m for m in got}
    assert by_key[b"key-5"].headers() == [("h", b"5"), ("n", None)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_confluent_compression_round_trip(broker, codec):
    values = [(b"%05d-" % i) * (i % 40 + 1) for i in range(500)]
    _produce(broker, [{"key": b"k%d" % i, "value": v, "partition": 0} for i, v in enumerate(values)],
             **{"compression.type": codec, "linger.ms": 20})
    got = _consume(broker, [0], 500)
    assert [m.value() for m in got] == values
    assert [m.offset() for m in got] == list(range(500))
    codecs = {batch.codec for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
              for t in f.body["topic_data"] for p in t["partition_data"] for batch in p["records"]}
    assert codecs == {codec}


def test_confluent_timestamps_and_offsets_for_times(broker):
    base = 1_700_000_000_000
    _produce(broker, [{"value": b"v%d" % i, "partition": 1, "timestamp": base + 1000 * i} for i in range(10)])
    got = _consume(broker, [1], 10)
    assert [m.timestamp() for m in got] == [(ck.TIMESTAMP_CREATE_TIME, base + 1000 * i) for i in range(10)]
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "times"})
    found = consumer.offsets_for_times([ck.TopicPartition("t", 1, base + 3500)], timeout=TIMEOUT)
    assert found[0].offset == 4
    low, high = consumer.get_watermark_offsets(ck.TopicPartition("t", 1), timeout=TIMEOUT)
    assert (low, high) == (0, 10)
    consumer.close()


def test_confluent_admin_create_topics(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.create_topics([NewTopic("orders", 3, 1), NewTopic("bad/name", 1, 1), NewTopic("zero", 0, 1)],
                                  request_timeout=TIMEOUT)
    futures["orders"].result(TIMEOUT)
    with pytest.raises(ck.KafkaException) as bad:
        futures["bad/name"].result(TIMEOUT)
    assert bad.value.args[0].code() == ck.KafkaError.TOPIC_EXCEPTION
    with pytest.raises(ck.KafkaException) as zero:
        futures["zero"].result(TIMEOUT)
    assert zero.value.args[0].code() == ck.KafkaError.INVALID_PARTITIONS
    again = admin.create_topics([NewTopic("orders", 1, 1)], request_timeout=TIMEOUT)["orders"]
    with pytest.raises(ck.KafkaException) as exists:
        again.result(TIMEOUT)
    assert exists.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS
    metadata = admin.list_topics(timeout=TIMEOUT)
    assert len(metadata.topics["orders"].partitions) == 3
    assert metadata.brokers[1].port == broker.port and metadata.controller_id == 1


def test_confluent_commit_and_committed_offsets(broker):
    _produce(broker, [{"value": b"x", "partition": 0} for _ in range(5)])
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "committer",
                            "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition("t", 0, 0)])
    consumer.commit(offsets=[ck.TopicPartition("t", 0, 3)], asynchronous=False)
    committed = consumer.committed([ck.TopicPartition("t", 0), ck.TopicPartition("t", 1)], timeout=TIMEOUT)
    assert [(tp.partition, tp.offset) for tp in committed] == [(0, 3), (1, ck.OFFSET_INVALID)]
    consumer.close()


def test_confluent_admin_describe_alter_partitions_delete(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("adm", 2, 1, config={"retention.ms": "60000"})])["adm"].result(TIMEOUT)
    topic = ConfigResource(ConfigResource.Type.TOPIC, "adm")
    configs = admin.describe_configs([topic], request_timeout=TIMEOUT)[topic].result(TIMEOUT)
    assert configs["retention.ms"].value == "60000" and configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert [s.name for s in configs["retention.ms"].synonyms.values()] == ["retention.ms", "log.retention.hours"]
    assert configs["cleanup.policy"].is_default and configs["cleanup.policy"].value == "delete"
    change = ConfigResource(ConfigResource.Type.TOPIC, "adm", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([change])[change].result(TIMEOUT)
    configs = admin.describe_configs([topic])[topic].result(TIMEOUT)
    assert configs["cleanup.policy"].value == "delete,compact" and configs["retention.ms"].value == "604800000"
    bad = ConfigResource(ConfigResource.Type.TOPIC, "adm", incremental_configs=[
        ConfigEntry("segment.bytes", "12", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException) as invalid:
        admin.incremental_alter_configs([bad])[bad].result(TIMEOUT)
    assert invalid.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
    node = ConfigResource(ConfigResource.Type.BROKER, "1")
    assert admin.describe_configs([node])[node].result(TIMEOUT)["node.id"].is_read_only
    admin.create_partitions([NewPartitions("adm", 4)])["adm"].result(TIMEOUT)
    assert len(admin.list_topics(timeout=TIMEOUT).topics["adm"].partitions) == 4
    with pytest.raises(ck.KafkaException) as fewer:
        admin.create_partitions([NewPartitions("adm", 2)])["adm"].result(TIMEOUT)
    assert fewer.value.args[0].code() == ck.KafkaError.INVALID_PARTITIONS
    admin.delete_topics(["adm"], operation_timeout=TIMEOUT)["adm"].result(TIMEOUT)
    assert "adm" not in admin.list_topics(timeout=TIMEOUT).topics
    with pytest.raises(ck.KafkaException) as gone:
        admin.delete_topics(["adm"])["adm"].result(TIMEOUT)
    assert gone.value.args[0].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert cluster.cluster_id == broker.config.cluster_id and [n.id for n in cluster.nodes] == [1]
