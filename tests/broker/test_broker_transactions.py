"""Transactions with real clients (confluent-kafka, kafka-python, aiokafka): commit, abort, read_committed
versus read_uncommitted, consume-transform-produce with send_offsets_to_transaction, a fenced zombie, and a
broker killed during an open transaction. Consumers use manual assignment; the group id only names where
send_offsets_to_transaction commits (TxnOffsetCommit needs no membership for generation -1)."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import confluent_kafka as ck
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTP
from aiokafka.structs import OffsetAndMetadata as AioOffset
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata as KOffset

from tests.tools import require_tool

from kafkalab.broker import Broker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 20
COMMITTED, ABORTED = [b"c1", b"c2", b"c3"], [b"a1", b"a2"]


@pytest.fixture
def broker():
    with Broker(topics={"t": 2, "in": 1, "out": 1}) as b:
        yield b


def read(bootstrap: str, topic: str, isolation: str, partitions=(0, 1), deadline: float = TIMEOUT) -> list[bytes]:
    """Every record of ``topic`` up to the end (the last stable offset for read_committed), by assignment."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": isolation,
                            "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in partitions])
    got, at_end, end = [], set(), time.time() + deadline
    try:
        while len(at_end) < len(partitions) and time.time() < end:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == ck.KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
            else:
                got.append(message.value())
    finally:
        consumer.close()
    assert len(at_end) == len(partitions), f"did not reach the end of {topic} ({isolation})"
    return sorted(got)


def assert_isolation(broker, topic="t"):
    assert read(broker.bootstrap_servers, topic, "read_committed") == sorted(COMMITTED)
    assert read(broker.bootstrap_servers, topic, "read_uncommitted") == sorted(COMMITTED + ABORTED)


def committed_offset(broker, group, topic, partition):
    found = broker._on_loop(broker.state.store.fetch_committed, group, topic, partition)
    return None if found is None else found.offset


def fill_input(broker, values):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    for v in values:
        producer.produce("in", v, partition=0)
    assert producer.flush(TIMEOUT) == 0


def control_batches(broker, topic="t"):
    """(partition, marker type) of every control batch Fetch served from ``topic``, as the journal decoded it."""
    seen = set()
    for frame in broker.journal:
        if frame.api_name == "Fetch" and frame.kind == "response":
            for t in frame.body["responses"]:
                for p in t["partitions"]:
                    for batch in p["records"] or ():
                        if getattr(batch, "control", False) and t.get("topic", topic) == topic:
                            seen.add((p["partition_index"], batch.records[0].control.type, batch.base_offset))
    return seen


# --- confluent-kafka ---------------------------------------------------------------------------------------

def _ck_producer(broker, transactional_id, **extra):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": transactional_id,
                            "transaction.timeout.ms": 60000, "linger.ms": 5, **extra})
    producer.init_transactions(TIMEOUT)
    return producer


def test_confluent_commit_abort_and_isolation(broker):
    producer = _ck_producer(broker, "ck-app")
    for values, commit in ((COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)):
        producer.begin_transaction()
        for i, v in enumerate(values):
            producer.produce("t", v, partition=i % 2)
        producer.flush(TIMEOUT)
        (producer.commit_transaction if commit else producer.abort_transaction)(TIMEOUT)
    assert_isolation(broker)
    markers = control_batches(broker)
    assert {(p, kind) for p, kind, _ in markers} == {(0, 1), (1, 1), (0, 0), (1, 0)}


def test_confluent_consume_transform_produce(broker):
    fill_input(broker, [b"x%d" % i for i in range(5)])
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ctp",
                            "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([ck.TopicPartition("in", 0, 0)])
    producer = _ck_producer(broker, "ck-ctp")
    for commit in (False, True):
        consumer.assign([ck.TopicPartition("in", 0, 0)])
        producer.begin_transaction()
        got = []
        end = time.time() + TIMEOUT
        while len(got) < 5 and time.time() < end:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message)
                producer.produce("out", message.value().upper(), partition=0)
        producer.flush(TIMEOUT)                  # an abort drops what librdkafka has not sent yet
        producer.send_offsets_to_transaction([ck.TopicPartition("in", 0, got[-1].offset() + 1)],
                                             consumer.consumer_group_metadata(), TIMEOUT)
        assert committed_offset(broker, "ctp", "in", 0) is None                # pending until the commit
        (producer.commit_transaction if commit else producer.abort_transaction)(TIMEOUT)
    consumer.close()
    assert committed_offset(broker, "ctp", "in", 0) == 5
    assert read(broker.bootstrap_servers, "out", "read_committed", (0,)) == [b"X%d" % i for i in range(5)]
    assert len(read(broker.bootstrap_servers, "out", "read_uncommitted", (0,))) == 10


