"""Requests that ask for unbounded work: a Metadata request naming thousands of new topics, a topic of a
hundred thousand partitions, a Produce to more partitions than there are file descriptors."""
from __future__ import annotations

import os
import resource
import time

from broker_helpers import RawClient
from hostile_inputs import v2_batch, v2_records

from kafkalab.broker import Broker

UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS = 3, 37


def test_metadata_auto_creation_is_capped_per_request(raw, broker):
    client = raw()
    started = time.monotonic()
    body = client.call("Metadata", 12, {"topics": [{"name": f"auto-{i}"} for i in range(5000)],
                                        "allow_auto_topic_creation": True})
    created = [t for t in body["topics"] if t["error_code"] == 0]
    assert 0 < len(created) <= 100
    assert {t["error_code"] for t in body["topics"]} <= {0, UNKNOWN_TOPIC_OR_PARTITION}
    assert len(broker.topics) <= 102 and time.monotonic() - started < 10


def test_partition_counts_are_capped(raw):
    client = raw()
    created = client.call("CreateTopics", 7, {"topics": [{"name": "huge", "num_partitions": 100_000,
                                                          "replication_factor": 1, "assignments": [], "configs": []}],
                                              "timeout_ms": 1000, "validate_only": False})["topics"][0]
    assert created["error_code"] == INVALID_PARTITIONS and "limit" in created["error_message"]
    grown = client.call("CreatePartitions", 3, {"topics": [{"name": "t", "count": 100_000, "assignments": None}],
                                                "timeout_ms": 1000, "validate_only": False})["results"][0]
    assert grown["error_code"] == INVALID_PARTITIONS


def test_produce_to_more_partitions_than_descriptors(tmp_path):
    partitions = 700
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 400, hard))
    try:
        with Broker(data_dir=tmp_path, topics={"wide": partitions}) as broker:
            client = RawClient(broker.bootstrap_servers)
            batch = v2_batch(v2_records([b"x"]), 1)
            body = client.call("Produce", 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
                {"name": "wide", "partition_data": [{"index": p, "records": batch} for p in range(partitions)]}]})
            results = body["responses"][0]["partition_responses"]
            assert [r["index"] for r in results] == list(range(partitions))
            assert all(r["error_code"] == 0 and r["base_offset"] == 0 for r in results)
            assert len(os.listdir("/proc/self/fd")) < in_use + 300
            client.close()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_partition_whose_storage_fails_does_not_hide_the_others(tmp_path):
    import shutil
    with Broker(data_dir=tmp_path, topics={"two": 2}, max_open_segment_files=1) as broker:
        client = RawClient(broker.bootstrap_servers)
        batch = v2_batch(v2_records([b"x"]), 1)

        def produce():
            body = client.call("Produce", 9, {"acks": 1, "timeout_ms": 5000, "topic_data": [
                {"name": "two", "partition_data": [{"index": p, "records": batch} for p in (0, 1)]}]})
            return body["responses"][0]["partition_responses"]
        produce()                                        # partition 1's segment is the one left open
        shutil.rmtree(tmp_path / "two-0")
        (tmp_path / "two-0").write_text("not a directory")   # partition 0's storage is gone
        results = produce()
        assert [(r["index"], r["error_code"]) for r in results] == [(0, 56), (1, 0)]   # KAFKA_STORAGE_ERROR
        assert results[1]["base_offset"] == 1
        client.close()
