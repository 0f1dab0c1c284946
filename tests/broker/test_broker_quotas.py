"""Client quotas: AlterClientQuotas / DescribeClientQuotas through kafkalab's codec (no Python client speaks
them), and real producers and consumers throttled by byte-rate quotas (KIP-219: the answer carries
throttle_time_ms at once, then the broker reads nothing more from that connection for that long)."""
from __future__ import annotations

import time

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.protocol import ErrorCode


@pytest.fixture
def broker():
    with Broker(topics={"t": 1}) as b:
        yield b


def test_alter_and_describe_client_quotas(broker):
    client = RawClient(broker.bootstrap_servers)
    try:
        altered = client.call("AlterClientQuotas", 1, {"validate_only": False, "entries": [
            {"entity": [{"entity_type": "client-id", "entity_name": "slow"}],
             "ops": [{"key": "producer_byte_rate", "value": 1000.0, "remove": False}]},
            {"entity": [{"entity_type": "user", "entity_name": None}],
             "ops": [{"key": "consumer_byte_rate", "value": 5e5, "remove": False}]},
            {"entity": [{"entity_type": "user", "entity_name": "x"}],
             "ops": [{"key": "no_such_quota", "value": 1.0, "remove": False}]}]})
        assert [e["error_code"] for e in altered["entries"]] == [ErrorCode.NONE, ErrorCode.NONE,
                                                                  ErrorCode.INVALID_REQUEST]
        described = client.call("DescribeClientQuotas", 1, {"strict": False, "components": [
            {"entity_type": "client-id", "match_type": 0, "match": "slow"}]})
        assert described["entries"] == [{"entity": [{"entity_type": "client-id", "entity_name": "slow"}],
                                         "values": [{"key": "producer_byte_rate", "value": 1000.0}]}]
        defaults = client.call("DescribeClientQuotas", 1, {"strict": True, "components": [
            {"entity_type": "user", "match_type": 1, "match": None}]})["entries"]
        assert [v["key"] for e in defaults for v in e["values"]] == ["consumer_byte_rate"]
        client.call("AlterClientQuotas", 1, {"validate_only": False, "entries": [
            {"entity": [{"entity_type": "client-id", "entity_name": "slow"}],
             "ops": [{"key": "producer_byte_rate", "value": 0.0, "remove": True}]}]})
        assert client.call("DescribeClientQuotas", 1, {"strict": False, "components": [
            {"entity_type": "client-id", "match_type": 2, "match": None}]})["entries"] == []
    finally:
        client.close()


def _produce_throttles(broker) -> list[tuple[float, int]]:
    return [(f.ts, f.body["throttle_time_ms"]) for f in broker.journal
            if f.api_name == "Produce" and f.kind == "response"]


def test_kafka_python_producer_is_throttled_and_muted(broker):
    from kafka import KafkaProducer
    broker.set_quota(client_id="slow", producer_byte_rate=20_000)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, client_id="slow", linger_ms=0,
                             max_in_flight_requests_per_connection=1)
    start = time.monotonic()
    try:
        for _ in range(6):
            producer.send("t", b"x" * 10_000).get(30)
    finally:
        producer.close(5)
    elapsed = time.monotonic() - start
    throttles = _produce_throttles(broker)
    assert any(ms > 0 for _, ms in throttles)
    # 60 kB at 20 kB/s: the throttled client cannot finish much faster than the quota allows
    assert elapsed >= 1.0, (elapsed, throttles)
    requests = [f.ts for f in broker.journal if f.api_name == "Produce" and f.kind == "request"]
    first_throttled = next(i for i, (_, ms) in enumerate(throttles) if ms > 0)
    if first_throttled + 1 < len(requests):      # the next request was read only after the mute
        gap = requests[first_throttled + 1] - throttles[first_throttled][0]
        assert gap >= throttles[first_throttled][1] / 1000 * 0.9, (gap, throttles)


def test_confluent_consumer_is_throttled(broker):
    from confluent_kafka import Consumer, Producer, TopicPartition
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for _ in range(20):
        producer.produce("t", b"y" * 5_000)
    producer.flush(15)
    del producer
    broker.set_quota(client_id="reader", consumer_byte_rate=10_000)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused", "client.id": "reader",
                         "enable.auto.commit": False, "fetch.max.bytes": 20_000, "max.partition.fetch.bytes": 20_000,
                         "message.max.bytes": 10_000})
    consumer.assign([TopicPartition("t", 0, 0)])
    got, deadline = 0, time.monotonic() + 40
    while got < 20 and time.monotonic() < deadline:
        if consumer.poll(1) is not None:
            got += 1
    consumer.close()
    assert got == 20
    fetch_throttles = [f.body["throttle_time_ms"] for f in broker.journal
                       if f.api_name == "Fetch" and f.kind == "response"]
    assert max(fetch_throttles) > 0
