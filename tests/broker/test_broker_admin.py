"""The admin APIs on the wire, through the project's codec: topics, partitions, configs, records, cluster, dirs."""
from __future__ import annotations

import time
import uuid

from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.protocol.records import build_batch, encode_records

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
ZERO = uuid.UUID(int=0)


def _batch(values, ts=1000) -> bytes:
    return encode_records([build_batch([(b"k", v) for v in values], base_timestamp=ts)])


def _produce(client, topic, partition, values, version=9, acks=-1, ts=1000):
    body = {"acks": acks, "timeout_ms": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": partition, "records": _batch(values, ts)}]}]}
    return client.call("Produce", version, body)["responses"][0]["partition_responses"][0]


def _create(client, name, partitions=1, configs=()):
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs]}], "timeout_ms": 1000}
    return client.call("CreateTopics", 7, body)["topics"][0]


def _describe(client, resource_type, name, keys=None, version=4, **flags):
    body = {"resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
            "include_synonyms": flags.get("synonyms", True), "include_documentation": flags.get("docs", False)}
    return client.call("DescribeConfigs", version, body)["results"][0]


def _incremental(client, resource_type, name, *ops, validate_only=False):
    body = {"resources": [{"resource_type": resource_type, "resource_name": name, "configs": [
        {"name": n, "config_operation": op, "value": v} for n, op, v in ops]}], "validate_only": validate_only}
    return client.call("IncrementalAlterConfigs", 1, body)["responses"][0]


def test_delete_topics_by_name_and_by_id(raw, broker):
    client = raw()
    for name in ("a", "b", "c"):
        assert _create(client, name, 2)["error_code"] == 0
    old = client.call("DeleteTopics", 3, {"topic_names": ["a", "nope", "a"], "timeout_ms": 1000})["responses"]
    assert [(r["name"], r["error_code"]) for r in old] == [("a", 42), ("nope", 3)]
    b_id = broker.state.store.topic("b").topic_id
    body = {"topics": [{"name": None, "topic_id": b_id}, {"name": "c", "topic_id": ZERO},
                       {"name": None, "topic_id": uuid.uuid4()}, {"name": "c", "topic_id": b_id},
                       {"name": None, "topic_id": ZERO}], "timeout_ms": 1000}
    new = client.call("DeleteTopics", 6, body)["responses"]
    assert [(r["name"], r["error_code"]) for r in new] == [("b", 0), ("c", 0), (None, 100), ("c", 42), (None, 42)]
    assert new[0]["topic_id"] == b_id and new[2]["error_message"]
    assert set(broker.topics) == {"t", "a"}
    gone = client.call("Metadata", 12, {"topics": [{"name": "b"}], "allow_auto_topic_creation": False})
    assert gone["topics"][0]["error_code"] == 3


def test_create_partitions(raw, broker):
    client = raw()
    body = {"topics": [{"name": "t", "count": 4, "assignments": None}, {"name": "nope", "count": 2, "assignments": None},
                       {"name": "x", "count": 1, "assignments": None}], "timeout_ms": 1000, "validate_only": False}
    _create(client, "x", 3)
    results = client.call("CreatePartitions", 3, body)["results"]
    assert [(r["name"], r["error_code"]) for r in results] == [("t", 0), ("nope", 3), ("x", 37)]
    assert broker.topics["t"] == 4
    assigned = {"topics": [{"name": "x", "count": 5, "assignments": [{"broker_ids": [1]}, {"broker_ids": [2]}]},
                           {"name": "t", "count": 6, "assignments": [{"broker_ids": [1]}]}],
                "timeout_ms": 1000, "validate_only": False}
    assert [r["error_code"] for r in client.call("CreatePartitions", 1, assigned)["results"]] == [39, 39]
    dry = {"topics": [{"name": "x", "count": 9, "assignments": None}], "timeout_ms": 1000, "validate_only": True}
    assert client.call("CreatePartitions", 0, dry)["results"][0]["error_code"] == 0 and broker.topics["x"] == 3
    assert _produce(client, "t", 3, [b"new"])["base_offset"] == 0


