"""Real clients over SASL_PLAINTEXT: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with kafka-python, confluent-kafka
(librdkafka), aiokafka and kcat, each producing and reading back (by assigned partition), and each refused with a
wrong password (kafkajs: test_broker_kafkajs_security.py)."""
from __future__ import annotations

import asyncio
import subprocess

import pytest

from kafkalab.broker import Broker
from kafkalab.protocol import ErrorCode

from tests.tools import require_tool

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
USER, SECRET = "alice", "alice-secret"


@pytest.fixture(scope="module")
def broker():
    with Broker(sasl_port=0, users={USER: SECRET}, topics={"t": 1}) as b:
        yield b


def refusals(broker) -> int:
    """SaslAuthenticate answers with SASL_AUTHENTICATION_FAILED in the journal so far."""
    return sum(1 for f in broker.journal if f.api_name == "SaslAuthenticate" and f.kind == "response"
               and f.body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED)


def _kafka_python(broker, mechanism, password=SECRET):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    auth = dict(bootstrap_servers=broker.sasl_bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=password,
                bootstrap_timeout_ms=8000)
    producer = KafkaProducer(**auth)
    metadata = producer.send("t", f"kafka-python {mechanism}".encode()).get(15)
    producer.close(5)
    consumer = KafkaConsumer(**auth, enable_auto_commit=False, consumer_timeout_ms=5000)
    consumer.assign([TopicPartition("t", 0)])
    consumer.seek(TopicPartition("t", 0), metadata.offset)
    value = next(iter(consumer)).value
    consumer.close()
    return value.decode()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_sasl(broker, mechanism):
    assert _kafka_python(broker, mechanism) == f"kafka-python {mechanism}"


def test_kafka_python_wrong_password(broker):
    from kafka.errors import KafkaError
    before = refusals(broker)
    with pytest.raises(KafkaError):          # kafka-python retries the bootstrap, then times out
        _kafka_python(broker, "SCRAM-SHA-512", password="wrong")
    assert refusals(broker) > before


def _confluent(broker, mechanism, password=SECRET):
    from confluent_kafka import Consumer, Producer, TopicPartition
    auth = {"bootstrap.servers": broker.sasl_bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": password}
    delivered = []
    producer = Producer({**auth, "message.timeout.ms": 15000})
    producer.produce("t", f"confluent {mechanism}".encode(), on_delivery=lambda err, msg: delivered.append((err, msg)))
    producer.flush(20)
    err, msg = delivered[0]
    if err is not None:
        return err
    consumer = Consumer({**auth, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition("t", 0, msg.offset())])
    got = consumer.poll(15)
    consumer.close()
    return got.value().decode()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_sasl(broker, mechanism):
    assert _confluent(broker, mechanism) == f"confluent {mechanism}"


def test_confluent_kafka_wrong_password(broker):
    from confluent_kafka import KafkaError, Producer
    errors = []
    producer = Producer({"bootstrap.servers": broker.sasl_bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER, "sasl.password": "wrong",
                         "error_cb": errors.append, "message.timeout.ms": 3000})
    producer.produce("t", b"never")
    producer.flush(10)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


async def _aiokafka(broker, mechanism, password=SECRET):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    auth = dict(bootstrap_servers=broker.sasl_bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=password)
    producer = AIOKafkaProducer(**auth, request_timeout_ms=15000)
    await producer.start()
    try:
        metadata = await producer.send_and_wait("t", f"aiokafka {mechanism}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(**auth, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition("t", 0)])
        consumer.seek(TopicPartition("t", 0), metadata.offset)
        record = await asyncio.wait_for(consumer.getone(), 15)
    finally:
        await consumer.stop()
    return record.value.decode()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_sasl(broker, mechanism):
    assert asyncio.run(asyncio.wait_for(_aiokafka(broker, mechanism), 60)) == f"aiokafka {mechanism}"


def test_aiokafka_wrong_password(broker):
    from aiokafka.errors import KafkaError
    with pytest.raises(KafkaError):
        asyncio.run(asyncio.wait_for(_aiokafka(broker, "SCRAM-SHA-256", password="wrong"), 60))


def _kcat(broker, mechanism, *args, password=SECRET, data=None):
    return subprocess.run([require_tool("kcat"), "-b", broker.sasl_bootstrap_servers, "-m", "15",
                           "-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanisms={mechanism}",
                           "-X", f"sasl.username={USER}", "-X", f"sasl.password={password}", *args],
                          input=data, capture_output=True, text=True, timeout=40)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_sasl(broker, mechanism):
    sent = _kcat(broker, mechanism, "-P", "-t", "t", "-p", "0", data=f"kcat {mechanism}\n")
    assert sent.returncode == 0, sent.stderr
    read = _kcat(broker, mechanism, "-C", "-t", "t", "-p", "0", "-o", "-1", "-e", "-f", "%s\\n")
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines() == [f"kcat {mechanism}"]


def test_kcat_wrong_password(broker):
    done = _kcat(broker, "SCRAM-SHA-512", "-L", password="wrong")
    assert done.returncode != 0 and "Authentication failed" in done.stderr, done.stderr


def test_confluent_kafka_oauthbearer_unsecured_token():
    from confluent_kafka import Producer
    with Broker(sasl_port=0, sasl_mechanisms=("PLAIN", "OAUTHBEARER"), topics={"t": 1}) as broker:
        delivered = []
        producer = Producer({"bootstrap.servers": broker.sasl_bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "principal=carol",
                             "enable.sasl.oauthbearer.unsecure.jwt": True, "message.timeout.ms": 15000})
        producer.produce("t", b"bearer", on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(20)
        assert delivered == [None]
        broker.add_acl("User:dave", "WRITE", "TOPIC", "t")     # now only dave may write: carol's token is refused
        producer.produce("t", b"again", on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(20)
        assert delivered[1].name() == "TOPIC_AUTHORIZATION_FAILED"
