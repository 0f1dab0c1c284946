"""TLS listeners (SSL, SASL_SSL) with a certificate made at start or given: real clients connect with the CA
file, a client that does not trust it is refused, and the journal still holds the plaintext frames."""
from __future__ import annotations

import asyncio
import os
import socket
import ssl
import subprocess

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.broker.tls import self_signed
from kafkalab.protocol import ErrorCode, decode_response, encode_request

from tests.tools import require_tool

USER, SECRET = "alice", "alice-secret"


@pytest.fixture(scope="module")
def broker():
    with Broker(ssl_port=0, sasl_ssl_port=0, users={USER: SECRET}, topics={"t": 1}) as b:
        yield b


def test_confluent_kafka_ssl_with_ca_file(broker):
    from confluent_kafka import Producer
    delivered = []
    producer = Producer({"bootstrap.servers": broker.listener("SSL"), "security.protocol": "SSL",
                         "ssl.ca.location": broker.ca_file, "message.timeout.ms": 15000})
    producer.produce("t", b"over tls", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(20)
    assert delivered == [None]
    values = [bytes(b.records[0].value) for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
              for t in f.body["topic_data"] for p in t["partition_data"] for b in p["records"]]
    assert b"over tls" in values            # decoded from the journal: plaintext frames


def test_kafka_python_sasl_ssl_scram(broker):
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=broker.listener("SASL_SSL"), security_protocol="SASL_SSL",
                             ssl_cafile=broker.ca_file, sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=USER,
                             sasl_plain_password=SECRET)
    assert producer.send("t", b"sasl over tls").get(15).topic == "t"
    producer.close(5)


def test_aiokafka_ssl(broker):
    from aiokafka import AIOKafkaProducer

    async def produce():
        producer = AIOKafkaProducer(bootstrap_servers=broker.listener("SSL"), security_protocol="SSL",
                                    ssl_context=ssl.create_default_context(cafile=broker.ca_file))
        await producer.start()
        try:
            return await producer.send_and_wait("t", b"aiokafka tls")
        finally:
            await producer.stop()
    assert asyncio.run(asyncio.wait_for(produce(), 60)).topic == "t"


def test_kcat_sasl_ssl_plain(broker):
    done = subprocess.run([require_tool("kcat"), "-b", broker.listener("SASL_SSL"), "-m", "15", "-L",
                           "-X", "security.protocol=SASL_SSL", "-X", f"ssl.ca.location={broker.ca_file}",
                           "-X", "sasl.mechanisms=PLAIN", "-X", f"sasl.username={USER}",
                           "-X", f"sasl.password={SECRET}"], capture_output=True, text=True, timeout=40)
    assert done.returncode == 0, done.stderr
    assert "1 brokers" in done.stdout and "topic \"t\"" in done.stdout


def test_untrusting_client_is_refused(broker):
    host, port = broker.listener("SSL").rsplit(":", 1)
    with pytest.raises(ssl.SSLCertVerificationError):
        ssl.create_default_context().wrap_socket(socket.create_connection((host, int(port)), 10),
                                                 server_hostname="localhost")


def test_given_certificate_and_raw_client(tmp_path):
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    self_signed(cert, key, "127.0.0.1")
    with Broker(ssl_port=0, tls_cert=cert, tls_key=key, data_dir=str(tmp_path / "data")) as broker:
        assert broker.ca_file == cert
        client = RawClient(broker.bootstrap_servers)        # the plaintext listener is still there
        client.close()
        host, port = broker.listener("SSL").rsplit(":", 1)
        context = ssl.create_default_context(cafile=cert)
        with context.wrap_socket(socket.create_connection((host, int(port)), 10), server_hostname=host) as sock:
            sock.sendall(encode_request("ApiVersions", 3, {"client_software_name": "t", "client_software_version": "1"},
                                        correlation_id=5, client_id="tls"))
            data = b""
            while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
                data += sock.recv(65536)
        assert decode_response(data, "ApiVersions", 3).body["error_code"] == ErrorCode.NONE
    assert not os.path.exists(tmp_path / "data" / "tls")     # given files: nothing generated
