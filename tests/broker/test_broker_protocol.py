"""The broker on the wire, through the project's codec: version rules, idempotence, fetch, robustness."""
from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time

import pytest

from kafkalab.broker.dispatch import Connection
from kafkalab.broker.handlers import build_registry, find_coordinator, MODULES
from kafkalab.broker.handlers.base import Handler
from kafkalab.broker.journal import Journal
from kafkalab.broker.state import BrokerState
from kafkalab.broker.config import BrokerConfig
from kafkalab.protocol import decode_response, encode_request
from kafkalab.protocol.records import build_batch, encode_records


def _batch(values, **kw) -> bytes:
    return encode_records([build_batch([(b"k", v) for v in values], base_timestamp=kw.pop("ts", 1000), **kw)])


def _produce(client, partition_records, topic="t", acks=-1, version=9):
    body = {"acks": acks, "timeout_ms": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": p, "records": r} for p, r in partition_records]}]}
    if acks == 0:
        client.send("Produce", version, body)
        return None
    return client.call("Produce", version, body)["responses"][0]["partition_responses"]


def test_kip511_api_versions_fallback(raw):
    client = raw()
    client.send("ApiVersions", 0, raw=struct.pack(">ihhi", 8, 18, 99, 42) + b"")   # v99, header without client id
    frame = client.read_frame()
    assert struct.unpack_from(">ii", frame) == (len(frame) - 4, 42)                # response header v0
    response = decode_response(frame, "ApiVersions", 4)   # the codec spots the v0 fallback
    assert response.api_version == 0 and response.body["error_code"] == 35
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response.body["api_keys"]}
    assert ranges[0] == (0, 13) and ranges[1] == (0, 18) and ranges[18] == (0, 4)
    assert client.call("ApiVersions", 4, {"client_software_name": "t", "client_software_version": "1"})[
        "error_code"] == 0


def test_unsupported_version_is_a_well_formed_error_response():
    registry = build_registry(MODULES)
    registry[10] = Handler(10, 0, 2, find_coordinator.handle)
    state = BrokerState(BrokerConfig())
    conn = Connection(state, registry, Journal(), stream=0, src="c:1", dst="b:2")
    frame = encode_request("FindCoordinator", 3, {"key": "g"}, correlation_id=9, client_id="x")
    out = conn.handle(frame, 0.0, 0)
    body = decode_response(out, "FindCoordinator", 3).body
    assert body["error_code"] == 35 and body["node_id"] == 0


def test_idempotent_sequences_duplicate_and_gap(raw):
    client = raw()
    init = client.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 1000})
    pid, epoch = init["producer_id"], init["producer_epoch"]
    assert pid >= 0 and epoch == 0
    idem = dict(producer_id=pid, producer_epoch=epoch)
    first = _batch([b"a", b"b", b"c"], base_sequence=0, **idem)
    assert _produce(client, [(0, first)])[0]["base_offset"] == 0
    assert _produce(client, [(0, _batch([b"other"]))])[0]["base_offset"] == 3           # not idempotent
    duplicate = _produce(client, [(0, first)])[0]
    assert (duplicate["error_code"], duplicate["base_offset"]) == (0, 0)
    assert _produce(client, [(0, _batch([b"d"], base_sequence=3, **idem))])[0]["base_offset"] == 4
    gap = _produce(client, [(0, _batch([b"e"], base_sequence=7, **idem))])[0]
    assert gap["error_code"] == 45                                                        # OUT_OF_ORDER_SEQUENCE
    bumped = client.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 1000,
                                               "producer_id": pid, "producer_epoch": epoch})
    assert (bumped["producer_id"], bumped["producer_epoch"]) == (pid, 1)                  # KIP-360 epoch bump
    assert _produce(client, [(0, _batch([b"e"], base_sequence=0, producer_id=pid, producer_epoch=1))])[0][
        "base_offset"] == 5
    stale = _produce(client, [(0, _batch([b"f"], base_sequence=4, **idem))])[0]
    assert stale["error_code"] == 47                                                      # INVALID_PRODUCER_EPOCH
    fetched = client.call("Fetch", 12, _fetch_body(0), records="batches")
    values = [r.value for b in fetched["responses"][0]["partitions"][0]["records"] for r in b.records]
    assert values == [b"a", b"b", b"c", b"other", b"d", b"e"]


