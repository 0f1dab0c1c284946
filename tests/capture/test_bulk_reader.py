"""The bulk reader (kafkalab.capture.bulk) against the general pipeline and against what was sent: on every
capture, clean or damaged, read_capture must give the same frames, tables and connections whichever path
reads it, and only frames that were sent (all of them, on a clean capture). Captures are
generated with several interleaved connections, frames split across segments, unusual ports, and packets
dropped, swapped, duplicated, or cut from the start, so that regular and irregular connections mix."""
from __future__ import annotations

import io
import random
import struct
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import kafkalab.capture.capture as capture_module
from kafkalab.capture import read_capture
from kafkalab.capture.bulk import read_bulk
from kafkalab.pcap import TcpPcapWriter
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.records import build_batch, encode_records

from tests.capture.builders import pcapng_bytes, write_golden_pcap

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _both(path, ports=None):
    capture_module.BULK = False
    try:
        general = read_capture(path, ports=ports)
    finally:
        capture_module.BULK = True
    return read_capture(path, ports=ports), general


def assert_same(bulk, general):
    assert len(bulk) == len(general)
    assert repr(bulk) == repr(general)
    pd.testing.assert_frame_equal(bulk.frames, general.frames)
    pd.testing.assert_frame_equal(bulk.connections, general.connections)
    for a, b in zip(bulk, general):
        assert a.row() == b.row(), (a, b)
        assert (a.raw, a.stream_offset, a.topic_ids, a.body, a.inferred) == \
               (b.raw, b.stream_offset, b.topic_ids, b.body, b.inferred)
        assert a.message.diagnostics == b.message.diagnostics and (a.tree is None) == (b.tree is None)
    pd.testing.assert_frame_equal(bulk.exchanges, general.exchanges)
    pd.testing.assert_frame_equal(bulk.records, general.records)


def _exchange(rnd: random.Random, correlation_id: int, client_id: str) -> tuple[bytes, bytes | None]:
    kind = rnd.randrange(4)
    if kind == 0:
        body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
        return (encode_request("Heartbeat", 3, body, correlation_id=correlation_id, client_id=client_id),
                encode_response("Heartbeat", 3, {"throttle_time_ms": 0, "error_code": rnd.choice([0, 0, 27])},
                                correlation_id=correlation_id))
    if kind == 1:
        values = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(300))) for _ in range(rnd.randrange(1, 5))]
        records = encode_records([build_batch([(b"k%d" % i, value) for i, value in enumerate(values)])])
        acks = rnd.choice([-1, 1, 0])
        body = {"transactional_id": None, "acks": acks, "timeout_ms": 100, "topic_data": [
            {"name": "t%d" % rnd.randrange(3), "partition_data": [{"index": 0, "records": records}]}]}
        request = encode_request("Produce", 7, body, correlation_id=correlation_id, client_id=client_id)
        answer = {"responses": [{"name": body["topic_data"][0]["name"], "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": correlation_id, "log_append_time_ms": -1,
             "log_start_offset": 0}]}], "throttle_time_ms": 0}
        return request, None if acks == 0 else encode_response("Produce", 7, answer, correlation_id=correlation_id)
    if kind == 2:
        body = {"topics": [{"name": "t1"}], "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}
        answer = {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": 1, "topics": [
            {"error_code": 0, "name": "t1", "is_internal": False, "partitions": [], "topic_authorized_operations": 0}],
            "cluster_authorized_operations": 0}
        return (encode_request("Metadata", 8, body, correlation_id=correlation_id, client_id=client_id),
                encode_response("Metadata", 8, answer, correlation_id=correlation_id))
    return (encode_request("ApiVersions", 2, {}, correlation_id=correlation_id, client_id=client_id),
            encode_response("ApiVersions", 2, {"error_code": 0, "api_keys": [
                {"api_key": 0, "min_version": 0, "max_version": 9}], "throttle_time_ms": 0},
                correlation_id=correlation_id))


