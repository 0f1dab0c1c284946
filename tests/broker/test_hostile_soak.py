"""Soak: an honest confluent-kafka producer and consumer keep their latency while other connections attack.

The broker runs in its own process (so its RSS is its own). For ``SOAK_SECONDS`` the honest producer sends a
message every 5 ms and times each delivery; meanwhile attackers announce 100 MB frames and send 9 bytes,
trickle requests a byte at a time (slowloris), sit idle, and produce hostile record sets: a rewinding batch,
a zstd batch claiming a million records, a 100 KB gzip wrapper of a million messages, a Metadata request
naming 5,000 new topics. Asserted: the honest p99 delivery latency is under 1 s, no message times out or
fails, a consumer reading all along gets every message once at contiguous offsets (produce-to-consume p99
under 1 s too), and the broker's RSS stays under ``RSS_BUDGET_MIB`` throughout.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time

import confluent_kafka as ck
import cramjam
import pytest
from hostile_inputs import million_message_wrapper, produce_body, v2_batch, v2_records

from kafkalab.protocol import encode_request

SOAK_SECONDS = float(os.environ.get("KAFKALAB_SOAK_SECONDS", "20"))
PACE = 0.005                    # seconds between honest messages
RSS_BUDGET_MIB = 512
BROKER = """
import sys, time
from kafkalab.broker import Broker
broker = Broker(port=0, topics={"honest": 1, "target": 1}, request_receive_timeout_ms=3000,
                connections_max_idle_ms=6000).start()
