"""Synthetic captures for the capture benchmark, shaped like real Kafka traffic.

What makes them real-shaped (and the numbers honest):

* TCP segments of at most one Ethernet MSS (1448 bytes): large frames are cut into MSS-sized segments, small
  frames travel alone in a packet, receivers send a pure ACK every second full segment (delayed ACKs);
* many connections (96 by default, producers and consumers over three brokers) whose segments interleave
  packet by packet, as on a busy broker's interface;
* Produce requests and Fetch responses carrying v2 record batches of JSON values (30% gzip), 15% of fetches
  empty, and no more repetition than real traffic has: every Produce request holds new records, every
  non-empty Fetch response hands out batches produced earlier (with the broker's offsets), each once;
* correct IP and TCP checksums and record-batch CRCs.

Every byte comes from kafkalab's encoder and :class:`~kafkalab.pcap.TcpPcapWriter`, so the files are valid for
both kafkalab and tshark. Versions are ones Debian's tshark 4.0 dissects fully (so both tools do the same
work): Produce v7, Fetch v11, Heartbeat v3, OffsetCommit v7, Metadata v8. Deterministic for given arguments.
"""
from __future__ import annotations

import json
import random
from collections import deque
from pathlib import Path

from kafkalab.pcap import TcpPcapWriter
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.records import build_batch, encode_records

START = 1_700_000_000.0
SERVER = ("10.1.0.1", 9092)
BROKERS = [("10.1.0.1", 9092), ("10.1.0.2", 9092), ("10.1.0.3", 9092)]
ETHERNET_MSS = 1448             # 1500 - 20 (IP) - 20 (TCP) - 12 (timestamp option)
PACKET_OVERHEAD = 16 + 54       # pcap record header, Ethernet + IPv4 + TCP headers


def _client(index: int) -> tuple[str, int]:
    return (f"10.2.{index // 200}.{index % 200 + 1}", 40000 + index)


_COUNTRIES = ["DE", "FR", "US", "GB", "NL", "PL", "SE", "ES", "IT", "JP", "BR", "IN"]
_STREETS = ["Main St", "Station Rd", "Park Ave", "High St", "Mill Lane", "Church St", "Harbour Rd"]
_STATUSES = ["created", "paid", "packed", "shipped", "delivered", "returned"]


def _json_value(rng: random.Random, serial: int) -> bytes:
    """An order event as a JSON document (about 250-600 bytes), the typical Kafka record value."""
    items = [{"sku": f"sku-{rng.randrange(100000):05d}", "qty": rng.randrange(1, 5),
              "price": round(rng.uniform(1, 300), 2)} for _ in range(rng.randrange(1, 7))]
    event = {"order_id": serial, "customer": f"cust-{rng.randrange(10**6):06d}",
             "country": rng.choice(_COUNTRIES), "city": f"city-{rng.randrange(5000)}",
             "street": f"{rng.randrange(1, 400)} {rng.choice(_STREETS)}", "status": rng.choice(_STATUSES), "items": items,
             "total": round(sum(i["price"] * i["qty"] for i in items), 2),
             "ts": f"2023-11-14T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}."
                   f"{rng.randrange(1000):03d}Z", "session": rng.getrandbits(64).to_bytes(8, "big").hex()}
    return json.dumps(event, separators=(",", ":")).encode()


class _Log:
    """The brokers' logs as far as the benchmark needs them: every batch produced is new (fresh records), and
    consumers fetch each produced batch once, with the offsets the broker assigned (a v2 batch's base offset
    is outside its CRC, so the broker rewrites it without re-checksumming, as Kafka does)."""

    def __init__(self, rng: random.Random, gzip_share: float, records: tuple[int, int]) -> None:
        self.rng, self.gzip_share, self.records = rng, gzip_share, records
        self.serial = 0
        self.offsets: dict[tuple[str, int], int] = {}
        self.unread: deque = deque(maxlen=4096)

    def new_batch(self, topic: str, partition: int, producer_id: int) -> tuple[bytes, int]:
        """(encoded batch, its base offset in the partition)."""
        rng = self.rng
        count = rng.randrange(*self.records)
        values = []
        for i in range(count):
            self.serial += 1
            values.append((b"order-%d" % self.serial, _json_value(rng, self.serial),
                           [("source", b"web"), ("trace", b"%016x" % rng.getrandbits(64))],
                           1_700_000_000_000 + self.serial))
        codec = "gzip" if rng.random() < self.gzip_share else "none"
        batch = encode_records([build_batch(values, codec=codec, producer_id=producer_id, producer_epoch=0,
                                            base_sequence=self.serial - count)])
        base = self.offsets.get((topic, partition), 0)
        self.offsets[(topic, partition)] = base + count
        self.unread.append((topic, partition, base.to_bytes(8, "big") + batch[8:]))
        return batch, base

    def fetch(self, most: int) -> list[tuple[str, int, bytes]]:
        out = []
        while self.unread and len(out) < most:
            out.append(self.unread.popleft())
        return out


