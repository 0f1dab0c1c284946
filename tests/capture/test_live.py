"""Live capture with scapy: sniffing loopback while a real client (confluent-kafka) talks to librdkafka's
mock cluster, the ``sniff`` command writing a pcap, and lists of scapy packets as captures. Sniffing needs
root (CI runs as root) and scapy; those tests skip with the reason otherwise. Expected values are what the
client sent and was told (delivery reports), never kafkalab's output."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkalab.capture import read_capture

from tests.capture.builders import write_golden_pcap

scapy = pytest.importorskip("scapy", reason="scapy is not installed (pip install scapy)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="sniffing loopback needs root (CI runs as root)")


def test_scapy_packets_are_a_capture(tmp_path):
    from scapy.utils import rdpcap

    path = tmp_path / "golden.pcap"
    write_golden_pcap(path)
    from_file = read_capture(path)
    from_packets = read_capture(list(rdpcap(str(path))))
    assert len(from_packets) == len(from_file) > 0
    for a, b in zip(from_file, from_packets):
        assert (a.frame, a.stream, a.kind, a.api_key, a.api_version, a.correlation_id, a.raw) == \
               (b.frame, b.stream, b.kind, b.api_key, b.api_version, b.correlation_id, b.raw)
        assert abs(a.ts - b.ts) < 1e-6


def _produce(bootstrap: str, messages: list[tuple[bytes, bytes, int]], *,
             one_request_each: bool = False) -> list[tuple[str, int, int, bytes]]:
    """Produce ``messages`` with confluent-kafka; ``one_request_each``: wait for each before the next, so
    that every message travels in its own Produce request."""
    import confluent_kafka as ck

    delivered = []
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                            "enable.idempotence": False})
    for key, value, partition in messages:
        producer.produce("orders", key=key, value=value, partition=partition,
                         on_delivery=lambda err, msg: delivered.append(
                             (msg.topic(), msg.partition(), msg.offset(), msg.value())) if err is None else None)
        if one_request_each:
            assert producer.flush(15) == 0
    assert producer.flush(15) == 0
    return delivered


@needs_root
def test_sniff_loopback_while_a_real_client_produces():
    from kafkalab.capture.live import sniff
    from tests.capture.mock_cluster import mock_cluster

    messages = [(b"key-%d" % i, b"value-%d" % i, i % 2) for i in range(6)]
    with mock_cluster({"orders": 2}) as (host, port):
        with sniff(iface="lo", ports=[port]) as live:
            delivered = _produce(f"{host}:{port}", messages)
            live.wait_for(lambda frames: sum(f.api_name == "Produce" and f.kind == "response"
                                             for f in frames) >= 2, timeout=10)
            table = live.frames                                    # the live table, while running
            assert len(table) == len(live) > 0
    cap = live.capture()
    assert len(delivered) == len(messages)
    produce = cap.records[cap.records["kind"] == "request"]
    got = {(r.topic, r.partition, r.offset, r.value) for r in produce.itertuples()}
    assert got == set(delivered)                                   # offsets from the paired responses
    requests = [f for f in cap if f.kind == "request"]
    assert all(f.response_frame is not None for f in requests if f.api_name == "Produce")
    assert {f.client_id for f in requests} == {"rdkafka"}


@needs_root
def test_sniff_command_writes_a_pcap_that_reads_back(tmp_path):
    from tests.capture.mock_cluster import mock_cluster

    out = tmp_path / "live.pcap"
    with mock_cluster({"orders": 2}) as (host, port):
        command = subprocess.Popen([sys.executable, "-m", "kafkalab.capture.cli", "sniff", "-i", "lo", "-p", str(port),
                                    "-w", str(out), "-T", "jsonl", "-a", "30", "-Y",
                                    'api_name == "Produce" and kind == "response"', "-c", "4"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started = command.stderr.readline()                       # the sniffer is attached
        assert "capturing on 'lo'" in started, started
        # four requests, four responses: the sniffer stops at the fourth response, with every request before it
        # (counting requests as well could stop it before the last responses, whatever the client's batching)
        delivered = _produce(f"{host}:{port}", [(b"k%d" % i, b"v%d" % i, i % 2) for i in range(4)],
                             one_request_each=True)
        stdout, stderr = command.communicate(timeout=60)
    assert command.returncode == 0, stderr
    lines = stdout.splitlines()
    assert len(lines) == 4 and all('"api_name": "Produce"' in line and '"kind": "response"' in line
                                   for line in lines)
    cap = read_capture(out, ports=[port])
    produced = cap.records[cap.records["kind"] == "request"]
    assert {(r.partition, r.offset, r.value) for r in produced.itertuples()} == \
           {(p, o, v) for _, p, o, v in delivered}


def test_sniff_reports_a_missing_interface():
    from kafkalab.capture.live import SniffError, sniff

    if os.geteuid() != 0:
        pytest.skip("opening a capture socket needs root")
    with pytest.raises(SniffError):
        sniff(iface="no-such-interface0", ports=[9092])
