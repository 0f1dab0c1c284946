"""kafkajs 2.2.4 over the broker's security listeners of a three-node cluster: SASL PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512 on SASL_PLAINTEXT, SSL trusting the broker's CA file, and SCRAM-SHA-512 on SASL_SSL, each
producing to every partition and reading the records back in a consumer group; a wrong password is refused.
The node side is tests/broker/js/kafkajs_sasl.js."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from broker_helpers import HERE

from kafkalab.broker import Broker
from kafkalab.protocol import ErrorCode

from tests.tools import ci_line, require, require_tool

JS = os.path.join(HERE, "js")
USER, SECRET = "alice", "alice-secret"
PARTITIONS = 3
RUNS = ("plain", "scram-sha-256", "scram-sha-512", "ssl", "sasl-ssl")


@pytest.fixture(scope="module")
def run():
    node = require_tool("node")
    require("kafkajs", os.path.isdir(os.path.join(JS, "node_modules", "kafkajs")), ci_line("npm install"))
    with Broker(nodes=3, sasl_port=0, ssl_port=0, sasl_ssl_port=0, users={USER: SECRET},
                topics={"t": PARTITIONS}, initial_rebalance_delay_ms=0) as broker:
        settings = {"sasl": broker.listener("SASL_PLAINTEXT"), "ssl": broker.listener("SSL"),
                    "saslSsl": broker.listener("SASL_SSL"), "ca": broker.ca_file, "topic": "t",
                    "username": USER, "password": SECRET}
        done = subprocess.run([node, os.path.join(JS, "kafkajs_sasl.js"), json.dumps(settings)],
                              capture_output=True, text=True, timeout=240, cwd=JS)
        assert done.returncode == 0, done.stderr
        yield broker, json.loads(done.stdout)


@pytest.mark.parametrize("name", RUNS)
def test_kafkajs_group_consumes_over_each_security_setup(run, name):
    _, result = run
    assert result["consumed"][name] == [f"{name}-{p}" for p in range(PARTITIONS)]


def test_kafkajs_authenticated_with_each_mechanism_on_every_node(run):
    broker, _ = run
    handshakes = {(f.body["mechanism"], int(f.dst.rsplit(":", 1)[1])) for f in broker.journal
                  if f.api_name == "SaslHandshake" and f.kind == "request"}
    sasl = {port for _, port in broker.state.cluster.listeners["SASL_PLAINTEXT"].values()}
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert {port for m, port in handshakes if m == mechanism and port in sasl} == sasl, mechanism
    joins = {int(f.dst.rsplit(":", 1)[1]) for f in broker.journal if f.api_name == "JoinGroup" and f.kind == "request"}
    plaintext = {port for _, port in broker.state.cluster.listeners["PLAINTEXT"].values()}
    assert joins and not joins & plaintext       # the groups were joined on the security listeners only


def test_kafkajs_wrong_password_is_refused(run):
    broker, result = run
    assert "SASL SCRAM SHA256 authentication failed" in result["wrong"], result["wrong"]
    assert any(f.api_name == "SaslAuthenticate" and f.kind == "response"
               and f.body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED for f in broker.journal)
