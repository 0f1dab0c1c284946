"""Hostile Produce requests: a batch whose header lies never moves the log end offset, a legacy wrapper of a
million messages neither stalls other clients nor gets stored, an inner message failing its CRC is refused."""
from __future__ import annotations

import threading
import time

import pytest
from hostile_inputs import (gzip_wrapper, legacy_message, million_message_wrapper, produce_body, v2_batch,
                            v2_records)

from kafkalab.broker.storage import PartitionLog

INVALID_RECORD, CORRUPT_MESSAGE = 87, 2


def _produce(client, records, version=9):
    return client.call("Produce", version, produce_body(records))["responses"][0]["partition_responses"][0]


def _end_offset(client):
    listed = client.call("ListOffsets", 7, {"replica_id": -1, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    return listed["topics"][0]["partitions"][0]["offset"]


@pytest.mark.parametrize("count, delta", [(1, -3), (1, 2**31 - 1), (3, 1), (0, -1), (2, 2)])
def test_a_batch_whose_offset_range_lies_is_refused_and_offsets_stay_put(raw, count, delta):
    client = raw()
    assert _produce(client, v2_batch(v2_records([b"a", b"b", b"c"]), 3))["base_offset"] == 0
    hostile = v2_batch(v2_records([b"x"] * count), count, last_offset_delta=delta)
    answer = _produce(client, hostile)
    assert answer["error_code"] == INVALID_RECORD and answer["error_message"]
    assert _produce(client, hostile, version=7)["error_code"] == CORRUPT_MESSAGE   # before KIP-467
    assert _end_offset(client) == 3
    assert _produce(client, v2_batch(v2_records([b"d"]), 1))["base_offset"] == 3


@pytest.mark.parametrize("patch", ["magic", "length", "codec"])
def test_header_fields_the_crc_does_not_prove_are_checked(raw, patch):
    client = raw()
    batch = bytearray(v2_batch(v2_records([b"a"]), 1))
    if patch == "magic":
        batch += v2_batch(v2_records([b"b"]), 1, magic=3)
    elif patch == "length":
        batch[8:12] = (len(batch) - 12 + 5).to_bytes(4, "big")      # says 5 bytes more than there are
    else:
        batch = bytearray(v2_batch(v2_records([b"a"]), 1, codec=6))
    assert _produce(client, bytes(batch))["error_code"] in (INVALID_RECORD, CORRUPT_MESSAGE)
    assert _end_offset(client) == 0


def test_partition_log_append_refuses_a_rewinding_batch():
    log = PartitionLog.in_memory(1 << 20)
    log.append(v2_batch(v2_records([b"a", b"b", b"c"]), 3))
    with pytest.raises(ValueError):
        log.append(v2_batch(v2_records([b"x"]), 1, last_offset_delta=-3))
    assert log.next_offset == 3
    assert log.append(v2_batch(v2_records([b"d"]), 1)) == 3


def test_inner_message_failing_its_crc_is_refused(raw):
    client = raw()
    inner = legacy_message(b"good") + legacy_message(b"bad", crc=12345)
    assert _produce(client, gzip_wrapper(inner), version=2)["error_code"] == CORRUPT_MESSAGE
    assert _produce(client, gzip_wrapper(legacy_message(b"good")), version=2)["error_code"] == 0
    assert _end_offset(client) == 1


def test_million_message_wrapper_neither_stalls_others_nor_is_stored(broker, raw):
    attacker, honest = raw(), raw()
    bomb = million_message_wrapper()
    assert len(bomb) < 200_000
    latencies: list[float] = []
    done = threading.Event()

    def probe():
        while not done.is_set():
            start = time.monotonic()
            honest.call("ApiVersions", 3, {})
            latencies.append(time.monotonic() - start)
            time.sleep(0.01)
    thread = threading.Thread(target=probe)
    thread.start()
    try:
        start = time.monotonic()
        answer = _produce(attacker, bomb, version=2)
        took = time.monotonic() - start
    finally:
        done.set()
        thread.join(10)
    assert answer["error_code"] == CORRUPT_MESSAGE
    assert took < 10, took
    assert latencies and max(latencies) < 1.0, max(latencies)
    assert _end_offset(honest) == 0


def test_legacy_wrapper_is_counted_once_and_stored(raw):
    client = raw()
    wrapper = gzip_wrapper(b"".join(legacy_message(b"v%d" % i, offset=i) for i in range(5)))
    assert _produce(client, wrapper, version=2)["base_offset"] == 0
    assert _end_offset(client) == 5
    fetched = client.call("Fetch", 4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 10**6,
                                       "isolation_level": 0, "topics": [{"topic": "t", "partitions": [
                                           {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 10**6}]}]})
    records = fetched["responses"][0]["partitions"][0]["records"]
    assert [r.value for m in records for r in m.records] == [b"v%d" % i for i in range(5)]


def test_magic0_wrapper_of_many_messages_is_renumbered_without_decoding_them(raw):
    """A 16 KB magic 0 wrapper of 250,000 messages once held the event loop for 15 s while every message was
    decoded and re-encoded to rewrite its absolute offset."""
    client = raw()
    assert _produce(client, gzip_wrapper(b"".join(legacy_message(b"a%d" % i, magic=0, offset=i)
                                                  for i in range(3)), magic=0), version=1)["base_offset"] == 0
    bomb = gzip_wrapper(legacy_message(b"", magic=0) * 250_000, magic=0)
    started = time.monotonic()
    assert _produce(client, bomb, version=1)["base_offset"] == 3
    assert time.monotonic() - started < 5
    assert _end_offset(client) == 250_003
