"""Client metrics (KIP-714) end to end: kafka-python's admin makes a CLIENT_METRICS config resource, lists and
describes it; librdkafka (confluent-kafka) fetches the subscription it selects and pushes its metrics, which the
broker keeps; clients the resource does not match are asked for nothing."""
from __future__ import annotations

import time
import uuid

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.protocol import ApiKey, ErrorCode

CLIENT_METRICS = 16


@pytest.fixture()
def broker():
    with Broker(topics={"t": 1}) as b:
        yield b


def _subscribe(broker, **configs) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        done = admin.alter_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, "producers", configs)])
        assert done == {"client_metrics": {"producers": "OK"}}
        assert admin.list_config_resources(["CLIENT_METRICS"]) == {"client_metrics": ["producers"]}
        assert admin.list_config_resources() == {"topic": ["t"], "broker": ["1"], "client_metrics": ["producers"]}
        described = admin.describe_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, "producers")])
        values = {k: v["value"] for k, v in described["client_metrics"]["producers"].items()}
        assert values == {"interval.ms": "500", "match": "client_id=lab-.*", "metrics": "org.apache.kafka.producer."}
    finally:
        admin.close()


def _produce_for(broker, client_id: str, seconds: float = 2.5) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": client_id})
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        producer.produce("t", b"x")
        producer.poll(0.2)
    producer.flush(5)


def test_librdkafka_pushes_the_metrics_its_subscription_asks_for(broker):
    _subscribe(broker, metrics="org.apache.kafka.producer.", **{"interval.ms": "500", "match": "client_id=lab-.*"})
    _produce_for(broker, "lab-1")
    _produce_for(broker, "other", seconds=1.0)
    answers = {f.body["client_instance_id"]: f.body for f in broker.journal
               if f.api_key == ApiKey.GET_TELEMETRY_SUBSCRIPTIONS and f.kind == "response"}
    asked = {a["requested_metrics"][0] if a["requested_metrics"] else None for a in answers.values()}
    assert asked == {"org.apache.kafka.producer.", None}          # lab-1 is subscribed, "other" is not
    pushed = broker.state.telemetry.pushes
    assert len(pushed) == 1 and len(next(iter(pushed.values()))) >= 2      # every 500 ms
    assert all(b"org.apache.kafka.producer." in p.metrics for p in next(iter(pushed.values())))


def test_a_changed_subscription_and_bad_configs_are_refused(broker):
    raw = RawClient(broker.bootstrap_servers)

    def alter(name: str, value: str) -> int:
        return raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": CLIENT_METRICS, "resource_name": "all", "configs": [
                {"name": name, "config_operation": 0, "value": value}]}], "validate_only": False})[
            "responses"][0]["error_code"]
    assert alter("match", "colour=blue") == ErrorCode.INVALID_CONFIG
    assert alter("interval.ms", "5") == ErrorCode.INVALID_CONFIG
    assert alter("metrics", "*") == ErrorCode.NONE
    listed = raw.call(ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, {})
    assert [r["resource_name"] for r in listed["config_resources"]] == ["all"]
    got = raw.call(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.UUID(int=0)})
    assert got["requested_metrics"] == [""]                                  # "*": every metric (KIP-714)
    push = {"client_instance_id": got["client_instance_id"], "subscription_id": got["subscription_id"],
            "terminating": False, "compression_type": 0, "metrics": b"otlp"}
    assert raw.call(ApiKey.PUSH_TELEMETRY, 0, push)["error_code"] == ErrorCode.NONE
    assert alter("interval.ms", "1000") == ErrorCode.NONE
    assert raw.call(ApiKey.PUSH_TELEMETRY, 0, push)["error_code"] == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    raw.close()
