"""kafkajs 2.2.4 (node) against the broker: admin, keyed records with headers and timestamps, gzip, read back by
a consumer group (kafkajs has no assign()), offsets for times, and the two-member group flow. The node side is tests/broker/js/kafkajs_check.js; CI installs kafkajs with
``npm install --prefix tests/broker/js`` (package.json pins 2.2.4)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from broker_helpers import HERE

from kafkalab.broker import Broker

from tests.tools import ci_line, require, require_tool

JS = os.path.join(HERE, "js")
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def run():
    node = require_tool("node")
    require("kafkajs", os.path.isdir(os.path.join(JS, "node_modules", "kafkajs")), ci_line("npm install"))
    with Broker(topics={"t": 2}) as broker:
        done = subprocess.run([node, os.path.join(JS, "kafkajs_check.js"), broker.bootstrap_servers, "t"],
                              capture_output=True, text=True, timeout=180, cwd=JS)
        assert done.returncode == 0, done.stderr
        yield broker, json.loads(done.stdout)


def test_kafkajs_admin(run):
    _, result = run
    admin = result["admin"]
    assert admin["created"] is True and admin["badName"] == "INVALID_TOPIC_EXCEPTION"
    assert admin["partitions"] == 4
    # AlterConfigs replaces the whole set: retention.ms (set at creation) is back to its default
    assert admin["configs"] == {"cleanup.policy": ["compact", False], "retention.ms": ["604800000", True]}
    assert admin["topicsAfterDelete"] == ["t"]


def test_kafkajs_keyed_records_headers_timestamps_gzip(run):
    broker, result = run
    assert result["produced"] == {"plain": [[0, 0, "0"]], "gzip": [[1, 0, "0"]]}
    for partition in ("0", "1"):
        records = result["read"][partition]
        assert [(r["offset"], r["key"], r["value"], r["timestamp"], r["headers"]) for r in records] == [
            (str(i), f"key-{partition}-{i}", f"value-{partition}-{i}", str(BASE_TS + 1000 * i),
             {"h": str(i), "source": "kafkajs"}) for i in range(10)]
    codecs = {p["index"]: {b.codec for b in p["records"]} for f in broker.journal
              if f.api_name == "Produce" and f.kind == "request" for t in f.body["topic_data"] if t["name"] == "t"
              for p in t["partition_data"]}
    assert codecs == {0: {"none"}, 1: {"gzip"}}


def test_kafkajs_offsets_for_times(run):
    _, result = run
    assert result["times"]["byTime"] == [[0, "4"], [1, "4"]]
    assert result["times"]["latest"] == [[0, "10", "0", "10"], [1, "10", "0", "10"]]


def test_kafkajs_group_rebalance_commit_leave_resume(run):
    broker, result = run
    groups = result["groups"]
    first, second = (set(a) for a in groups["assignments"])
    assert first and second and not first & second and first | second == {0, 1, 2, 3}
    assert groups["afterLeave"] == [0, 1, 2, 3]
    store = broker.state.store
    assert groups["resumed"] == {str(p): 5 for p in range(4)}                  # exactly at the committed offsets
    assert {p: store.fetch_committed("kafkajs-group", "js-groups", p).offset for p in range(4)} == \
        {p: 6 for p in range(4)}                                               # the last member committed on leaving


def test_kafkajs_idempotent_producer_read_back(run):
    broker, result = run
    assert result["idempotent"] == {"baseOffset": "0", "values": [f"idem-{i}" for i in range(5)]}
    produce = [p for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
               for t in f.body["topic_data"] if t["name"] == "js-idempotent" for p in t["partition_data"]]
    assert {b.producer_id >= 0 and b.base_sequence == 0 for p in produce for b in p["records"]} == {True}