def test_confluent_zombie_is_fenced(broker):
    zombie = _ck_producer(broker, "ck-zombie")
    zombie.begin_transaction()
    zombie.produce("t", b"zombie", partition=0)
    zombie.flush(TIMEOUT)
    successor = _ck_producer(broker, "ck-zombie")          # aborts the zombie's transaction, bumps the epoch
    with pytest.raises(ck.KafkaException) as caught:
        zombie.commit_transaction(TIMEOUT)
    assert caught.value.args[0].fatal() and caught.value.args[0].code() == ck.KafkaError._FENCED
    successor.begin_transaction()
    successor.produce("t", b"successor", partition=0)
    successor.commit_transaction(TIMEOUT)
    assert read(broker.bootstrap_servers, "t", "read_committed") == [b"successor"]


def test_confluent_transaction_timeout_aborts(broker):
    producer = _ck_producer(broker, "ck-slow", **{"transaction.timeout.ms": 1500})
    producer.begin_transaction()
    producer.produce("t", b"too-slow", partition=1)
    producer.flush(TIMEOUT)
    end = time.time() + TIMEOUT
    while broker._on_loop(lambda: broker.state.transactions.txns["ck-slow"].state.label) != "CompleteAbort":
        assert time.time() < end, "the transaction was not aborted by its timeout"
        time.sleep(0.2)
    assert read(broker.bootstrap_servers, "t", "read_committed") == []
    assert read(broker.bootstrap_servers, "t", "read_uncommitted") == [b"too-slow"]
    with pytest.raises(ck.KafkaException):
        producer.commit_transaction(TIMEOUT)


# --- kafka-python ------------------------------------------------------------------------------------------

def _kp_producer(broker, transactional_id):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=transactional_id,
                             linger_ms=5)
    producer.init_transactions()
    return producer


def _kp_read(broker, topic, isolation, partitions, expected):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, isolation_level=isolation,
                             enable_auto_commit=False, fetch_max_wait_ms=50)
    consumer.assign([KTP(topic, p) for p in partitions])
    consumer.seek_to_beginning()
    got, end = [], time.time() + TIMEOUT
    while len(got) < expected and time.time() < end:
        for records in consumer.poll(200).values():
            got += records
    time.sleep(0.3)
    for records in consumer.poll(200).values():
        got += records
    consumer.close()
    return got


def test_kafka_python_commit_abort_and_isolation(broker):
    producer = _kp_producer(broker, "kp-app")
    for values, commit in ((COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)):
        producer.begin_transaction()
        for i, v in enumerate(values):
            producer.send("t", v, partition=i % 2)
        producer.flush()
        producer.commit_transaction() if commit else producer.abort_transaction()
    producer.close()
    assert_isolation(broker)
    assert sorted(r.value for r in _kp_read(broker, "t", "read_committed", (0, 1), 3)) == sorted(COMMITTED)
    assert sorted(r.value for r in _kp_read(broker, "t", "read_uncommitted", (0, 1), 5)) == sorted(
        COMMITTED + ABORTED)


