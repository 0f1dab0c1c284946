"""``broker.write_pcap``: the journal as a capture that tshark opens cleanly and kafkalab reads back frame for frame."""
from __future__ import annotations

import subprocess

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

import kafkalab
from kafkalab.broker import Broker

from tests.tools import require_tool


@pytest.fixture(scope="module")
def journaled(tmp_path_factory):
    """A broker that saw a producer (with a record larger than one TCP segment) and a consumer, then stopped."""
    with Broker(topics={"t": 2}) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, client_id="pcap-test")
        for i in range(4):
            producer.send("t", key=b"k%d" % i, value=bytes([i]) * (30_000 * i + 1), partition=i % 2).get(20)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                 consumer_timeout_ms=1500, fetch_max_wait_ms=100)
        consumer.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
        assert len(list(consumer)) == 4
        consumer.close()
    path = tmp_path_factory.mktemp("pcap") / "journal.pcap"
    assert broker.write_pcap(path) == len(broker.journal_ring)
    return broker, path


def test_read_capture_decodes_the_same_frames(journaled):
    broker, path = journaled
    journal = broker.frames
    capture = kafkalab.read_capture(str(path))
    frames = capture.frames
    assert not capture.diagnostics
    assert len(frames) == len(journal) > 20
    assert list(frames.api_key) == list(journal.api_key)
    assert list(frames.correlation_id) == list(journal.correlation_id)
    assert list(frames.kind) == list(journal.kind)
    assert list(frames.src) == list(journal.src) and list(frames.dst) == list(journal.dst)
    assert [round(f.ts, 6) for f in capture] == [round(f.ts, 6) for f in broker.journal]
    assert list(frames.time) == list(journal.time)
    assert [f.raw for f in capture] == [f.raw for f in broker.journal]
    assert frames.stream.nunique() == journal.stream.nunique()


def test_tshark_opens_it_without_errors(journaled):
    broker, path = journaled
    tshark = require_tool("tshark")
    opened = subprocess.run([tshark, "-r", str(path)], capture_output=True, text=True, timeout=60)
    assert opened.returncode == 0
    assert [line for line in opened.stderr.splitlines() if "Running as user" not in line] == []
    problems = subprocess.run([tshark, "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
                               "-Y", "tcp.analysis.flags || tcp.checksum.status == 0 || ip.checksum.status == 0"],
                              capture_output=True, text=True, timeout=60)
    assert problems.returncode == 0 and problems.stdout.strip() == ""
    kafka = subprocess.run([tshark, "-r", str(path), "-d", f"tcp.port=={broker.port},kafka", "-Y", "kafka",
                            "-T", "fields", "-e", "kafka.correlation_id"], capture_output=True, text=True, timeout=60)
    assert [int(c) for c in kafka.stdout.split()] == list(broker.frames.correlation_id)
