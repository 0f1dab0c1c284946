"""Storage: partition logs in memory and in files, recovery after a restart, a torn tail, a killed process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import confluent_kafka as ck
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab.broker import Broker
from kafkalab.broker.storage import PartitionLog, Store
from kafkalab.protocol.records import build_batch, decode_records, encode_records

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _batch(values, ts=1000):
    return encode_records([build_batch([(None, v) for v in values], base_timestamp=ts)])


def _values(data):
    return [r.value for b in decode_records(data) for r in b.records]


def test_partition_log_reads_segments_and_timestamps(tmp_path):
    for log in (PartitionLog.in_memory(200), PartitionLog.open(str(tmp_path / "p"), 200)):
        for i in range(10):
            base = log.append(_batch([b"%d-a" % i, b"%d-b" % i], ts=100 * i))
            assert base == 2 * i
        assert len(log.segments) > 1 and log.high_watermark == 20
        assert _values(log.read(7, 10**6)) == [b"%d-%s" % (i // 2, b"ab"[i % 2:i % 2 + 1]) for i in range(6, 20)]
        assert log.offset_for_timestamp(450) == (10, 500) and log.max_timestamp() == (18, 900)


def test_recovery_truncates_a_torn_tail(tmp_path):
    store = Store(str(tmp_path))
    store.create_topic("r", 1)
    log = store.partition("r", 0).log
    log.append(_batch([b"one"]))
    log.append(_batch([b"two"]))
    store.close()
    segment = tmp_path / "r-0" / "00000000000000000000.log"
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(_batch([b"torn"])[:-5])
    again = Store(str(tmp_path))
    log = again.partition("r", 0).log
    assert _values(log.read(0, 10**6)) == [b"one", b"two"] and log.next_offset == 2
    assert segment.stat().st_size == size
    assert log.append(_batch([b"three"])) == 2
    again.close()


def test_restart_with_data_dir_keeps_records_offsets_and_commits(tmp_path):
    with Broker(data_dir=tmp_path, topics={"keep": 2}) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        for i in range(20):
            producer.send("keep", key=b"%d" % i, value=b"v%d" % i, partition=i % 2)
        producer.flush(20)
        producer.close()
        topic_id = broker.state.store.topic("keep").topic_id
    with Broker(data_dir=tmp_path) as broker:
        assert broker.topics == {"keep": 2} and broker.state.store.topic("keep").topic_id == topic_id
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=3000)
        consumer.assign([TopicPartition("keep", 0), TopicPartition("keep", 1)])
        got = sorted((r.partition, r.offset, r.value) for r in consumer)
        consumer.close()
        assert got == sorted((i % 2, i // 2, b"v%d" % i) for i in range(20))
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        assert producer.send("keep", value=b"next", partition=0).get(20).offset == 10
        producer.close()


KILLED_BROKER = textwrap.dedent("""
    import sys, time
    from kafkalab.broker import Broker
    broker = Broker(data_dir=sys.argv[1], topics={"durable": 1}).start()
    print(broker.bootstrap_servers, flush=True)
    time.sleep(600)
""")


def test_acknowledged_records_survive_sigkill(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", KILLED_BROKER, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    try:
        bootstrap = proc.stdout.readline().strip()
        producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
        acked = []
        for i in range(300):
            producer.produce("durable", value=b"r%d" % i, partition=0,
                             on_delivery=lambda err, msg: err is None and acked.append(msg.value()))
            if i % 50 == 0:
                producer.poll(0)
        assert producer.flush(20) == 0
        producer.produce("durable", value=b"maybe", partition=0)    # in flight while the broker dies
        producer.poll(0)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert len(acked) == 300
    with Broker(data_dir=tmp_path) as broker:
        log = broker.state.store.partition("durable", 0).log
        stored = _values(log.read(0, 10**8))
        assert stored[:300] == acked == [b"r%d" % i for i in range(300)]


def test_delete_before_drops_whole_segments(tmp_path):
    store = Store(str(tmp_path), segment_bytes=200)
    store.create_topic("d", 1)
    partition = store.partition("d", 0)
    for i in range(10):
        partition.log.append(_batch([b"%d-a" % i, b"%d-b" % i], ts=100 * i))
    files = sorted(os.listdir(tmp_path / "d-0"))
    assert len(partition.log.segments) > 2
    assert partition.delete_before(13) == 13
    kept = partition.log.segments
    assert kept[0].base_offset <= 13 and len(sorted(os.listdir(tmp_path / "d-0"))) < len(files)
    assert _values(partition.log.read(13, 10**6))[-1] == b"9-b" and partition.log.offset_for_timestamp(0) == (13, 600)
    store.close()
    again = Store(str(tmp_path), segment_bytes=200)
    log = again.partition("d", 0).log
    assert (log.log_start_offset, log.next_offset) == (13, 20)
    again.close()


def _damaged_log(tmp_path, damage):
    """100 one-record batches in a file-backed log, then ``damage(bytearray, positions)`` on the segment."""
    log = PartitionLog.open(str(tmp_path), 1 << 30)
    positions = []
    for i in range(100):
        positions.append(log.segments[-1].size if log.segments else 0)
        log.append(_batch([b"v%d" % i]))
    log.close()
    segment = tmp_path / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    damage(data, positions)
    segment.write_bytes(bytes(data))
    return PartitionLog.open(str(tmp_path), 1 << 30)


@pytest.mark.parametrize("where", [70, 8 + 2, 16, 23, 0])     # a value byte, the length, magic, last delta, offset
def test_recovery_keeps_every_batch_it_can_prove_and_says_what_it_dropped(tmp_path, caplog, where):
    def flip(data, positions):
        data[positions[30] + min(where, 60)] ^= 0x5A if where != 0 else 0x7F
    with caplog.at_level("WARNING", logger="kafkalab.broker"):
        log = _damaged_log(tmp_path, flip)
    values = _values(log.read(0, 10**7))
    assert values == [b"v%d" % i for i in range(100) if i != 30]
    assert log.next_offset == 100 and log.append(_batch([b"next"])) == 100
    assert any("skipped" in r.getMessage() and "bytes" in r.getMessage() for r in caplog.records)
    assert (tmp_path / "00000000000000000000.log.damaged").stat().st_size > 0
    log.close()


def test_recovery_cuts_only_the_unprovable_tail(tmp_path, caplog):
    def tear(data, positions):
        del data[positions[99] + 20:]
    with caplog.at_level("WARNING", logger="kafkalab.broker"):
        log = _damaged_log(tmp_path, tear)
    assert log.next_offset == 99 and len(_values(log.read(0, 10**7))) == 99
    assert any("cutting" in r.getMessage() for r in caplog.records)
    log.close()
