"""Every node of a ``Broker(nodes=3)`` has every listener, and metadata answers on the listener a request came
in on: confluent-kafka bootstrapped on one node's SASL_PLAINTEXT (or SSL) port produces to partitions led by
each node and reads them back in a group, reaching every node on that listener and no other; Metadata,
DescribeCluster, FindCoordinator and DescribeQuorum asked on a SASL port name SASL ports; the port scheme
(consecutive from each base) and its clash check; the CLI's help and refusal."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from kafkalab.broker import Broker
from kafkalab.protocol import ApiKey

USER, SECRET = "alice", "alice-secret"
PARTITIONS = 6
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def cluster():
    with Broker(nodes=3, sasl_port=0, ssl_port=0, users={USER: SECRET}, topics={"spread": PARTITIONS}) as b:
        yield b


def _ports(bootstrap: str) -> set[int]:
    return {int(address.rsplit(":", 1)[1]) for address in bootstrap.split(",")}


def _round_trip(broker, protocol: str, auth: dict, group: str) -> list[bytes]:
    """Produce one record to each partition through the last node's ``protocol`` port only, then consume them
    all in a group (FindCoordinator names node 1, on the same listener)."""
    from confluent_kafka import Consumer, Producer
    bootstrap = broker.listener(protocol).split(",")[-1]
    config = {"bootstrap.servers": bootstrap, "security.protocol": protocol, "client.id": group, **auth}
    delivered = []
    producer = Producer({**config, "message.timeout.ms": 20000})
    for p in range(PARTITIONS):
        producer.produce("spread", f"{group}-{p}".encode(), partition=p,
                         on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(30)
    assert delivered == [None] * PARTITIONS
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe(["spread"])
    got = []
    for _ in range(60):
        message = consumer.poll(1)
        if message is not None and message.error() is None and message.value().startswith(group.encode()):
            got.append(message.value())
        if len(got) == PARTITIONS:
            break
    consumer.close()
    reached = {int(f.dst.rsplit(":", 1)[1]) for f in broker.journal
               if f.client_id == group and f.kind == "request"}
    assert reached == _ports(broker.listener(protocol))     # every node, on this listener only
    return sorted(got)


def _frames_on(broker, api: str) -> set[int]:
    """The broker ports that ``api`` requests reached."""
    return {int(f.dst.rsplit(":", 1)[1]) for f in broker.journal if f.api_name == api and f.kind == "request"}


def test_every_node_has_every_listener(cluster):
    assert set(cluster.leaders("spread").values()) == {1, 2, 3}     # the partitions' leaders span the nodes
    listeners = cluster.state.cluster.listeners
    assert set(listeners) == {"PLAINTEXT", "SASL_PLAINTEXT", "SSL"}
    assert all(set(nodes) == {1, 2, 3} for nodes in listeners.values())
    ports = [port for nodes in listeners.values() for _, port in nodes.values()]
    assert len(set(ports)) == 9
    assert {host for nodes in listeners.values() for host, _ in nodes.values()} == {"127.0.0.1"}   # loopback only
    assert _ports(cluster.listener("SASL_PLAINTEXT")) == {port for _, port in listeners["SASL_PLAINTEXT"].values()}


def test_confluent_kafka_scram_sha_512_on_a_three_node_cluster(cluster):
    auth = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": SECRET}
    got = _round_trip(cluster, "SASL_PLAINTEXT", auth, "sasl-group")
    assert got == [f"sasl-group-{p}".encode() for p in range(PARTITIONS)]
    sasl = _ports(cluster.listener("SASL_PLAINTEXT"))
    assert sasl <= _frames_on(cluster, "Produce")        # every node's SASL port took records
    assert _frames_on(cluster, "SaslAuthenticate") == sasl         # it authenticated on every node's SASL port


def test_confluent_kafka_ssl_on_a_three_node_cluster(cluster):
    got = _round_trip(cluster, "SSL", {"ssl.ca.location": cluster.ca_file}, "tls-group")
    assert got == [f"tls-group-{p}".encode() for p in range(PARTITIONS)]
    assert _ports(cluster.listener("SSL")) <= _frames_on(cluster, "Fetch")


def test_metadata_describe_cluster_find_coordinator_and_quorum_follow_the_listener(cluster):
    """Asked on node 2's SASL_PLAINTEXT port (after a PLAIN login), every answer names SASL_PLAINTEXT ports."""
    from broker_helpers import RawClient
    expected = {node: port for node, (_, port) in cluster.state.cluster.listeners["SASL_PLAINTEXT"].items()}
    client = RawClient(cluster.listener("SASL_PLAINTEXT").split(",")[1])
    try:
        client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        login = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{USER}\0{SECRET}".encode()})
        assert login["error_code"] == 0
        metadata = client.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        assert {b["node_id"]: b["port"] for b in metadata["brokers"]} == expected
        described = client.call(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
        assert {b["broker_id"]: b["port"] for b in described["brokers"]} == expected
        found = client.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
        assert (found["node_id"], found["port"]) == (1, expected[1])
        quorum = client.call(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [{"topic_name": "__cluster_metadata",
                                                                     "partitions": [{"partition_index": 0}]}]})
        assert quorum["nodes"][0]["listeners"] == [{"name": "SASL_PLAINTEXT", "host": "127.0.0.1",
                                                    "port": expected[1]}]
    finally:
        client.close()