def test_kafka_python_consume_transform_produce_and_fencing(broker):
    fill_input(broker, [b"x%d" % i for i in range(5)])
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="kp-ctp",
                             enable_auto_commit=False, isolation_level="read_committed", fetch_max_wait_ms=50)
    consumer.assign([KTP("in", 0)])
    consumer.seek_to_beginning()
    producer = _kp_producer(broker, "kp-ctp")
    producer.begin_transaction()
    got, end = [], time.time() + TIMEOUT
    while len(got) < 5 and time.time() < end:
        for records in consumer.poll(200).values():
            got += records
    for record in got:
        producer.send("out", record.value.upper(), partition=0)
    producer.send_offsets_to_transaction({KTP("in", 0): KOffset(got[-1].offset + 1, "", -1)}, "kp-ctp")
    producer.commit_transaction()
    consumer.close()
    assert committed_offset(broker, "kp-ctp", "in", 0) == 5
    assert read(broker.bootstrap_servers, "out", "read_committed", (0,)) == [b"X%d" % i for i in range(5)]
    producer.begin_transaction()
    producer.send("out", b"zombie", partition=0)
    producer.flush()
    successor = _kp_producer(broker, "kp-ctp")
    with pytest.raises(KafkaError):
        producer.commit_transaction()
    successor.close()
    producer.close(timeout=1)
    assert b"zombie" not in read(broker.bootstrap_servers, "out", "read_committed", (0,))


# --- aiokafka ----------------------------------------------------------------------------------------------

def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT * 2))


async def _aio_flows(bootstrap: str) -> tuple[list, list]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-app")
    await producer.start()
    try:
        for values, commit in ((COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)):
            await producer.begin_transaction()
            for i, v in enumerate(values):
                await producer.send_and_wait("t", v, partition=i % 2)
            await (producer.commit_transaction() if commit else producer.abort_transaction())
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                    enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=50)
        await consumer.start()
        consumer.assign([AioTP("in", 0)])
        got = []
        while len(got) < 5:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                got += batch
        async with producer.transaction():
            for record in got:
                await producer.send("out", record.value.upper(), partition=0)
            await producer.send_offsets_to_transaction({AioTP("in", 0): AioOffset(got[-1].offset + 1, "")},
                                                       "aio-ctp")
        await consumer.stop()
        committed = []
        for isolation, expected in (("read_committed", 3), ("read_uncommitted", 5)):
            reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                      enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=50)
            await reader.start()
            reader.assign([AioTP("t", 0), AioTP("t", 1)])
            seen: list = []
            quiet = 0
            while len(seen) < expected or quiet < 3:          # then a few empty polls: nothing more comes
                batches = (await reader.getmany(timeout_ms=100)).values()
                quiet = 0 if any(batches) else quiet + 1
                for batch in batches:
                    seen += [r.value for r in batch]
            committed.append(sorted(seen))
            await reader.stop()
        return committed, got
    finally:
        await producer.stop()


def test_aiokafka_commit_abort_isolation_and_consume_transform_produce(broker):
    fill_input(broker, [b"x%d" % i for i in range(5)])
    (read_committed, read_uncommitted), got = run(_aio_flows(broker.bootstrap_servers))
    assert len(got) == 5
    assert read_committed == sorted(COMMITTED) and read_uncommitted == sorted(COMMITTED + ABORTED)
    assert_isolation(broker)
    assert committed_offset(broker, "aio-ctp", "in", 0) == 5
    assert read(broker.bootstrap_servers, "out", "read_committed", (0,)) == [b"X%d" % i for i in range(5)]


def test_aiokafka_zombie_is_fenced(broker):
    async def flow():
        zombie = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="aio-zombie")
        successor = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="aio-zombie")
        await zombie.start()
        try:
            await zombie.begin_transaction()
            await zombie.send_and_wait("t", b"zombie", partition=0)
            await successor.start()
            with pytest.raises(Exception) as caught:
                await zombie.commit_transaction()
            return type(caught.value).__name__
        finally:
            await successor.stop()
            await zombie.stop()
    assert run(flow()) == "ProducerFenced"
    assert read(broker.bootstrap_servers, "t", "read_committed") == []


# --- kill -9 during an open transaction --------------------------------------------------------------------

KILLED_BROKER = textwrap.dedent("""
    import sys, time
    from kafkalab.broker import Broker
    broker = Broker(data_dir=sys.argv[1], topics={"t": 2, "in": 1}).start()
    print(broker.bootstrap_servers, flush=True)
    time.sleep(600)
""")