def _fetch_body(offset, partition=0, max_wait=0, min_bytes=0, max_bytes=10**6, partition_max=10**6, topic="t"):
    return {"replica_id": -1, "max_wait_ms": max_wait, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max}]}]}


def test_corrupt_batch_is_rejected_and_acks0_gets_no_response(raw):
    client = raw()
    good = bytearray(_batch([b"x" * 20]))
    good[-3] ^= 0xFF
    assert _produce(client, [(0, bytes(good)), (1, _batch([b"y"]))]) == [
        {**_produce_result(0, 2), "error_message": "batch at byte 0 fails its CRC"}, {**_produce_result(1, 0, 0)}]
    _produce(client, [(0, _batch([b"z"]))], acks=0)
    assert client.call("ApiVersions", 3, {})["error_code"] == 0            # next answer is the ApiVersions one
    listed = client.call("ListOffsets", 7, {"replica_id": -1, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert listed["topics"][0]["partitions"][0]["offset"] == 1


def _produce_result(index, error, base_offset=-1):
    return {"index": index, "error_code": error, "base_offset": base_offset, "log_append_time_ms": -1,
            "log_start_offset": 0, "record_errors": [], "error_message": None}


def test_fetch_offsets_limits_and_out_of_range(raw):
    client = raw()
    for i in range(5):
        _produce(client, [(0, _batch([bytes([i]) * 100, bytes([i]) * 100]))])
    part = client.call("Fetch", 11, _fetch_body(4), records="batches")["responses"][0]["partitions"][0]
    assert [b.base_offset for b in part["records"]] == [4, 6, 8]          # the batch holding 4, whole
    assert (part["high_watermark"], part["last_stable_offset"], part["log_start_offset"]) == (10, 10, 0)
    one = client.call("Fetch", 11, _fetch_body(0, partition_max=10), records="batches")
    assert [b.base_offset for b in one["responses"][0]["partitions"][0]["records"]] == [0]  # KIP-74: one batch
    two = client.call("Fetch", 11, _fetch_body(0, max_bytes=500), records="batches")
    assert len(two["responses"][0]["partitions"][0]["records"]) == 1
    oor = client.call("Fetch", 11, _fetch_body(11))["responses"][0]["partitions"][0]
    assert oor["error_code"] == 1
    unknown = client.call("Fetch", 11, _fetch_body(0, topic="nope"))["responses"][0]["partitions"][0]
    assert unknown["error_code"] == 3


def test_fetch_by_topic_id_v13(raw, broker):
    client = raw()
    _produce(client, [(1, _batch([b"by-id"]))])
    meta = client.call("Metadata", 12, {"topics": [{"name": "t"}]})
    topic_id = meta["topics"][0]["topic_id"]
    body = _fetch_body(0, partition=1)
    body["topics"][0]["topic_id"] = topic_id
    fetched = client.call("Fetch", 13, body, records="batches")["responses"][0]
    assert fetched["topic_id"] == topic_id
    assert fetched["partitions"][0]["records"][0].records[0].value == b"by-id"


def test_fetch_long_poll_is_woken_by_produce(raw):
    waiting, producer = raw(), raw()
    started = time.time()
    result = {}

    def fetch():
        result["body"] = waiting.call("Fetch", 12, _fetch_body(0, max_wait=5000, min_bytes=1), records="batches")
        result["at"] = time.time()
    thread = threading.Thread(target=fetch)
    thread.start()
    time.sleep(0.3)
    _produce(producer, [(0, _batch([b"wake"]))])
    thread.join(10)
    part = result["body"]["responses"][0]["partitions"][0]
    assert part["records"][0].records[0].value == b"wake"
    assert 0.25 < result["at"] - started < 3
    quiet = time.time()
    empty = waiting.call("Fetch", 12, _fetch_body(1, max_wait=400, min_bytes=1))
    assert 0.35 < time.time() - quiet < 3 and empty["responses"][0]["partitions"][0]["records"] in (b"", [])


def test_list_offsets_and_log_append_time(raw, broker):
    client = raw()
    created = client.call("CreateTopics", 7, {"topics": [{"name": "stamped", "num_partitions": 1,
        "replication_factor": 1, "configs": [{"name": "message.timestamp.type", "value": "LogAppendTime"}]}],
        "timeout_ms": 1000})
    assert created["topics"][0]["error_code"] == 0
    before = int(time.time() * 1000)
    res = _produce(client, [(0, _batch([b"a", b"b"], ts=5))], topic="stamped")[0]
    assert res["error_code"] == 0 and res["log_append_time_ms"] >= before
    fetched = client.call("Fetch", 12, _fetch_body(0, topic="stamped"), records="batches")
    batch = fetched["responses"][0]["partitions"][0]["records"][0]
    assert batch.crc_ok and batch.timestamp_type == "log_append"
    assert [r.timestamp for r in batch.records] == [res["log_append_time_ms"]] * 2
    for ts, value in ((10, b"p"), (30, b"q"), (20, b"r")):
        _produce(client, [(1, _batch([value], ts=ts))])
    def lookup(ts):
        body = client.call("ListOffsets", 8, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 1, "timestamp": ts}]}]})
        p = body["topics"][0]["partitions"][0]
        return p["offset"], p["timestamp"]
    assert lookup(-2) == (0, -1) and lookup(-1) == (3, -1)
    assert lookup(-3) == (1, 30) and lookup(15) == (1, 30) and lookup(31) == (-1, -1)