def _produce(log: _Log, client: int, correlation: int, batches: tuple[int, int], acks: int) -> tuple[bytes, bytes]:
    rng = log.rng
    topic = f"orders-{rng.randrange(12)}"
    partitions = rng.sample(range(16), rng.randrange(*batches))
    made = [(p, *log.new_batch(topic, p, 1000 + client)) for p in partitions]
    request = encode_request("Produce", 7, {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
                                            "topic_data": [{"name": topic, "partition_data": [
                                                {"index": p, "records": batch} for p, batch, _ in made]}]},
                             correlation_id=correlation, client_id=f"producer-{client}")
    response = encode_response("Produce", 7, {"responses": [{"name": topic, "partition_responses": [
        {"index": p, "error_code": 0, "base_offset": base, "log_append_time_ms": -1, "log_start_offset": 0}
        for p, _, base in made]}], "throttle_time_ms": 0}, correlation_id=correlation)
    return request, response


def _fetch(log: _Log, client: int, correlation: int, most: int, empty_share: float) -> tuple[bytes, bytes]:
    rng = log.rng
    got = [] if rng.random() < empty_share else log.fetch(rng.randrange(1, most + 1))
    topic = got[0][0] if got else f"orders-{rng.randrange(12)}"
    got = [g for g in got if g[0] == topic]
    partitions = [(p, batch) for _, p, batch in got] or [(rng.randrange(16), b"")]
    position = {p: log.offsets.get((topic, p), 0) for p, _ in partitions}
    request = encode_request("Fetch", 11, {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
            {"partition": p, "current_leader_epoch": 0, "fetch_offset": position[p], "log_start_offset": -1,
             "partition_max_bytes": 1048576} for p, _ in partitions]}], "forgotten_topics_data": [], "rack_id": ""},
        correlation_id=correlation, client_id=f"consumer-{client}")
    response = encode_response("Fetch", 11, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": topic, "partitions": [
            {"partition_index": p, "error_code": 0, "high_watermark": position[p], "last_stable_offset": position[p],
             "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1, "records": batch}
            for p, batch in partitions]}]}, correlation_id=correlation)
    return request, response


class _Wire:
    """Connections taking turns packet by packet: each has one message in flight at a time (a request, then
    its response), sent in segments of at most ``mss`` bytes; the receiver acknowledges every second full
    segment with a pure ACK and, after a response, the client sends one with probability ``ack_share``."""

    def __init__(self, writer: TcpPcapWriter, rng: random.Random, connections: list, next_exchange,
                 ack_share: float) -> None:
        self.writer, self.rng, self.conns, self.next_exchange = writer, rng, connections, next_exchange
        self.ack_share = ack_share
        self.ts = START
        self.frames = self.bytes = 0
        self.correlation = [0] * len(connections)
        self.queue = [self._exchange(c) for c in range(len(connections))]   # per connection: [(client?, data)]
        self.sent = [0] * len(connections)       # bytes of the current message sent
        self.segments = [0] * len(connections)

    def _exchange(self, c: int) -> list:
        self.correlation[c] += 1
        request, response = self.next_exchange(c, self.correlation[c])
        self.frames += 2
        return [(True, request), (False, response)]

    def step(self, c: int, refill: bool = True) -> None:
        rng, writer = self.rng, self.writer
        conn = self.conns[c]
        from_client, data = self.queue[c][0]
        at = self.sent[c]
        piece = data[at:at + writer.mss]
        self.ts += rng.expovariate(1 / 0.00002)
        writer.send(conn, from_client, piece, self.ts)
        self.bytes += len(piece) + PACKET_OVERHEAD
        self.sent[c] = at = at + len(piece)
        self.segments[c] += 1
        if len(piece) == writer.mss and self.segments[c] % 2 == 0:
            writer.acknowledge(conn, not from_client, self.ts)
            self.bytes += PACKET_OVERHEAD
        if at < len(data):
            return
        self.sent[c] = self.segments[c] = 0
        self.queue[c].pop(0)
        if not from_client and rng.random() < self.ack_share:
            writer.acknowledge(conn, True, self.ts + 0.00001)
            self.bytes += PACKET_OVERHEAD
        if not self.queue[c] and refill:
            self.queue[c] = self._exchange(c)

    def drain(self) -> None:
        """Send every message already begun (and its response) to the end: the capture holds whole frames."""
        for c in range(len(self.conns)):
            if self.sent[c] or len(self.queue[c]) == 1:
                while self.queue[c]:
                    self.step(c, refill=False)
            else:
                self.frames -= 2                  # an exchange not started: leave it out

    def close(self) -> None:
        for conn in self.conns:
            self.writer.close(conn, self.ts)