def test_describe_configs_sources_synonyms_and_versions(raw):
    client = raw()
    assert _create(client, "cfg", configs=[("retention.ms", "1000"), ("cleanup.policy", "compact,delete")])[
        "error_code"] == 0
    result = _describe(client, TOPIC, "cfg", docs=True)
    assert result["error_code"] == 0
    configs = {c["name"]: c for c in result["configs"]}
    assert {"cleanup.policy", "retention.ms", "segment.bytes", "message.timestamp.type", "max.message.bytes",
            "compression.type", "min.insync.replicas"} <= set(configs)
    retention = configs["retention.ms"]
    assert (retention["value"], retention["config_source"], retention["config_type"]) == ("1000", 1, 5)
    assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [
        ("retention.ms", "1000", 1), ("log.retention.hours", "168", 5)]
    assert retention["documentation"]
    timestamp = configs["message.timestamp.type"]
    assert (timestamp["value"], timestamp["config_source"], timestamp["read_only"]) == ("CreateTime", 5, False)
    assert configs["segment.bytes"]["config_source"] == 4            # the broker's static log.segment.bytes
    only = _describe(client, TOPIC, "cfg", keys=["retention.ms", "no.such"], synonyms=False)
    assert [(c["name"], c["synonyms"], c["documentation"]) for c in only["configs"]] == [("retention.ms", [], None)]
    v0 = _describe(client, TOPIC, "cfg", keys=["retention.ms", "preallocate"], version=0, synonyms=False)
    assert [(c["name"], c["is_default"]) for c in v0["configs"]] == [("preallocate", True), ("retention.ms", False)]
    assert _describe(client, TOPIC, "missing")["error_code"] == 3
    assert _describe(client, TOPIC, "bad/name")["error_code"] == 17
    assert _describe(client, 99, "x")["error_code"] == 42