print(broker.bootstrap_servers, flush=True)
sys.stdin.read()
time.sleep(1.0)                     # the clients' closes arrive
print("in flight", broker._loop.call(lambda: broker._server.budget.used), flush=True)
broker.stop()
"""


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Attacks:
    """Attacker threads, each looping until ``stop`` is set; ``sent`` counts what each one did."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.stop = threading.Event()
        self.sent: dict[str, int] = {}
        self.threads = [threading.Thread(target=self._loop, args=(fn,), daemon=True) for fn in (
            self.announce, self.slowloris, self.idle, self.rewind, self.claim_million, self.legacy_bomb,
            self.metadata_flood)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(15)

    def _loop(self, fn) -> None:
        while not self.stop.is_set():
            try:
                fn()
                self.sent[fn.__name__] = self.sent.get(fn.__name__, 0) + 1
            except OSError:
                time.sleep(0.05)       # the broker closed us: that is the point; come back

    def _connect(self) -> socket.socket:
        return socket.create_connection(self.address, timeout=10)

    def announce(self) -> None:
        """Twenty connections each announcing a 100 MB frame, then sending a byte now and then."""
        socks = [self._connect() for _ in range(20)]
        for s in socks:
            s.sendall(struct.pack(">i", 100 << 20) + b"\x00" * 5)
        for _ in range(10):
            if self.stop.wait(0.3):
                break
            for s in socks:
                s.sendall(b"\x00")
        for s in socks:
            s.close()

    def slowloris(self) -> None:
        sock = self._connect()
        frame = encode_request("ApiVersions", 3, {"client_software_name": "s", "client_software_version": "1"},
                               correlation_id=1)
        with sock:
            for byte in frame[:-1]:
                if self.stop.wait(0.2):
                    return
                sock.sendall(bytes((byte,)))

    def idle(self) -> None:
        socks = [self._connect() for _ in range(20)]
        self.stop.wait(8)
        for s in socks:
            s.close()

    def _produce(self, records: bytes, version: int = 9) -> None:
        with self._connect() as sock:
            sock.sendall(encode_request("Produce", version, produce_body(records, topic="target"), correlation_id=1))
            _read_frame(sock)

    def rewind(self) -> None:
        self._produce(v2_batch(v2_records([b"x"]), 1, last_offset_delta=-3))
        self.stop.wait(0.1)

    def claim_million(self) -> None:
        self._produce(ZSTD_MILLION)
        self.stop.wait(0.1)

    def legacy_bomb(self) -> None:
        self._produce(LEGACY_BOMB, version=2)
        self.stop.wait(0.2)

    def metadata_flood(self) -> None:
        with self._connect() as sock:
            sock.sendall(METADATA_FLOOD)
            _read_frame(sock)
        self.stop.wait(1.0)


def _read_frame(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    size, body = struct.unpack(">i", head)[0], b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            raise ConnectionError("closed")
        body += chunk
    return body


ZSTD_MILLION = v2_batch(bytes(cramjam.zstd.compress(b"\x0c\x00\x00\x00\x01\x01\x00" * 1_000_000, level=19)),
                        1_000_000, codec=4)
LEGACY_BOMB = million_message_wrapper()
METADATA_FLOOD = encode_request("Metadata", 12, {"topics": [{"name": f"flood-{i}"} for i in range(5000)],
                                                 "allow_auto_topic_creation": True}, correlation_id=1)


@pytest.mark.soak
def test_honest_client_keeps_its_latency_under_attack():
    broker = subprocess.Popen([sys.executable, "-c", BROKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        bootstrap = broker.stdout.readline().strip()
        host, port = bootstrap.rsplit(":", 1)
        rss: list[float] = []
        with Consumer(bootstrap) as consumer:
            latencies, failures = _soak(bootstrap, (host, int(port)), broker.pid, rss, consumer)
    finally:
        broker.stdin.close()
        try:
            in_flight = broker.stdout.readline().strip()
            broker.wait(20)
        except subprocess.TimeoutExpired:
            broker.kill()
    assert in_flight == "in flight 0"                 # the request-memory budget is whole again
    assert not failures and not consumer.errors, (failures[:5], consumer.errors[:5])
    latencies.sort()
    p99 = _p99(latencies)
    assert len(latencies) > SOAK_SECONDS / PACE / 2
    assert p99 < 1.0, f"p99 {p99:.3f} s (max {latencies[-1]:.3f} s)"
    assert max(rss) < RSS_BUDGET_MIB, f"broker RSS peaked at {max(rss):.0f} MiB"
    consumed = consumer.messages
    assert [offset for offset, _ in consumed] == list(range(len(consumed)))
    assert sorted(int(value) for _, value in consumed) == list(range(len(latencies)))
    end_to_end = _p99(sorted(consumer.latencies))
    assert end_to_end < 1.0, f"produce-to-consume p99 {end_to_end:.3f} s"
    print(f"\nsoak: {len(latencies)} messages, p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms; produce-to-consume p99 "
          f"{end_to_end * 1000:.1f} ms; broker RSS peak {max(rss):.0f} MiB")


def _p99(ordered: list[float]) -> float:
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def _soak(bootstrap: str, address, pid: int, rss: list[float], consumer: Consumer):
    latencies: list[float] = []
    failures: list[str] = []
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                            "message.timeout.ms": 30000, "enable.idempotence": False})

    def delivered(err, msg):        # latency: produce() to acknowledgement, as librdkafka measures it
        if err is not None:
            failures.append(str(err))
        else:
            latencies.append(msg.latency())
    producer.produce("honest", b"0", on_delivery=delivered)       # warm-up, not timed
    producer.flush(30)
    latencies.clear()
    with Attacks(address) as attacks:
        start = time.monotonic()
        sent = 1
        while time.monotonic() < start + SOAK_SECONDS:
            producer.produce("honest", str(sent).encode(), on_delivery=delivered)
            sent += 1
            producer.poll(0)
            time.sleep(max(0.0, start + sent * PACE - time.monotonic()))
            rss.append(_rss_mib(pid))
        assert producer.flush(30) == 0
        consumer.wait_for(sent, timeout=30)          # the consumer reads while the attacks still run
    assert all(attacks.sent.get(name, 0) >= 1 for name in ("rewind", "claim_million", "legacy_bomb")), attacks.sent
    print(f"\nattacks: {attacks.sent}")
    latencies.insert(0, 0.0)                 # message "0" (the warm-up) is delivered too
    return latencies, failures


class Consumer:
    """A confluent-kafka consumer reading "honest" from offset 0 on its own thread, all through the soak;
    latency: the message's CreateTime to its arrival here."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "soak",
                                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.assign([ck.TopicPartition("honest", 0, 0)])
        self.messages: list[tuple[int, bytes]] = []
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Consumer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(15)
        self.consumer.close()

    def _run(self) -> None:
        while not self.stop.is_set():
            msg = self.consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                self.errors.append(str(msg.error()))
                continue
            self.messages.append((msg.offset(), msg.value()))
            self.latencies.append(max(0.0, time.time() - msg.timestamp()[1] / 1000))

    def wait_for(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.05)