def write_bulk(path: str | Path, target_bytes: int = 500_000_000, *, connections: int = 96,
               gzip_share: float = 0.3, empty_fetch_share: float = 0.15) -> dict:
    """Half the connections produce (Produce v7, 1-3 partitions of 5-50 JSON records each), half consume
    (Fetch v11 handing out what was produced, 1-4 batches, ``empty_fetch_share`` of them empty), spread over
    three brokers, until the file holds about ``target_bytes``."""
    rng = random.Random(1)
    log = _Log(rng, gzip_share, (20, 110))

    def exchange(c: int, correlation: int) -> tuple[bytes, bytes]:
        if c % 2 == 0:
            return _produce(log, c, correlation, (1, 5), -1)
        return _fetch(log, c, correlation, 4, empty_fetch_share)

    return _write(path, target_bytes, connections, exchange, rng, ack_share=0.2) | {"records": log.serial}


def write_chatty(path: str | Path, target_bytes: int = 50_000_000, *, connections: int = 96) -> dict:
    """Small frames (about 560 bytes on average), each alone in its packet: producers sending a few records at
    a time with acks=1, consumers polling (mostly empty or small fetches, heartbeats, offset commits, metadata)."""
    rng = random.Random(2)
    _POSITIONS.clear()
    log = _Log(rng, 0.0, (1, 7))

    def exchange(c: int, correlation: int) -> tuple[bytes, bytes]:
        kind = rng.randrange(100)
        if kind < 30:
            return _produce(log, c, correlation, (1, 2), 1)
        if kind < 60:
            return _fetch(log, c, correlation, 2, 0.3)
        api, version, request, response = _chatty_pair(rng, rng.randrange(50, 100), f"consumer-{c}")
        return (encode_request(api, version, request, correlation_id=correlation, client_id=f"consumer-{c}"),
                encode_response(api, version, response, correlation_id=correlation))

    return _write(path, target_bytes, connections, exchange, rng, ack_share=0.45)


def _write(path, target_bytes: int, connections: int, exchange, rng: random.Random, ack_share: float) -> dict:
    with TcpPcapWriter(path, mss=ETHERNET_MSS) as writer:
        conns = [writer.open_connection(_client(i), BROKERS[i % len(BROKERS)], START) for i in range(connections)]
        wire = _Wire(writer, rng, conns, exchange, ack_share)
        pick = rng.randrange
        while wire.bytes < target_bytes:
            wire.step(pick(connections))
        wire.drain()
        wire.close()
    return {"frames": wire.frames, "packets": writer.packets}


_POSITIONS: dict[tuple, int] = {}


def _position(client: str, topic: str, partition: int, rng: random.Random) -> int:
    """A consumer's position in a partition: it only moves forward, as real fetch and commit offsets do."""
    key = (client, topic, partition)
    _POSITIONS[key] = _POSITIONS.get(key, rng.randrange(10**6)) + rng.randrange(4)
    return _POSITIONS[key]


