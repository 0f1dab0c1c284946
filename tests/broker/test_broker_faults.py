"""Fault injection seen by real clients: each fault kind fires, the journal says so, and the client recovers
where Kafka's clients do (retries after NOT_LEADER, a dropped connection, a garbled or cut answer)."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest
from kafka import KafkaProducer

from kafkalab.broker import Broker
from kafkalab.protocol import ApiKey, ErrorCode

TIMEOUT = 30


def _kp(broker, **kw):
    return KafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000, retries=5,
                         retry_backoff_ms=50, **kw)


def _ck(broker, **config):
    return ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                        "enable.idempotence": True, "message.timeout.ms": TIMEOUT * 1000, **config})


def _deliver(producer, values, partition=0, ok=True):
    reports = []
    for v in values:
        producer.produce("t", v, partition=partition, on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(TIMEOUT) == 0
    if ok:
        assert [err for err, _ in reports if err] == []
    return reports


def _log(broker, partition=0) -> list[bytes]:
    """The values stored in a partition, read back through the broker's own state."""
    values = []
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             fetch_max_wait_ms=100, request_timeout_ms=10000)
    tp = TopicPartition("t", partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    deadline = time.time() + TIMEOUT
    while consumer.position(tp) < end and time.time() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            values += [r.value for r in batch]
    consumer.close()
    return values


def _responses(broker, api):
    return [f for f in broker.journal if f.api_key == api and f.kind == "response"]


def _noted(broker, text):
    return [f for f in broker.journal if any(text in d for d in f.diagnostics)]


@pytest.fixture
def broker():
    with Broker(topics={"t": 1}) as b:
        yield b


def test_not_leader_on_produce_is_retried_by_kafka_python_and_not_appended(broker):
    rule = broker.faults.inject(api="Produce", error="NOT_LEADER_OR_FOLLOWER", times=1, topic="t")
    producer = _kp(broker)
    meta = producer.send("t", b"once", partition=0).get(TIMEOUT)
    producer.close()
    assert rule.fired == 1 and broker.faults.armed == []
    assert [f.rule for f in broker.faults.fired] == [rule.id]
    errors = [f.error_code for f in _responses(broker, ApiKey.PRODUCE)]
    assert errors == [ErrorCode.NOT_LEADER_OR_FOLLOWER, 0]
    assert meta.offset == 0 and _log(broker) == [b"once"]       # the refused attempt appended nothing
    refused = _noted(broker, "fault injected: NOT_LEADER_OR_FOLLOWER")
    assert [f.kind for f in refused] == ["request", "response"]
    assert "fault injected: NOT_LEADER_OR_FOLLOWER" in broker.frames.diagnostics.map(" ".join).str.cat(sep=" ")


def test_error_fault_without_topic_answers_metadata_errors_to_confluent(broker):
    broker.faults.inject(api=ApiKey.PRODUCE, error=ErrorCode.NOT_ENOUGH_REPLICAS, times=2)
    _deliver(_ck(broker), [b"a"])
    errors = [f.error_code for f in _responses(broker, ApiKey.PRODUCE)]
    assert errors[:2] == [ErrorCode.NOT_ENOUGH_REPLICAS] * 2 and errors[-1] == 0
    assert _log(broker) == [b"a"]


def test_delay_holds_the_response_back(broker):
    producer = _kp(broker)
    producer.send("t", b"warm", partition=0).get(TIMEOUT)
    broker.faults.inject(api="Produce", kind="delay", seconds=1.5)
    start = time.monotonic()
    producer.send("t", b"slow", partition=0).get(TIMEOUT)
    assert time.monotonic() - start >= 1.4
    producer.close()
    response = _responses(broker, ApiKey.PRODUCE)[-1]
    assert response.latency_ms >= 1400 and "held 1.5 s (fault)" in response.diagnostics


def test_dropped_connection_is_reconnected_and_retried(broker):
    producer = _ck(broker)
    _deliver(producer, [b"first"])
    broker.faults.inject(api="Produce", kind="drop")
    _deliver(producer, [b"second"])
    assert _log(broker) == [b"first", b"second"]
    dropped = _noted(broker, "fault injected: drop")
    assert [f.kind for f in dropped] == ["request"] and dropped[0].response_frame is None


@pytest.mark.parametrize("kind", ["truncate", "garble"])
def test_unreadable_response_is_reported_by_librdkafka_which_carries_on(broker, kind):
    """librdkafka cannot parse the answer: the record's delivery fails with a local parse error (it does not
    retry: the write may have happened), and the producer goes on delivering."""
    producer = _ck(broker)
    _deliver(producer, [b"first"])
    broker.faults.inject(api="Produce", kind=kind)
    [(err, _)] = _deliver(producer, [b"second"], ok=False)
    assert err is not None and err.code() in (ck.KafkaError._UNDERFLOW, ck.KafkaError._BAD_MSG), err
    _deliver(producer, [b"third"])
    assert _log(broker) == [b"first", b"second", b"third"]
    spoiled = _noted(broker, f"fault injected: {kind}")
    assert [f.kind for f in spoiled] == ["request", "response"]
    assert any(d.startswith("malformed") for d in spoiled[1].diagnostics), spoiled[1].diagnostics


def test_throttle_reaches_librdkafka_throttle_callback(broker):
    events = []
    producer = _ck(broker, throttle_cb=events.append)
    broker.faults.inject(api="Produce", kind="throttle", throttle_ms=700)
    _deliver(producer, [b"x"])
    deadline = time.time() + 10
    while not events and time.time() < deadline:
        producer.poll(0.1)
    assert events and events[0].throttle_time == pytest.approx(0.7)
    assert _responses(broker, ApiKey.PRODUCE)[0].body["throttle_time_ms"] == 700


def test_move_leader_fault_sends_the_client_to_the_new_leader():
    with Broker(topics={"t": 1}, nodes=3) as broker:
        before = broker.leaders("t")[0]
        broker.faults.inject(api="Produce", kind="move_leader", topic="t", partition=0)
        producer = _kp(broker, acks="all")
        meta = producer.send("t", b"moved", partition=0).get(TIMEOUT)
        producer.close()
        after = broker.leaders("t")[0]
        assert after != before and meta.offset == 0
        answers = _responses(broker, ApiKey.PRODUCE)
        port = broker.node_addresses[after][1]
        assert answers[-1].src.endswith(f":{port}") and answers[-1].error_code == 0
        assert answers[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert _log(broker) == [b"moved"]


def test_inject_refuses_unknown_kinds_and_errors(broker):
    with pytest.raises(ValueError, match="fault kind"):
        broker.faults.inject(api="Produce", kind="explode")
    with pytest.raises(KeyError):
        broker.faults.inject(api="Produce", error="NO_SUCH_ERROR")
    assert broker.faults.armed == []