def test_sigkill_during_an_open_transaction(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", KILLED_BROKER, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    try:
        bootstrap = proc.stdout.readline().strip()
        filler = ck.Producer({"bootstrap.servers": bootstrap})
        for i in range(4):
            filler.produce("in", b"x%d" % i, partition=0)
        assert filler.flush(TIMEOUT) == 0
        producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "killed",
                                "transaction.timeout.ms": 3000})
        producer.init_transactions(TIMEOUT)
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "survivor", "enable.auto.commit": False})
        producer.begin_transaction()
        producer.produce("t", b"committed", partition=0)
        producer.send_offsets_to_transaction([ck.TopicPartition("in", 0, 2)], consumer.consumer_group_metadata(),
                                             TIMEOUT)
        producer.commit_transaction(TIMEOUT)
        producer.begin_transaction()
        producer.produce("t", b"open-0", partition=0)
        producer.produce("t", b"open-1", partition=1)
        producer.send_offsets_to_transaction([ck.TopicPartition("in", 0, 4)], consumer.consumer_group_metadata(),
                                             TIMEOUT)
        assert producer.flush(TIMEOUT) == 0
        consumer.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    with Broker(data_dir=tmp_path) as broker:
        assert committed_offset(broker, "survivor", "in", 0) == 2
        assert read(broker.bootstrap_servers, "t", "read_uncommitted") == [b"committed", b"open-0", b"open-1"]
        end = time.time() + TIMEOUT
        while broker._on_loop(lambda: broker.state.transactions.txns["killed"].state.label) != "CompleteAbort":
            assert read(broker.bootstrap_servers, "t", "read_committed", deadline=5) in ([], [b"committed"])
            assert time.time() < end, "the recovered open transaction was not aborted by its timeout"
            time.sleep(0.3)
        assert read(broker.bootstrap_servers, "t", "read_committed") == [b"committed"]
        assert committed_offset(broker, "survivor", "in", 0) == 2


# --- kcat (librdkafka 2.0): it cannot produce transactionally, but it reads either way ------------------------

def test_kcat_reads_committed_or_uncommitted(broker):
    kcat = require_tool("kcat")
    producer = _ck_producer(broker, "for-kcat")
    for values, commit in ((COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce("t", v, partition=0)
        producer.flush(TIMEOUT)                  # an abort drops what librdkafka has not sent yet
        (producer.commit_transaction if commit else producer.abort_transaction)(TIMEOUT)

    def consume(isolation):
        done = subprocess.run([kcat, "-b", broker.bootstrap_servers, "-m", "15", "-C", "-t", "t", "-p", "0",
                               "-o", "beginning", "-e", "-f", "%s\\n", "-X", f"isolation.level={isolation}"],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()
    assert consume("read_committed") == ["c1", "c2", "c3"]
    assert consume("read_uncommitted") == ["c1", "c2", "a1", "a2", "c3"]


def test_confluent_consume_transform_produce_as_a_group_member(broker):
    """The consumer subscribes (a member of the group, with a generation), so send_offsets_to_transaction's
    TxnOffsetCommit names that member and generation and the coordinator checks them."""
    fill_input(broker, [b"x%d" % i for i in range(5)])
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ctp-member",
                            "enable.auto.commit": False, "isolation.level": "read_committed",
                            "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe(["in"])
    producer = _ck_producer(broker, "ck-ctp-member")
    producer.begin_transaction()
    got, end = [], time.time() + TIMEOUT * 2
    while len(got) < 5 and time.time() < end:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message)
            producer.produce("out", message.value().upper(), partition=0)
    metadata = consumer.consumer_group_metadata()
    producer.send_offsets_to_transaction([ck.TopicPartition("in", 0, got[-1].offset() + 1)], metadata, TIMEOUT)
    producer.commit_transaction(TIMEOUT)
    consumer.close()
    named = [f.body for f in broker.journal if f.api_name == "TxnOffsetCommit" and f.kind == "request"]
    assert named and named[-1]["member_id"] and named[-1]["generation_id"] >= 1
    assert committed_offset(broker, "ctp-member", "in", 0) == 5
    assert read(broker.bootstrap_servers, "out", "read_committed", (0,)) == [b"X%d" % i for i in range(5)]
