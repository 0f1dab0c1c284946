"""Version personas: Broker(emulate=...) advertises and enforces a Kafka release's API ranges, and real
clients negotiate as they would with that release."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest
from broker_helpers import RawClient
from kafka import KafkaAdminClient

from kafkalab.broker import Broker
from kafkalab.broker.controls.personas import release_name, releases
from kafkalab.protocol import ApiKey, ErrorCode

TIMEOUT = 20
# Releases whose new versions are all in APIs kafkalab serves; for 2.5, 2.6 and 3.2-3.4 the versions that tell
# them apart are in APIs it does not serve yet (group and ACL APIs), so kafka-python may see an older release.
DISTINCT = {"0.10.0", "0.10.1", "0.10.2", "0.11", "1.0", "1.1", "2.0", "2.1", "2.2", "2.3", "2.4", "2.7", "2.8",
            "3.0", "3.1", "3.5", "3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_kafka_python_infers_each_emulated_release():
    inferred = {}
    for release in releases():
        with Broker(emulate=release) as broker:
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
            try:
                inferred[release] = ".".join(map(str, admin._manager.broker_version))
            finally:
                admin.close()
    assert {r for r, seen in inferred.items() if seen == r} >= DISTINCT   # more once the broker serves more APIs
    assert all(_version(seen) <= _version(r) for r, seen in inferred.items()), inferred


def _produce_one(broker) -> None:
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    producer.produce("t", b"hello", partition=0)
    assert producer.flush(TIMEOUT) == 0


@pytest.fixture(scope="module")
def librdkafka_produce_version():
    """The Produce version librdkafka picks when the broker offers everything kafkalab serves."""
    with Broker(topics={"t": 1}) as broker:
        _produce_one(broker)
        return max(f.api_version for f in broker.journal if f.api_key == ApiKey.PRODUCE)


@pytest.mark.parametrize("release", ["0.10.0", "0.11", "2.8", "4.0"])
def test_librdkafka_negotiates_within_the_persona_and_round_trips(release, librdkafka_produce_version):
    table = releases()[release]
    with Broker(emulate=release, topics={"t": 1}) as broker:
        _produce_one(broker)
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        consumer.assign([ck.TopicPartition("t", 0, ck.OFFSET_BEGINNING)])
        got, deadline = None, time.time() + TIMEOUT
        while got is None and time.time() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got = msg.value()
        consumer.close()
        assert got == b"hello"
        requests = [f for f in broker.journal if f.kind == "request"]
    used = {(f.api_key, f.api_version) for f in requests}
    ok = {(k, v) for k, v in used if k == ApiKey.API_VERSIONS or table[k][0] <= v <= table[k][1]}
    assert used == ok, sorted(used - ok)
    produce = max(v for k, v in used if k == ApiKey.PRODUCE)
    assert produce == min(table[ApiKey.PRODUCE][1], librdkafka_produce_version)


def test_librdkafka_produces_to_every_persona_within_its_ranges(librdkafka_produce_version):
    for release, table in releases().items():
        with Broker(emulate=release, topics={"t": 1}) as broker:
            _produce_one(broker)
            used = {(f.api_key, f.api_version) for f in broker.journal if f.kind == "request"}
        outside = {(k, v) for k, v in used if k != ApiKey.API_VERSIONS and not table[k][0] <= v <= table[k][1]}
        assert not outside, (release, sorted(outside))
        produce = max(v for k, v in used if k == ApiKey.PRODUCE)
        assert produce == min(table[ApiKey.PRODUCE][1], librdkafka_produce_version), release


def test_persona_advertises_only_what_the_release_had_and_refuses_newer_versions():
    with Broker(emulate="2.0") as broker:
        client = RawClient(broker.bootstrap_servers)
        try:
            keys = {k["api_key"]: (k["min_version"], k["max_version"])
                    for k in client.call(ApiKey.API_VERSIONS, 0)["api_keys"]}
            table = releases()["2.0"]
            assert ApiKey.DESCRIBE_CLUSTER not in keys and ApiKey.DESCRIBE_TOPIC_PARTITIONS not in keys
            assert keys[ApiKey.PRODUCE] == (0, 6) and keys[ApiKey.METADATA] == table[ApiKey.METADATA]
            assert all(table[k][0] <= lo <= hi <= table[k][1] for k, (lo, hi) in keys.items())
            answer = client.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1})
            assert answer["error_code"] == ErrorCode.UNSUPPORTED_VERSION
            assert client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                             "transaction_timeout_ms": 1})["error_code"] == 0
            client.send(ApiKey.DESCRIBE_CLUSTER, 0, {})
            assert client.is_closed()                  # a 2.0 broker did not know DescribeCluster
        finally:
            client.close()


def test_release_names_and_the_cli_flag():
    assert release_name("2.8.1") == "2.8" and release_name("0.10") == "0.10.0" and release_name("4.3") == "4.3"
    with pytest.raises(ValueError, match="no persona"):
        release_name("9.9")
    assert list(releases())[0] == "0.10.0" and list(releases())[-1] == "4.3"
