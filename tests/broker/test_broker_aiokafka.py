"""aiokafka against the broker: keyed records with headers and explicit timestamps, read back by assignment,
every codec its libraries support, offsets for times."""
from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import codec as aio_codec

TIMEOUT = 20
BASE_TS = 1_700_000_000_000
CODECS = [c for c in ("gzip", "snappy", "lz4", "zstd") if getattr(aio_codec, f"has_{c}")()]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


async def _produce(broker, records, **config):
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, **config)
    await producer.start()
    try:
        futures = [await producer.send("t", **r) for r in records]
        return [await f for f in futures]
    finally:
        await producer.stop()


async def _consume(broker, partitions, expected: int):
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                                auto_offset_reset="earliest", fetch_max_wait_ms=100)
    await consumer.start()
    try:
        consumer.assign([TopicPartition("t", p) for p in partitions])
        got = []
        while len(got) < expected:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                got.extend(batch)
        return got
    finally:
        await consumer.stop()


def test_aiokafka_keyed_records_headers_timestamps_by_assignment(broker):
    records = [{"key": b"key-%d" % i, "value": b"value-%d" % i, "partition": i % 2, "timestamp_ms": BASE_TS + 1000 * i,
                "headers": [("h", b"%d" % i), ("src", b"aiokafka")]} for i in range(20)]
    sent = run(_produce(broker, records))
    assert sorted((m.partition, m.offset) for m in sent) == sorted((i % 2, i // 2) for i in range(20))
    got = run(_consume(broker, [0, 1], 20))
    assert sorted((r.partition, r.offset, r.key, r.value, r.timestamp, tuple(r.headers)) for r in got) == sorted(
        (i % 2, i // 2, b"key-%d" % i, b"value-%d" % i, BASE_TS + 1000 * i, (("h", b"%d" % i), ("src", b"aiokafka")))
        for i in range(20))


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_compression_round_trip(broker, codec):
    values = [(b"%05d-" % i) * (i % 40 + 1) for i in range(300)]
    run(_produce(broker, [{"key": b"k%d" % i, "value": v, "partition": 0} for i, v in enumerate(values)],
                 compression_type=codec, linger_ms=20))
    got = run(_consume(broker, [0], 300))
    assert [r.value for r in got] == values and [r.offset for r in got] == list(range(300))
    codecs = {b.codec for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
              for t in f.body["topic_data"] for p in t["partition_data"] for b in p["records"]}
    assert codecs == {codec}


def test_aiokafka_offsets_for_times(broker):
    run(_produce(broker, [{"value": b"v%d" % i, "partition": 1, "timestamp_ms": BASE_TS + 1000 * i} for i in range(10)]))

    async def lookup():
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        await consumer.start()
        try:
            tp = TopicPartition("t", 1)
            found = await consumer.offsets_for_times({tp: BASE_TS + 3500})
            beyond = await consumer.offsets_for_times({tp: BASE_TS + 10**7})
            ends = await consumer.end_offsets([tp]), await consumer.beginning_offsets([tp])
            return found[tp], beyond[tp], ends
        finally:
            await consumer.stop()
    found, beyond, (end, begin) = run(lookup())
    assert (found.offset, found.timestamp) == (4, BASE_TS + 4000) and beyond is None
    assert end[TopicPartition("t", 1)] == 10 and begin[TopicPartition("t", 1)] == 0


def test_aiokafka_admin_create_describe_alter_delete(broker):
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def flow():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("aio-admin", 2, 1, topic_configs={"retention.ms": "3600000"})])
            await admin.create_partitions({"aio-admin": NewPartitions(4)})
            described = await admin.describe_topics(["aio-admin"])
            await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "aio-admin",
                                                      {"cleanup.policy": "compact"})])
            configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "aio-admin",
                                                                   {"cleanup.policy": None, "retention.ms": None})])
            await admin.delete_topics(["aio-admin"])
            return described, configs, sorted(await admin.list_topics())
        finally:
            await admin.close()
    described, configs, after = run(flow())
    assert [len(t["partitions"]) for t in described if t["topic"] == "aio-admin"] == [4]
    entries = {c[0]: c[1] for r in configs for res in r.resources for c in res[4]}
    # AlterConfigs replaces the whole set: retention.ms (set at creation) is back to its default
    assert entries == {"cleanup.policy": "compact", "retention.ms": "604800000"}
    assert "aio-admin" not in after and "t" in after