def test_create_topics_validation(raw):
    client = raw()
    topics = [{"name": n, "num_partitions": p, "replication_factor": rf, "assignments": [], "configs": []}
              for n, p, rf in (("ok", 2, 1), ("x" * 250, 1, 1), ("..", 1, 1), ("bad name", 1, 1), ("t", 1, 1),
                               ("zero", 0, 1), ("rf", 1, 3), ("dflt", -1, -1))]
    body = client.call("CreateTopics", 5, {"topics": topics, "timeout_ms": 1000, "validate_only": False})
    assert [t["error_code"] for t in body["topics"]] == [0, 17, 17, 17, 36, 37, 38, 0]
    meta = client.call("Metadata", 9, {"topics": [{"name": "dflt"}, {"name": "nope"}],
                                        "allow_auto_topic_creation": False})
    assert [(t["name"], t["error_code"], len(t["partitions"])) for t in meta["topics"]] == [("dflt", 0, 1),
                                                                                          ("nope", 3, 0)]
    auto = client.call("Metadata", 9, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True})
    assert auto["topics"][0]["error_code"] == 0 and auto["controller_id"] == 1


def test_garbage_and_oversized_frames_close_only_that_connection(raw, broker):
    healthy = raw()
    assert healthy.call("ApiVersions", 3, {})["error_code"] == 0
    garbage = raw()
    garbage.send(None, 0, raw=b"\xff\xff\xff\xf0garbage")            # negative size
    assert garbage.is_closed()
    oversized = raw()
    oversized.send(None, 0, raw=struct.pack(">i", broker.config.max_request_size + 1) + b"x" * 100)
    assert oversized.is_closed()
    unknown_api = raw()
    unknown_api.send(None, 0, raw=struct.pack(">ihhih", 10, 999, 0, 1, -1))
    assert unknown_api.is_closed()
    junk_body = raw()
    junk_body.send(None, 0, raw=struct.pack(">ihhih", 12, 3, 9, 1, -1) + b"\xff\xff\xff\xff")
    assert junk_body.is_closed()
    assert healthy.call("Metadata", 12, {"topics": None})["topics"][0]["name"] == "t"


def test_two_hundred_concurrent_connections(broker):
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    async def one(i):
        reader, writer = await asyncio.open_connection(host, int(port))
        answers = []
        for cid, (api, version, body) in enumerate([("ApiVersions", 3, {}), ("Metadata", 12, {"topics": None})]):
            writer.write(encode_request(api, version, body, correlation_id=cid, client_id=f"c{i}"))
        await writer.drain()
        for cid, (api, version) in enumerate([("ApiVersions", 3), ("Metadata", 12)]):
            head = await reader.readexactly(4)
            frame = head + await reader.readexactly(struct.unpack(">i", head)[0])
            answers.append(decode_response(frame, api, version))
        writer.close()
        return answers

    async def all_of_them():
        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(200))), 60)

    results = asyncio.run(all_of_them())
    assert len(results) == 200
    for api_versions, metadata in results:
        assert api_versions.body["error_code"] == 0 and metadata.correlation_id == 1
        assert metadata.body["brokers"][0]["port"] == broker.port