def test_a_sasl_client_is_told_the_sasl_ports(cluster):
    """Metadata asked over SASL_PLAINTEXT (after the handshake) lists each node's SASL_PLAINTEXT port."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": cluster.listener("SASL_PLAINTEXT").split(",")[2],
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                         "sasl.username": USER, "sasl.password": SECRET})
    brokers = admin.list_topics(timeout=15).brokers
    assert {node: b.port for node, b in brokers.items()} == \
        {node: port for node, (_, port) in cluster.state.cluster.listeners["SASL_PLAINTEXT"].items()}


def _free_block(size: int) -> int:
    """A base port with ``size`` consecutive free ports (best effort: checked by binding)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + size >= 65535:
            continue
        try:
            held = []
            for port in range(base, base + size):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    pytest.skip("no block of free ports")


def test_fixed_ports_are_consecutive_from_each_base():
    base = _free_block(6)
    with Broker(nodes=3, port=base, sasl_port=base + 3) as broker:
        assert broker.bootstrap_servers == f"127.0.0.1:{base},127.0.0.1:{base + 1},127.0.0.1:{base + 2}"
        assert broker.listener("SASL_PLAINTEXT") == \
            f"127.0.0.1:{base + 3},127.0.0.1:{base + 4},127.0.0.1:{base + 5}"
        assert broker.state.configs.static["listeners"] == \
            f"PLAINTEXT://127.0.0.1:{base},SASL_PLAINTEXT://127.0.0.1:{base + 3}"


def test_overlapping_listener_ports_are_refused():
    with pytest.raises(ValueError, match="port 9093 is asked for by both the PLAINTEXT and the SASL_PLAINTEXT"):
        Broker(nodes=3, port=9092, sasl_port=9093)
    Broker(nodes=1, port=9092, sasl_port=9093)          # one node: one port per listener, no clash


def test_cli_documents_the_scheme_and_refuses_a_clash():
    run = {"capture_output": True, "text": True, "timeout": 60, "cwd": ROOT,
           "env": {**os.environ, "PYTHONPATH": ROOT}}
    help_text = subprocess.run([sys.executable, "-m", "kafkalab", "broker", "--help"], **run).stdout
    assert "every node has every listener" in " ".join(help_text.split())
    done = subprocess.run([sys.executable, "-m", "kafkalab", "broker", "--nodes", "3", "--port", "0",
                           "--sasl-port", "9093", "--ssl-port", "9094"], **run)
    assert done.returncode == 2 and "port 9094 is asked for by both" in done.stderr, done.stderr