def test_describe_broker_configs(raw, broker):
    client = raw()
    result = _describe(client, BROKER, "1")
    configs = {c["name"]: c for c in result["configs"]}
    assert configs["node.id"]["value"] == "1" and configs["node.id"]["read_only"]
    assert configs["listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{broker.port}"
    assert configs["log.retention.hours"]["value"] == "168" and configs["log.retention.hours"]["config_source"] == 5
    assert configs["log.retention.ms"]["value"] is None
    assert [s["name"] for s in configs["log.retention.ms"]["synonyms"]] == ["log.retention.hours"]
    assert not configs["message.max.bytes"]["read_only"]
    assert _describe(client, BROKER, "")["configs"] == []
    assert _describe(client, BROKER, "7")["error_code"] == 42


def test_incremental_alter_configs_and_timestamp_type_takes_effect(raw):
    client = raw()
    _create(client, "stamp")
    before = _produce(client, "stamp", 0, [b"a"], ts=5)
    assert before["log_append_time_ms"] == -1
    assert _incremental(client, TOPIC, "stamp", ("message.timestamp.type", SET, "LogAppendTime"),
                        ("cleanup.policy", APPEND, "compact"))["error_code"] == 0
    now = int(time.time() * 1000)
    after = _produce(client, "stamp", 0, [b"b"], ts=5)
    assert after["log_append_time_ms"] >= now
    configs = {c["name"]: c for c in _describe(client, TOPIC, "stamp")["configs"]}
    assert configs["cleanup.policy"]["value"] == "delete,compact"
    assert _incremental(client, TOPIC, "stamp", ("cleanup.policy", SUBTRACT, "delete"),
                        ("message.timestamp.type", DELETE, None))["error_code"] == 0
    configs = {c["name"]: c for c in _describe(client, TOPIC, "stamp")["configs"]}
    assert configs["cleanup.policy"]["value"] == "compact"
    assert (configs["message.timestamp.type"]["value"], configs["message.timestamp.type"]["config_source"]) == (
        "CreateTime", 5)
    assert _produce(client, "stamp", 0, [b"c"], ts=5)["log_append_time_ms"] == -1
    errors = [_incremental(client, TOPIC, "stamp", *ops)["error_code"] for ops in (
        [("no.such.config", SET, "1")], [("retention.ms", SET, "soon")], [("message.timestamp.type", SET, "Later")],
        [("retention.ms", APPEND, "5")], [("retention.ms", 9, "5")], [("retention.ms", SET, None)],
        [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])]
    assert errors == [40, 40, 40, 40, 42, 42, 42]
    assert _incremental(client, TOPIC, "gone", ("retention.ms", SET, "1"))["error_code"] == 3
    dry = _incremental(client, TOPIC, "stamp", ("retention.ms", SET, "5"), validate_only=True)
    assert dry["error_code"] == 0
    assert _describe(client, TOPIC, "stamp", keys=["retention.ms"])["configs"][0]["config_source"] == 5


def test_broker_dynamic_defaults_flow_into_topics(raw):
    client = raw()
    _create(client, "inherit")
    assert _incremental(client, BROKER, "", ("log.retention.ms", SET, "5000"))["error_code"] == 0
    assert _incremental(client, BROKER, "1", ("message.max.bytes", SET, "2000"))["error_code"] == 0
    topic = {c["name"]: c for c in _describe(client, TOPIC, "inherit")["configs"]}
    assert (topic["retention.ms"]["value"], topic["retention.ms"]["config_source"]) == ("5000", 3)
    assert (topic["max.message.bytes"]["value"], topic["max.message.bytes"]["config_source"]) == ("2000", 2)
    assert _produce(client, "inherit", 0, [b"x" * 3000])["error_code"] == 10       # MESSAGE_TOO_LARGE
    cluster = _describe(client, BROKER, "")["configs"]
    assert [(c["name"], c["value"], c["config_source"]) for c in cluster] == [("log.retention.ms", "5000", 3)]
    assert _incremental(client, BROKER, "1", ("node.id", SET, "3"))["error_code"] == 40       # read-only
    assert _incremental(client, BROKER, "", ("log.retention.ms", DELETE, None))["error_code"] == 0
    assert _describe(client, BROKER, "")["configs"] == []


def test_alter_configs_replaces_the_whole_set(raw):
    client = raw()
    _create(client, "legacy", configs=[("retention.ms", "1000"), ("segment.bytes", "2000000")])
    body = {"resources": [{"resource_type": TOPIC, "resource_name": "legacy", "configs": [
        {"name": "max.message.bytes", "value": "5000"}]}], "validate_only": False}
    assert client.call("AlterConfigs", 2, body)["responses"][0]["error_code"] == 0
    configs = {c["name"]: c for c in _describe(client, TOPIC, "legacy")["configs"]}
    assert configs["max.message.bytes"]["config_source"] == 1
    assert configs["retention.ms"]["config_source"] == 5 and configs["segment.bytes"]["config_source"] == 4
    bad = {"resources": [{"resource_type": TOPIC, "resource_name": "legacy", "configs": [
        {"name": "segment.bytes", "value": "10"}]}, {"resource_type": TOPIC, "resource_name": "nope", "configs": []}],
        "validate_only": False}
    assert [r["error_code"] for r in client.call("AlterConfigs", 0, bad)["responses"]] == [40, 3]


def test_create_topics_validates_configs(raw):
    client = raw()
    assert _create(client, "c1", configs=[("no.such", "1")])["error_code"] == 40
    assert _create(client, "c2", configs=[("min.insync.replicas", "0")])["error_code"] == 40
    made = _create(client, "c3", configs=[("min.insync.replicas", "2")])
    assert made["error_code"] == 0
    assert {c["name"]: c["config_source"] for c in made["configs"]}["min.insync.replicas"] == 1
    assert _produce(client, "c3", 0, [b"x"], acks=-1)["error_code"] == 19              # NOT_ENOUGH_REPLICAS
    assert _produce(client, "c3", 0, [b"x"], acks=1)["error_code"] == 0


def test_delete_records_moves_the_log_start(raw):
    client = raw()
    for i in range(5):
        _produce(client, "t", 0, [b"%d-a" % i, b"%d-b" % i])
    def delete(offset, partition=0, topic="t"):
        body = {"topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
                "timeout_ms": 1000}
        p = client.call("DeleteRecords", 2, body)["topics"][0]["partitions"][0]
        return p["error_code"], p["low_watermark"]
    assert delete(5) == (0, 5)
    assert delete(3) == (0, 5)                           # never backwards
    assert delete(11) == (1, -1) and delete(-2) == (1, -1)
    assert delete(0, partition=7) == (3, -1) and delete(0, topic="nope") == (3, -1)
    listed = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2}]}]})
    assert listed["topics"][0]["partitions"][0]["offset"] == 5
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 10**6, "isolation_level": 0,
             "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 2, "partition_max_bytes": 10**6}]}]}
    assert client.call("Fetch", 11, fetch)["responses"][0]["partitions"][0]["error_code"] == 1
    fetch["topics"][0]["partitions"][0]["fetch_offset"] = 5
    part = client.call("Fetch", 11, fetch, records="batches")["responses"][0]["partitions"][0]
    assert part["log_start_offset"] == 5 and part["records"][0].base_offset == 4     # the batch holding 5
    assert delete(-1) == (0, 10)


