"""Synthetic captures for the capture benchmark: bulk produce, chatty small frames, a long mixed stream.

Every byte on the wire comes from kafkalab's encoder and :class:`~kafkalab.pcap.TcpPcapWriter`, so the files
are valid for both kafkalab and tshark. Versions are ones Debian's tshark 4.0 dissects fully (so both tools
do the same work): Produce v7, Fetch v11, Heartbeat v3, OffsetCommit v7, Metadata v8, ListOffsets v5.
Deterministic for a given size: the same arguments write the same bytes.
"""
from __future__ import annotations

import random
from pathlib import Path

from kafkalab.pcap import TcpPcapWriter
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.records import build_batch, encode_records

START = 1_700_000_000.0
SERVER = ("10.1.0.1", 9092)


def _client(index: int) -> tuple[str, int]:
    return (f"10.2.{index // 200}.{index % 200 + 1}", 40000 + index)


def _batches(rng: random.Random, count: int, records: int, value_size: int, codec: str) -> list[bytes]:
    """``count`` distinct encoded v2 batches to draw from (building them is the slow part of generation)."""
    out = []
    for b in range(count):
        values = [(b"key-%d-%d" % (b, i), rng.randbytes(value_size // 2).hex().encode()[:value_size],
                   [("trace", b"%08x" % rng.getrandbits(32))], 1_700_000_000_000 + i) for i in range(records)]
        out.append(encode_records([build_batch(values, codec=codec, producer_id=7, producer_epoch=0,
                                               base_sequence=b * records)]))
    return out


def write_bulk(path: str | Path, target_bytes: int = 100 << 20, *, connections: int = 4, partitions: int = 8,
               records: int = 130, value_size: int = 100, codec: str = "none") -> dict:
    """Produce v7 requests, each answered, round-robin over ``connections`` producers, until the file holds
    ``target_bytes``. The defaults are Kafka's own: ``kafka-producer-perf-test``'s 100-byte records in the
    Java producer's 16 KiB batches (``batch.size``), one batch for each of ``partitions`` partitions per
    request (about 130 KB)."""
    rng = random.Random(1)
    pool = _batches(rng, 16, records, value_size, codec)
    frames = requests = 0
    ts = START
    written = 24
    with TcpPcapWriter(path) as writer:
        conns = [writer.open_connection(_client(i), SERVER, ts) for i in range(connections)]
        correlation = [0] * connections
        offsets = [0] * partitions
        while written < target_bytes:
            c = requests % connections
            correlation[c] += 1
            topic = f"bulk-{c}"
            body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": topic, "partition_data": [
                    {"index": p, "records": pool[(requests * partitions + p) % len(pool)]}
                    for p in range(partitions)]}]}
            raw = encode_request("Produce", 7, body, correlation_id=correlation[c], client_id=f"producer-{c}")
            ts += 0.0005
            writer.send(conns[c], True, raw, ts)
            answer = {"responses": [{"name": topic, "partition_responses": [
                {"index": p, "error_code": 0, "base_offset": offsets[p], "log_append_time_ms": -1,
                 "log_start_offset": 0} for p in range(partitions)]}], "throttle_time_ms": 0}
            for p in range(partitions):
                offsets[p] += records
            reply = encode_response("Produce", 7, answer, correlation_id=correlation[c])
            ts += 0.0005
            writer.send(conns[c], False, reply, ts)
            requests += 1
            frames += 2
            written += len(raw) + len(reply) + 2 * 70 * (1 + len(raw) // writer.mss)
        for conn in conns:
            writer.close(conn, ts)
    return {"frames": frames, "requests": requests}


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


def write_chatty(path: str | Path, frames: int = 200_000, *, connections: int = 50) -> dict:
    """Small requests and responses (empty Fetch, Heartbeat, OffsetCommit, Metadata), each in its own TCP
    segment, interleaved over ``connections`` consumers."""
    rng = random.Random(2)
    _POSITIONS.clear()
    ts = START
    count = 0
    with TcpPcapWriter(path) as writer:
        conns = [writer.open_connection(_client(i), SERVER, ts) for i in range(connections)]
        correlation = [0] * connections
        while count < frames:
            c = rng.randrange(connections)
            correlation[c] += 1
            kind = rng.randrange(100)
            api, version, request, response = _chatty_pair(rng, kind, f"consumer-{c}")
            raw = encode_request(api, version, request, correlation_id=correlation[c], client_id=f"consumer-{c}")
            reply = encode_response(api, version, response, correlation_id=correlation[c])
            ts += 0.00002
            writer.send(conns[c], True, raw, ts)
            ts += 0.00002 + rng.random() * 0.0001
            writer.send(conns[c], False, reply, ts)
            count += 2
        for conn in conns:
            writer.close(conn, ts)
    return {"frames": count}


def write_mixed(path: str | Path, target_bytes: int = 500 << 20, *, connections: int = 8) -> dict:
    """A long capture for the streaming check: producers sending Produce v7 (about 100 KB), consumers
    receiving Fetch v11 responses carrying the same batches, and small exchanges in between."""
    rng = random.Random(3)
    pool = _batches(rng, 16, 25, 1000, "none")
    ts = START
    frames = written = 0
    with TcpPcapWriter(path) as writer:
        conns = [writer.open_connection(_client(i), SERVER, ts) for i in range(connections)]
        correlation = [0] * connections
        rounds = 0
        while written < target_bytes:
            rounds += 1
            c = rounds % connections
            correlation[c] += 1
            topic = f"mixed-{c % 3}"
            batches = [pool[(rounds * 4 + p) % len(pool)] for p in range(4)]
            raw = encode_request("Produce", 7, {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
                                                "topic_data": [{"name": topic, "partition_data": [
                                                    {"index": p, "records": b} for p, b in enumerate(batches)]}]},
                                 correlation_id=correlation[c], client_id=f"producer-{c}")
            reply = encode_response("Produce", 7, {"responses": [{"name": topic, "partition_responses": [
                {"index": p, "error_code": 0, "base_offset": rounds * 25, "log_append_time_ms": -1,
                 "log_start_offset": 0} for p in range(4)]}], "throttle_time_ms": 0}, correlation_id=correlation[c])
            ts += 0.001
            writer.send(conns[c], True, raw, ts)
            writer.send(conns[c], False, reply, ts + 0.0002)
            d = (c + 1) % connections
            correlation[d] += 1
            fetch = encode_request("Fetch", 11, _chatty_pair(rng, 0, f"consumer-{d}")[2], correlation_id=correlation[d],
                                   client_id=f"consumer-{d}")
            answer = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
                {"topic": topic, "partitions": [{"partition_index": p, "error_code": 0, "high_watermark": 10 ** 6,
                                                 "last_stable_offset": 10 ** 6, "log_start_offset": 0,
                                                 "aborted_transactions": [], "preferred_read_replica": -1,
                                                 "records": b} for p, b in enumerate(batches)]}]}
            fetched = encode_response("Fetch", 11, answer, correlation_id=correlation[d])
            writer.send(conns[d], True, fetch, ts + 0.0003)
            writer.send(conns[d], False, fetched, ts + 0.0008)
            written += len(raw) + len(reply) + len(fetch) + len(fetched)
            frames += 4
            for _ in range(20):
                e = rng.randrange(connections)
                correlation[e] += 1
                api, version, request, response = _chatty_pair(rng, rng.randrange(50, 100), f"consumer-{e}")
                small = encode_request(api, version, request, correlation_id=correlation[e],
                                       client_id=f"consumer-{e}")
                small_reply = encode_response(api, version, response, correlation_id=correlation[e])
                ts += 0.00005
                writer.send(conns[e], True, small, ts)
                writer.send(conns[e], False, small_reply, ts + 0.00003)
                written += len(small) + len(small_reply) + 140
                frames += 2
            written += 8 * 70
        for conn in conns:
            writer.close(conn, ts)
    return {"frames": frames}


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