def test_receive_buffer_cuts_frames_from_any_chunking():
    from kafkalab.broker.dispatch import CloseConnection, ReceiveBuffer
    frames = [encode_request("Metadata", 12, {"topics": [{"name": "x" * n}]}, correlation_id=n, client_id="c")
              for n in (1, 200, 3)] + [struct.pack(">i", 3_000_000) + bytes(3_000_000)]
    for chunk, count in ((1, 3), (777, 4), (4096, 4), (10 << 20, 4)):
        stream = b"".join(frames[:count])
        buffer, got = ReceiveBuffer(10 << 20), []
        for start in range(0, len(stream), chunk):
            piece = memoryview(stream)[start:start + chunk]
            while piece:
                space = buffer.space()
                n = min(len(space), len(piece))
                space[:n] = piece[:n]
                space.release()
                got += buffer.filled(n)
                piece = piece[n:]
        assert got == frames[:count] and buffer.start == buffer.end == 0
    assert len(buffer.data) < 4 * 1024 * 1024 and len(ReceiveBuffer(10).space()) >= 64 * 1024
    idle = ReceiveBuffer(10 << 20)
    idle.space()
    idle.filled(0)
    assert len(idle.space()) >= 64 * 1024
    oversized = ReceiveBuffer(100)
    space = oversized.space()
    space[:4] = struct.pack(">i", 101)
    space.release()
    with pytest.raises(CloseConnection):
        oversized.filled(4)
    assert len(oversized.data) < 1 << 20                               # nothing allocated for the claim


def test_requests_behind_a_long_poll_are_answered_in_order(raw):
    client = raw()
    first = client.send("Fetch", 12, _fetch_body(0, max_wait=400, min_bytes=1))
    second = client.send("ApiVersions", 3, {})
    started = time.time()
    answers = [decode_response(client.read_frame(), api, version) for api, version in (("Fetch", 12),
                                                                                          ("ApiVersions", 3))]
    assert [a.correlation_id for a in answers] == [first, second]
    assert 0.35 < time.time() - started < 3


def test_a_client_that_does_not_read_is_paused_not_buffered_forever(raw, broker):
    _produce(raw(), [(0, _batch([b"x" * 500_000]))])
    greedy = raw()
    greedy.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    for _ in range(200):                                  # ~100 MB of answers nobody reads
        greedy.send("Fetch", 12, _fetch_body(0))

    def greedy_state():                                   # runs on the broker's thread
        newest = max(broker._server.clients, key=lambda c: c.conn.stream)
        return set(newest.paused), newest.transport.get_write_buffer_size()
    deadline = time.time() + 10
    while "write" not in broker._loop.call(greedy_state)[0] and time.time() < deadline:
        time.sleep(0.05)
    paused, buffered = broker._loop.call(greedy_state)
    assert "write" in paused and buffered < 50 << 20
    other = raw()
    assert other.call("ApiVersions", 3, {})["error_code"] == 0


def _legacy(values, magic, codec="none"):
    built = build_batch([(b"k", v) for v in values], magic=magic, codec=codec, base_timestamp=1000)
    return encode_records(list(built) if isinstance(built, tuple) else [built])


def test_legacy_message_sets_and_v2_leader_epoch_on_append(raw):
    client = raw()
    sets = [_batch([b"v2-a", b"v2-b"]), _legacy([b"m0"], 0), _legacy([b"m1-a", b"m1-b"], 1),
            _legacy([b"z0-a", b"z0-b"], 0, "gzip"), _legacy([b"z1-a", b"z1-b", b"z1-c"], 1, "gzip")]
    bases = [_produce(client, [(0, s)], version=2)[0]["base_offset"] for s in sets]
    assert bases == [0, 2, 3, 5, 7]
    entries = client.call("Fetch", 4, _fetch_body(0), records="batches")["responses"][0]["partitions"][0]["records"]
    values = [r.value for e in entries for r in e.records]
    assert values == [b"v2-a", b"v2-b", b"m0", b"m1-a", b"m1-b", b"z0-a", b"z0-b", b"z1-a", b"z1-b", b"z1-c"]
    assert [r.offset for e in entries for r in e.records] == list(range(10))
    assert all(e.crc_ok for e in entries)
    assert entries[0].partition_leader_epoch == 0 and entries[0].base_offset == 0
