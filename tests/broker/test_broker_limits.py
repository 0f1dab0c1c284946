"""Hygiene: the broker listens on 127.0.0.1 unless told otherwise, caps connections, checks topic names as Kafka
does (the "."/"_" collision included, seen by a real admin client), takes a request of exactly
``max_request_size`` bytes and not one byte more, and writes files only under its data directory; the CLI sets
every limit. (Idle connections and slowloris deadlines are tested in test_hostile_connections.py.)"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import struct
import subprocess
import sys
import time

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.broker.cli import add_parser
from kafkalab.protocol import ErrorCode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_loopback_unless_told_otherwise():
    with Broker() as broker:
        assert broker.address[0] == "127.0.0.1"
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert parser.parse_args(["broker"]).host == "127.0.0.1"


def test_max_connections():
    with Broker(max_connections=2) as broker:
        first, second = RawClient(broker.bootstrap_servers), RawClient(broker.bootstrap_servers)
        third = RawClient(broker.bootstrap_servers)
        try:
            assert third.is_closed()
            assert first.call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE
            second.close()
            deadline = time.monotonic() + 10
            while True:                                 # the freed slot is taken again once the broker notices
                fourth = RawClient(broker.bootstrap_servers)
                if not fourth.is_closed(wait=0.5) or time.monotonic() > deadline:
                    break
                fourth.close()
            assert fourth.call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE
            fourth.close()
        finally:
            first.close()
            third.close()



def test_largest_request_is_max_request_size():
    """socket.request.max.bytes: the size prefix may say exactly the limit; one byte more closes the connection,
    and only that one, before its bytes are read."""
    limit = 20_000

    def api_versions_v0(size: int) -> bytes:           # header v1: key, version, correlation id, client id
        client_id = b"c" * (size - 10)
        return struct.pack(">ihhih", size, 18, 0, 1, len(client_id)) + client_id
    with Broker(max_request_size=limit) as broker:
        at_limit, over, bystander = (RawClient(broker.bootstrap_servers) for _ in range(3))
        try:
            at_limit.send(None, 0, raw=api_versions_v0(limit))
            assert struct.unpack(">iih", at_limit.read_frame()[:10])[1:] == (1, 0)   # correlation id 1, no error
            over.send(None, 0, raw=api_versions_v0(limit + 1)[:4])                  # the announcement alone
            assert over.is_closed()
            assert bystander.call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE
        finally:
            for client in (at_limit, over, bystander):
                client.close()



def test_cli_sets_every_limit():
    """``kafkalab broker`` with each limit's flag: a running broker that applies them."""
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab", "broker", "--port", "0", "--max-connections", "3",
                             "--max-request-size", "20000", "--connections-max-idle-ms", "1000",
                             "--request-receive-timeout-ms", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        bootstrap = proc.stdout.readline().split(" on ")[1].split()[0]
        oversized, idle = RawClient(bootstrap), RawClient(bootstrap)
        oversized.send(None, 0, raw=struct.pack(">i", 20_001))
        started = time.monotonic()
        assert oversized.is_closed() and idle.is_closed(wait=8)
        assert 0.5 < time.monotonic() - started < 8        # the idle one went after about a second
        crowd = [RawClient(bootstrap) for _ in range(4)]
        assert crowd[-1].is_closed(wait=0.5)                # the fourth connection is one too many, at once
        assert crowd[0].call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE
        for client in (oversized, idle, *crowd):
            client.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0


@pytest.mark.parametrize("name, problem", [
    ("a" * 250, "249"), (".", '"."'), ("..", '".."'), ("with space", "illegal"), ("../escape", "illegal"),
    ("", "empty")])
def test_topic_names_checked_as_kafka_does(name, problem):
    with Broker() as broker:
        client = RawClient(broker.bootstrap_servers)
        try:
            answer = client.call("CreateTopics", 7, {"topics": [{"name": name, "num_partitions": 1,
                                                                  "replication_factor": 1}], "timeout_ms": 5000})
        finally:
            client.close()
    result = answer["topics"][0]
    assert result["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION and problem in result["error_message"]


def test_dot_underscore_collision_refused_to_a_real_client(caplog):
    from confluent_kafka.admin import AdminClient, NewTopic
    with caplog.at_level(logging.WARNING, logger="kafkalab.broker"):
        with Broker(topics={"metrics.cpu": 1}) as broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            future = admin.create_topics([NewTopic("metrics_cpu", 1, 1)], request_timeout=15)["metrics_cpu"]
            with pytest.raises(Exception) as refused:
                future.result(15)
            client = RawClient(broker.bootstrap_servers)
            try:
                auto = client.call("Metadata", 12, {"topics": [{"name": "metrics_cpu"}],
                                                    "allow_auto_topic_creation": True})["topics"][0]
            finally:
                client.close()
            assert "metrics_cpu" not in broker.topics
    assert "collides with existing topic: metrics.cpu" in str(refused.value.args[0])
    assert auto["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert any("could collide" in r.getMessage() for r in caplog.records)


def test_no_file_outside_the_data_dir(tmp_path, monkeypatch):
    from kafka import KafkaProducer
    workdir, data_dir = tmp_path / "cwd", tmp_path / "data"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    with Broker(data_dir=str(data_dir), ssl_port=0, sasl_port=0, users={"u": "p"}) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        producer.send("orders", b"v").get(10)
        producer.close(5)
        client = RawClient(broker.bootstrap_servers)
        for name in ("..", "../escape", "a/b", "/tmp/x"):
            client.call("CreateTopics", 7, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}],
                                            "timeout_ms": 5000})
            client.call("Metadata", 12, {"topics": [{"name": name}], "allow_auto_topic_creation": True})
        client.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "data"]
    assert list(workdir.iterdir()) == []
    assert any(p.name == "broker-cert.pem" for p in data_dir.rglob("*"))
    assert all(os.path.realpath(p).startswith(os.path.realpath(data_dir)) for p in data_dir.rglob("*"))


def test_cli_writes_only_under_its_data_dir(tmp_path):
    """``kafkalab broker --data-dir`` with a cluster and TLS: after records and a clean stop, the working directory
    and the temporary directory are untouched; without a data directory, the TLS files go away at stop."""
    from confluent_kafka import Producer
    workdir, data_dir, tmp = tmp_path / "cwd", tmp_path / "data", tmp_path / "tmp"
    workdir.mkdir()
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": ROOT}
    for with_data_dir in (True, False):
        args = ["--data-dir", str(data_dir)] if with_data_dir else []
        proc = subprocess.Popen([sys.executable, "-m", "kafkalab", "broker", "--port", "0", "--nodes", "3",
                                 "--ssl-port", "0", "--topic", "orders:3", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=workdir, env=env)
        try:
            bootstrap = proc.stdout.readline().split(" on ")[1].split()[0]
            producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 15000})
            for p in range(3):
                producer.produce("orders", b"v", partition=p)
            assert producer.flush(20) == 0
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(15) == 0
        assert list(workdir.iterdir()) == [] and list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "data", "tmp"]
    assert any(p.name == "broker-cert.pem" for p in data_dir.rglob("*"))