def _records(data: bytes) -> tuple[bytes, list[bytes]]:
    head, pos, out = data[:24], 24, []
    while pos < len(data):
        size = struct.unpack_from("<I", data, pos + 8)[0]
        out.append(data[pos:pos + 16 + size])
        pos += 16 + size
    return head, out


def make_capture(rnd: random.Random, sent: dict | None = None) -> tuple[bytes, list[int]]:
    """A random capture and the ports to name; ``sent`` (if given) gets what each client and server sent, by
    "ip:port" of the sender, ``sent["damaged"]`` whether packets were then dropped, moved or cut, and
    ``sent["found by traffic"]`` whether a connection is on a port neither known nor named."""
    sent = {} if sent is None else sent
    out = io.BytesIO()
    ports = []
    with TcpPcapWriter(out, mss=rnd.choice([64, 300, 1500, 65483])) as writer:
        conns = []
        for c in range(rnd.randrange(1, 5)):
            port = rnd.choice([9092, 9092, 9093, 19092, 5555])
            if port == 5555:
                ports.append(port)
            sent["found by traffic"] = sent.get("found by traffic", False) or port == 19092
            conns.append([writer.open_connection(("10.0.%d.1" % c, 40000 + c), ("10.9.0.1", port), 1.0 + c), 0])
        ts = 10.0
        for _ in range(rnd.randrange(1, 30)):
            conn = rnd.choice(conns)
            conn[1] += 1
            request, response = _exchange(rnd, conn[1], "client-%d" % conns.index(conn))
            ts += 0.001
            writer.send(conn[0], True, request, ts)
            sent.setdefault("%s:%d" % conn[0].client, []).append(request)
            if response is not None and rnd.random() < 0.95:
                ts += 0.0005
                writer.send(conn[0], False, response, ts)
                sent.setdefault("%s:%d/%d" % (*conn[0].server, conn[0].client[1]), []).append(response)
        for conn, _ in conns:
            if rnd.random() < 0.7:
                writer.close(conn, ts + 0.01)
    head, records = _records(out.getvalue())
    damage = rnd.randrange(4)
    sent["damaged"] = damage != 0 and len(records) > 6
    if damage == 1 and len(records) > 6:                      # drop a few packets
        for _ in range(rnd.randrange(1, 3)):
            del records[rnd.randrange(3, len(records))]
    elif damage == 2 and len(records) > 6:                    # swap neighbours, duplicate one
        i = rnd.randrange(3, len(records) - 1)
        records[i], records[i + 1] = records[i + 1], records[i]
        records.insert(rnd.randrange(3, len(records)), records[rnd.randrange(3, len(records))])
    elif damage == 3 and len(records) > 6:                    # the capture starts late
        records = records[rnd.randrange(1, len(records) // 2):]
    return head + b"".join(records), ports


def as_pcapng(data: bytes, rnd: random.Random) -> bytes:
    """The same packets as enhanced packet blocks (microsecond or nanosecond units, two interfaces)."""
    _, records = _records(data)
    nanos = rnd.random() < 0.5
    packets = []
    for record in records:
        seconds, fraction = struct.unpack_from("<II", record, 0)
        units = seconds * 10**9 + fraction if nanos else seconds * 10**6 + fraction // 1000
        packets.append((rnd.randrange(2), units, record[16:], "epb"))
    return pcapng_bytes([(1, 9 if nanos else None), (1, 9 if nanos else None)], packets)


@settings(max_examples=120, deadline=None)
@given(st.randoms(use_true_random=False))
def test_bulk_reader_matches_the_general_pipeline(tmp_path_factory, rnd):
    path = tmp_path_factory.mktemp("bulk") / "random.pcap"
    sent: dict = {}
    data, ports = make_capture(rnd, sent)
    if rnd.random() < 0.3:
        data = as_pcapng(data, rnd)
    path.write_bytes(data)
    bulk, general = _both(path, ports or None)
    assert_same(bulk, general)
    damaged, found_by_traffic = sent.pop("damaged"), sent.pop("found by traffic")
    # the oracle: what was sent. Each stream's frames from each sender are frames that sender sent, in the
    # order sent (none invented, cut wrong or reordered, whatever the damage: a lost packet may only lose
    # frames, and a packet duplicated before the handshake makes a stream of its own)...
    got: dict = {}
    by_stream: dict = {}
    for frame in bulk:
        sender = frame.src if frame.kind == "request" else f"{frame.src}/{frame.dst.rsplit(':', 1)[1]}"
        got.setdefault(sender, []).append(frame.raw)
        by_stream.setdefault((frame.stream, sender), []).append(frame.raw)
    for (_, sender), frames in by_stream.items():
        assert _in_order_within(frames, sent.get(sender, [])), sender
    if not damaged and not found_by_traffic:
        assert got == sent                      # ...and on a clean capture, every frame sent, exactly


def _in_order_within(frames: list, sent: list) -> bool:
    """Whether ``frames`` is ``sent`` with some frames left out."""
    remaining = iter(sent)
    return all(any(frame == other for other in remaining) for frame in frames)


@pytest.mark.parametrize("name", sorted(p.name for p in CAPTURES.glob("*.pcap")))
def test_bulk_reader_on_the_shipped_captures(name):
    import json

    port = json.loads((CAPTURES / name).with_suffix(".json").read_text())["port"]
    bulk, general = _both(CAPTURES / name, [port])
    assert_same(bulk, general)


def test_bulk_reader_on_the_golden_corpus(tmp_path):
    path = tmp_path / "golden.pcap"
    write_golden_pcap(path)
    assert read_bulk(path) is not None                        # a clean capture: the bulk path is taken
    bulk, general = _both(path)
    assert_same(bulk, general)
    pcapng = tmp_path / "golden.pcapng"
    pcapng.write_bytes(as_pcapng(path.read_bytes(), random.Random(1)))
    assert read_bulk(pcapng) is not None
    bulk, general = _both(pcapng)
    assert_same(bulk, general)


def test_bulk_reader_declines_what_it_does_not_handle(tmp_path):
    path = tmp_path / "golden.pcap"
    write_golden_pcap(path)
    data = path.read_bytes()
    import gzip

    (tmp_path / "g.pcap.gz").write_bytes(gzip.compress(data))
    (tmp_path / "cut.pcap").write_bytes(data[:-10])
    assert read_bulk(tmp_path / "g.pcap.gz") is None
    assert read_bulk(tmp_path / "cut.pcap") is None
    assert read_bulk(data) is None                            # bytes, not a path
    bulk, general = _both(tmp_path / "cut.pcap")
    assert general.diagnostics and len(bulk) == len(general)


def test_repeated_frames_share_nothing_a_user_can_change(tmp_path):
    """Identical heartbeats are described once and reused by the bulk reader; each Frame still owns its lists."""
    out = tmp_path / "heartbeats.pcap"
    with TcpPcapWriter(out) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.9.0.1", 9092), 1.0)
        for n in range(1, 4):
            body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
            request = encode_request("Heartbeat", 3, body, correlation_id=n, client_id="client")
            response = encode_response("Heartbeat", 3, {"throttle_time_ms": 0, "error_code": 0}, correlation_id=n)
            writer.send(conn, True, request, 1.0 + n)
            writer.send(conn, False, response, 1.0 + n + 0.001)
    bulk, general = _both(out)
    assert_same(bulk, general)
    assert bulk.frames["correlation_id"].tolist() == [1, 1, 2, 2, 3, 3]
    first, second = bulk[1], bulk[3]
    first.topics.append("mine")
    first.diagnostics.append("note")
    assert second.topics == [] and second.diagnostics == []
    assert bulk.frames["topics"][2] == [] and bulk.frames["diagnostics"][0] == []
    assert bulk.frames["summary"].nunique() == 2


def test_a_kafka_port_without_kafka_is_explained(tmp_path):
    """An SSL listener on 9093 (TLS records) and an HTTP client on 9094 give no frames, but a note each that
    says why, next to a plain Kafka connection that decodes as usual (both readers)."""
    out = tmp_path / "mixed.pcap"
    rnd = random.Random(5)
    with TcpPcapWriter(out) as writer:
        tls = writer.open_connection(("10.0.0.1", 40000), ("10.9.0.1", 9093), 1.0)
        writer.send(tls, True, bytes.fromhex("1603010200") + rnd.randbytes(0x200), 1.1)
        writer.send(tls, False, bytes.fromhex("160303007a") + rnd.randbytes(0x7a), 1.2)
        http = writer.open_connection(("10.0.0.2", 40001), ("10.9.0.1", 9094), 1.3)
        writer.send(http, True, b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n", 1.4)
        kafka = writer.open_connection(("10.0.0.3", 40002), ("10.9.0.1", 9092), 1.5)
        request, response = _exchange(random.Random(1), 1, "plain")
        writer.send(kafka, True, request, 1.6)
        writer.send(kafka, False, response, 1.7)
        elsewhere = writer.open_connection(("10.0.0.4", 40003), ("10.9.0.1", 5555), 1.8)
        writer.send(elsewhere, True, request, 1.9)          # Kafka on a port of its own, never answered
    bulk, general = _both(out)
    assert_same(bulk, general)
    assert len(bulk) == 2 and set(bulk.frames["stream"]) == {2}
    summary = bulk[1].summary
    for cap in (bulk, general):
        assert cap.diagnostics == [
            "stream 0 (10.0.0.1:40000 → 10.9.0.1:9093): TLS, not plain Kafka (an SSL or SASL_SSL listener?): "
            "its 644 bytes cannot be decoded without the session keys",
            "stream 1 (10.0.0.2:40001 → 10.9.0.1:9094): no Kafka frame in 32 bytes on a Kafka port "
            "(starts 47 45 54 20 2f 20 48 54)",
            f"stream 3 (10.0.0.4:40003 → 10.9.0.1:5555): 1 unanswered request(s) that read as Kafka ({summary}) "
            "on a port not known for Kafka; to decode them, name the port (-p 5555, ports=[5555])"]
    assert len(read_capture(out, ports=[5555])) == 3


def test_an_exchange_of_an_api_the_schema_lacks_and_a_timestamp_pandas_cannot_hold(tmp_path):
    """Found by fuzzing shipped captures: a request whose API key is unknown (its response used to raise),
    and a record timestamp past what pandas can hold (the records table used to raise)."""
    out = tmp_path / "odd.pcap"
    heartbeat = encode_request("Heartbeat", 3, {"group_id": "g", "generation_id": 1, "member_id": "m",
                                                "group_instance_id": None}, correlation_id=1, client_id="c")
    unknown = heartbeat[:4] + struct.pack(">h", 500) + heartbeat[6:]
    answer = encode_response("Heartbeat", 3, {"throttle_time_ms": 0, "error_code": 0}, correlation_id=1)
    records = encode_records([build_batch([(b"k", b"v", [], 2**62)])])
    produce = encode_request("Produce", 7, {"transactional_id": None, "acks": 0, "timeout_ms": 100, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": records}]}]}, correlation_id=2, client_id="c")
    with TcpPcapWriter(out) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.9.0.1", 9092), 1.0)
        writer.send(conn, True, unknown, 1.1)
        writer.send(conn, False, answer, 1.2)
        writer.send(conn, True, produce, 1.3)
    bulk, general = _both(out)
    assert_same(bulk, general)
    request, response, _ = bulk
    assert request.api_name == "Unknown(500)" and request.diagnostics == [
        "unsupported: unknown API key 500 (at header.request_api_version, offset 6)"]
    assert response.request_frame == 1 and response.correlation_id == 1
    assert response.diagnostics == ["unsupported: unknown API key 500 (offset 8)"]
    table = bulk.records
    assert len(table) == 1 and table["value"][0] == b"v" and pd.isna(table["timestamp"][0])