def test_describe_cluster(raw, broker):
    client = raw()
    body = client.call("DescribeCluster", 2, {"include_cluster_authorized_operations": True, "endpoint_type": 1,
                                              "include_fenced_brokers": True})
    assert body["error_code"] == 0 and body["controller_id"] == 1 and body["cluster_id"] == broker.config.cluster_id
    assert [(b["broker_id"], b["port"], b["is_fenced"]) for b in body["brokers"]] == [(1, broker.port, False)]
    assert body["cluster_authorized_operations"] & (1 << 8)
    plain = client.call("DescribeCluster", 0, {"include_cluster_authorized_operations": False})
    assert plain["cluster_authorized_operations"] == -2147483648
    assert client.call("DescribeCluster", 1, {"endpoint_type": 2})["error_code"] == 114


def test_describe_topic_partitions_pages_with_a_cursor(raw):
    client = raw()
    _create(client, "p3", 3)
    _create(client, "p5", 5)
    def page(topics, limit, cursor=None):
        body = client.call("DescribeTopicPartitions", 0, {"topics": [{"name": n} for n in topics],
                                                          "response_partition_limit": limit, "cursor": cursor})
        got = [(t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]]) for t in body["topics"]]
        return got, body["next_cursor"]
    got, cursor = page(["p5", "p3", "zz"], 4)
    assert got == [("p3", 0, [0, 1, 2]), ("p5", 0, [0])] and cursor == {"topic_name": "p5", "partition_index": 1}
    got, cursor = page(["p5", "p3", "zz"], 4, cursor)
    assert got == [("p5", 0, [1, 2, 3, 4])] and cursor == {"topic_name": "zz", "partition_index": 0}
    got, cursor = page(["p5", "p3", "zz"], 4, cursor)
    assert got == [("zz", 3, [])] and cursor is None
    got, cursor = page([], 3)
    assert got == [("p3", 0, [0, 1, 2])] and cursor == {"topic_name": "p5", "partition_index": 0}
    got, _ = page(["p3"], 10, {"topic_name": "p5", "partition_index": 0})
    assert got == [("p3", 42, [])]
    assert page(["bad/name"], 10)[0] == [("bad/name", 17, [])]


def test_offset_for_leader_epoch(raw):
    client = raw()
    _produce(client, "t", 0, [b"a", b"b", b"c"])
    def ask(version, epoch, current=-1, partition=0):
        body = {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
            {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}]}]}
        p = client.call("OffsetForLeaderEpoch", version, body)["topics"][0]["partitions"][0]
        return p["error_code"], p.get("leader_epoch"), p["end_offset"]
    assert ask(4, 0) == (0, 0, 3) and ask(3, 5, current=0) == (0, 0, 3)
    assert ask(4, 0, current=1) == (75, -1, -1)
    assert ask(4, 0, partition=1) == (0, -1, -1)             # nothing ever written there
    assert ask(0, 0) == (0, None, 3) and ask(4, 0, partition=9)[0] == 3


def test_describe_log_dirs(raw, tmp_path):
    client = raw()
    _produce(client, "t", 1, [b"x" * 100])
    result = client.call("DescribeLogDirs", 4, {"topics": None})["results"][0]
    assert result["log_dir"] == "memory:" and result["total_bytes"] == -1
    sizes = {(t["name"], p["partition_index"]): p["partition_size"] for t in result["topics"] for p in t["partitions"]}
    assert sizes[("t", 0)] == 0 and sizes[("t", 1)] > 100
    some = client.call("DescribeLogDirs", 0, {"topics": [{"topic": "t", "partitions": [1, 5]}, {"topic": "x",
                                                                                                "partitions": [0]}]})
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in some["results"][0]["topics"]] == [
        ("t", [1])]
    with Broker(data_dir=tmp_path, topics={"f": 1}) as disk:
        other = RawClient(disk.bootstrap_servers)
        result = other.call("DescribeLogDirs", 5, {"topics": None})["results"][0]
        other.close()
        assert result["log_dir"] == str(tmp_path) and result["total_bytes"] > 0 and result["usable_bytes"] > 0


def test_dynamic_configs_survive_a_restart(tmp_path):
    with Broker(data_dir=tmp_path, topics={"keep": 1}) as broker:
        client = RawClient(broker.bootstrap_servers)
        assert _incremental(client, TOPIC, "keep", ("retention.ms", SET, "777"))["error_code"] == 0
        assert _incremental(client, BROKER, "", ("log.retention.hours", SET, "2"))["error_code"] == 0
        client.close()
    with Broker(data_dir=tmp_path) as broker:
        client = RawClient(broker.bootstrap_servers)
        assert {c["name"]: c["value"] for c in _describe(client, TOPIC, "keep")["configs"]}["retention.ms"] == "777"
        assert [c["name"] for c in _describe(client, BROKER, "")["configs"]] == ["log.retention.hours"]
        client.close()
