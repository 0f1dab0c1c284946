"""``kafkalab broker`` parses its options and serves until interrupted."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

import pytest
from kafka import KafkaProducer

from kafkalab.broker.cli import add_parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = ("import argparse, sys; from kafkalab.broker.cli import add_parser; p = argparse.ArgumentParser(); "
       "add_parser(p.add_subparsers()); a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))")


def test_cli_options():
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["broker", "--port", "0", "--topic", "a:3", "--topic", "b", "--data-dir", "/tmp/x"])
    assert (args.port, args.topic, args.data_dir) == (0, [("a", 3), ("b", None)], "/tmp/x")


def test_cli_serves_until_interrupted(tmp_path):
    pcap = tmp_path / "session.pcap"
    proc = subprocess.Popen([sys.executable, "-c", RUN, "broker", "--port", "0", "--topic", "cli:2",
                             "--write-pcap", str(pcap)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        line = proc.stdout.readline()
        bootstrap = line.split(" on ")[1].split()[0]
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        assert producer.send("cli", value=b"x", partition=1).get(20).offset == 0
        producer.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    assert "listening on" in proc.stderr.read()
    assert "journaled frames" in proc.stdout.read() and pcap.stat().st_size > 24


def test_cli_nodes_and_emulate(capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["broker", "--nodes", "3", "--emulate", "2.8.1"])
    assert (args.nodes, args.emulate) == (3, "2.8")
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["broker", "--emulate", "0.9"])
    assert exit_.value.code == 2
    assert "no persona for Kafka '0.9'" in capsys.readouterr().err


def test_cli_serves_a_three_node_cluster_as_an_old_release():
    proc = subprocess.Popen([sys.executable, "-c", RUN, "broker", "--port", "0", "--nodes", "3", "--emulate", "2.0",
                             "--topic", "cli:3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        bootstrap = proc.stdout.readline().split(" on ")[1].split()[0]
        assert len(bootstrap.split(",")) == 3
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        assert producer.config["api_version"] == (2, 0)
        assert [producer.send("cli", value=b"x", partition=p).get(20).offset for p in range(3)] == [0, 0, 0]
        producer.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    assert proc.stderr.read().count("listening on") == 3