def _chatty_pair(rng: random.Random, kind: int, client: str):
    """(api, version, request body, response body) for one small exchange."""
    topic = f"events-{rng.randrange(8)}"
    partition = rng.randrange(6)
    position = _position(client, topic, partition, rng)
    if kind < 50:
        return ("Fetch", 11, {
            "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": 0, "fetch_offset": position,
                 "log_start_offset": -1, "partition_max_bytes": 1048576}]}],
            "forgotten_topics_data": [], "rack_id": ""},
            {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [{"topic": topic, "partitions": [
                {"partition_index": partition, "error_code": 0, "high_watermark": position,
                 "last_stable_offset": position, "log_start_offset": 0, "aborted_transactions": [],
                 "preferred_read_replica": -1, "records": b""}]}]})
    if kind < 75:
        return ("Heartbeat", 3, {"group_id": "group-1", "generation_id": 4, "member_id": f"{client}-member",
                                 "group_instance_id": None},
                {"throttle_time_ms": 0, "error_code": 27 if position % 97 == 0 else 0})
    if kind < 90:
        return ("OffsetCommit", 7, {"group_id": "group-1", "generation_id_or_member_epoch": 4,
                                    "member_id": f"{client}-member", "group_instance_id": None, "topics": [
                    {"name": topic, "partitions": [{"partition_index": partition, "committed_offset": position,
                                                    "committed_leader_epoch": 0, "committed_metadata": ""}]}]},
                {"throttle_time_ms": 0, "topics": [{"name": topic, "partitions": [
                    {"partition_index": partition, "error_code": 0}]}]})
    return ("Metadata", 8, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                            "include_cluster_authorized_operations": False,
                            "include_topic_authorized_operations": False},
            {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "broker-1", "port": 9092, "rack": None}],
             "cluster_id": "lab-cluster", "controller_id": 1, "topics": [
                 {"error_code": 0, "name": topic, "is_internal": False, "partitions": [
                     {"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 0,
                      "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []} for p in range(3)],
                  "topic_authorized_operations": -2147483648}], "cluster_authorized_operations": -2147483648})


def write_other_traffic(path: str | Path, target_bytes: int = 50 << 20, *, kafka_share: float = 0.05) -> dict:
    """A host's capture: mostly other protocols (HTTPS-like TLS records and plain HTTP, on ports 443 and 8080)
    with a few Kafka consumers' small exchanges in between, about ``kafka_share`` of the bytes. What it
    measures is how fast a reader gets through traffic that is not Kafka to find the traffic that is."""
    rng = random.Random(3)
    _POSITIONS.clear()
    ts = START
    written = count = 0
    http = b"GET /api/v1/orders?page=%d HTTP/1.1\r\nHost: shop\r\nAccept: application/json\r\n\r\n"
    with TcpPcapWriter(path) as writer:
        web = [writer.open_connection((f"10.3.{i // 200}.{i % 200 + 1}", 50000 + i),
                                      ("10.4.0.1", 443 if i % 2 else 8080), ts) for i in range(100)]
        kafka = [writer.open_connection(_client(i), SERVER, ts) for i in range(10)]
        correlation = [0] * len(kafka)
        while written < target_bytes:
            ts += 0.0001
            if rng.random() < kafka_share * 8:          # Kafka exchanges are small: more of them, by count
                c = rng.randrange(len(kafka))
                correlation[c] += 1
                api, version, request, response = _chatty_pair(rng, rng.randrange(100), f"consumer-{c}")
                raw = encode_request(api, version, request, correlation_id=correlation[c], client_id=f"consumer-{c}")
                reply = encode_response(api, version, response, correlation_id=correlation[c])
                writer.send(kafka[c], True, raw, ts)
                writer.send(kafka[c], False, reply, ts + 0.00005)
                written += len(raw) + len(reply)
                count += 2
                continue
            w = rng.randrange(len(web))
            if w % 2:                                   # a TLS application-data record each way
                for client in (True, False):
                    body = rng.randbytes(rng.randrange(200, 4000))
                    writer.send(web[w], client, b"\x17\x03\x03" + len(body).to_bytes(2, "big") + body, ts)
                    written += len(body) + 5
            else:
                request = http % rng.randrange(1000)
                page = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + \
                    b'{"orders": [%s]}' % b",".join(b'{"id": %d}' % rng.randrange(10**6) for _ in range(200))
                writer.send(web[w], True, request, ts)
                writer.send(web[w], False, page, ts)
                written += len(request) + len(page)
        for conn in web + kafka:
            writer.close(conn, ts)
    return {"frames": count}
