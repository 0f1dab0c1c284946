"""kafkajs 2.2.4 transactions against the broker: commit, abort, consume-transform-produce (a group member
consumes, sendOffsets commits its offsets in the transaction) and a fenced zombie, driven by
tests/broker/js/kafkajs_transactions.js; kafkajs consumers read the results back with readUncommitted false and
true, and librdkafka consumers read them again here."""
from __future__ import annotations

import json
import os
import subprocess

from broker_helpers import HERE

from tests.tools import ci_line, require, require_tool
from test_broker_transactions import ABORTED, COMMITTED, committed_offset, read

from kafkalab.broker import Broker

JS = os.path.join(HERE, "js")


def test_kafkajs_transactions():
    node = require_tool("node")
    require("kafkajs", os.path.isdir(os.path.join(JS, "node_modules", "kafkajs")), ci_line("npm install"))
    with Broker(topics={"t": 2, "in": 1, "out": 1}) as broker:
        done = subprocess.run([node, os.path.join(JS, "kafkajs_transactions.js"), broker.bootstrap_servers],
                              capture_output=True, text=True, timeout=90, cwd=JS)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["fenced"] in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")
        assert result["consumed"] == ["x0", "x1", "x2"]
        assert result["read"] == {"committed": ["c1", "c2", "c3", "successor"],
                                  "uncommitted": ["a1", "a2", "c1", "c2", "c3", "successor", "zombie"],
                                  "outCommitted": ["X0", "X1", "X2"]}
        bootstrap = broker.bootstrap_servers
        assert read(bootstrap, "t", "read_committed") == sorted(COMMITTED + [b"successor"])
        assert read(bootstrap, "t", "read_uncommitted") == sorted(COMMITTED + ABORTED + [b"successor", b"zombie"])
        assert read(bootstrap, "out", "read_committed", (0,)) == [b"X0", b"X1", b"X2"]
        assert len(read(bootstrap, "out", "read_uncommitted", (0,))) == 6
        assert committed_offset(broker, "js-ctp", "in", 0) == 3
