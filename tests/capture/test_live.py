"""Live capture: sniffing loopback while a real client (confluent-kafka) talks to librdkafka's mock cluster,
the ``sniff`` command writing a pcap, each loopback packet captured once, the errors a user meets, and lists
of scapy packets as captures. Sniffing needs no libpcap or scapy, only Linux and root (CI runs as root); the
sniffing tests skip with that reason otherwise. Expected values are what the client sent and was told
(delivery reports), never kafkalab's output."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from kafkalab.capture import read_capture

from tests.capture.builders import write_golden_pcap
from tests.tools import needs_root



def test_scapy_packets_are_a_capture(tmp_path):
    pytest.importorskip("scapy", reason="scapy is not installed (the test extra brings it)")
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


def _ping_pong(tmp_path, **options):
    """Sniff (with ``options``) while a client sends five pings on loopback, with UDP and TCP on other ports
    around them; returns the capture, the port and the pcap's TCP segments on that port."""
    from kafkalab.capture.live import sniff
    from kafkalab.pcap import read_packets

    out = tmp_path / "pings.pcap"
    with socket.create_server(("127.0.0.1", 0)) as server, socket.create_server(("127.0.0.1", 0)) as other:
        port = server.getsockname()[1]
        with sniff(ports=[port], write=str(out), **options) as live:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.sendto(b"not tcp", ("127.0.0.1", port))
            with socket.create_connection(other.getsockname()), socket.create_connection(("127.0.0.1", port)) as client:
                peer, _ = server.accept()
                for i in range(5):
                    client.sendall(b"ping %d" % i)
                    assert peer.recv(100) == b"ping %d" % i
                peer.close()
            deadline, last = time.monotonic() + 5, -1
            while live.packets != last and time.monotonic() < deadline:     # until quiet for 0.3 s
                last = live.packets
                time.sleep(0.3)
    ours = [(p.sport, p.seq, p.ack, p.flags, p.payload) for p in read_packets(out) if port in (p.sport, p.dport)]
    return live, port, out, ours


def _kept_only_tcp_on_the_ports(path, ports) -> None:
    """Every packet written is TCP to or from one of ``ports`` (checked on the raw IPv4 bytes)."""
    from kafkalab.pcap import iter_link_records

    for record in iter_link_records(path):
        data = record.data
        assert data[0] >> 4 == 4 and data[9] == 6, data[:20].hex()
        header = (data[0] & 0x0F) * 4
        assert {int.from_bytes(data[header:header + 2], "big"),
                int.from_bytes(data[header + 2:header + 4], "big")} & set(ports), data[:header + 4].hex()


@needs_root
@pytest.mark.parametrize("iface", ["lo", None], ids=["lo", "every-interface"])
def test_each_loopback_packet_is_captured_once(tmp_path, iface):
    """lo shows every packet twice to a packet socket (sent, then received): the filter keeps one."""
    live, port, out, packets = _ping_pong(tmp_path, iface=iface)
    assert live.kernel_filter and live.bpf == f"tcp and (port 9092 or port 9093 or port 9094 or port {port})"
    assert len(packets) >= 10                                          # handshake 3, data 5, a FIN each way
    assert len(set(packets)) == len(packets), "a packet was captured twice"
    assert [p[4] for p in packets if p[4]] == [b"ping %d" % i for i in range(5)]
    _kept_only_tcp_on_the_ports(out, {port, 9092, 9093, 9094})


@needs_root
def test_python_filters_alike_when_the_kernel_refuses_the_filter(tmp_path, monkeypatch):
    from kafkalab.capture import bpf

    def refuse(sock, program):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(bpf, "attach", refuse)
    live, port, out, packets = _ping_pong(tmp_path, iface="lo")
    assert not live.kernel_filter
    assert "the kernel refused the capture filter (Invalid argument); filtering in Python" in live.diagnostics
    assert len(set(packets)) == len(packets) >= 10
    assert [p[4] for p in packets if p[4]] == [b"ping %d" % i for i in range(5)]
    _kept_only_tcp_on_the_ports(out, {port, 9092, 9093, 9094})


@needs_root
def test_sniff_reports_a_missing_interface_with_the_ones_there_are():
    from kafkalab.capture.live import SniffError, sniff

    with pytest.raises(SniffError, match=r"^no interface named 'no-such-if0'; this machine has .*\blo\b"):
        sniff(iface="no-such-if0", ports=[9092])


@needs_root
def test_sniffing_loads_neither_libpcap_nor_scapy():
    """What a bare machine lacks is never touched, even where it is installed (as on CI, via tshark)."""
    probe = ("import sys\nfrom kafkalab.capture.live import sniff\nwith sniff('lo', [9]) as live:\n    pass\n"
             "print('scapy' in sys.modules, 'libpcap' in open('/proc/self/maps').read(), live.kernel_filter)")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "False", "True"]
