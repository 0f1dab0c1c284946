"""SASL on the wire through kafkalab's codec: SaslHandshake v0-1, SaslAuthenticate v0-2, the unframed v0 exchange
(KIP-43), requests before authentication, SCRAM's checks (nonce, proof, server signature, computed here with
hashlib, independently of the broker), the credential APIs, the CLI flags, and fuzzed exchanges (framed tokens,
bare v0 tokens, SaslHandshake/SaslAuthenticate frames of any bytes) that never hurt the broker or its other
connections."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import signal
import struct
import subprocess
import sys

import pytest
from broker_helpers import RawClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.broker import Broker
from kafkalab.protocol import ErrorCode

USER, SECRET = "alice", "alice-secret"
HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@pytest.fixture(scope="module")
def broker():
    with Broker(sasl_port=0, users={USER: SECRET}) as b:
        yield b


@pytest.fixture
def sasl(broker):
    clients = []

    def connect() -> RawClient:
        clients.append(RawClient(broker.sasl_bootstrap_servers))
        return clients[-1]
    yield connect
    for c in clients:
        c.close()


class ScramClient:
    """The client side of RFC 5802, written from the RFC for these tests."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL") -> None:
        self.hash, self.user, self.password, self.nonce = HASH[mechanism], user, password, nonce
        self.first_bare = f"n={user},r={nonce}"

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes, nonce: str | None = None) -> bytes:
        attrs = dict(part.split("=", 1) for part in server_first.decode().split(","))
        assert attrs["r"].startswith(self.nonce) and len(attrs["r"]) > len(self.nonce)
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
        without_proof = f"c=biws,r={nonce or attrs['r']}"
        self.auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        signature = hmac.new(hashlib.new(self.hash, client_key).digest(), self.auth_message, self.hash).digest()
        self.server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        expected = hmac.new(self.server_key, self.auth_message, self.hash).digest()
        return server_final == b"v=" + base64.b64encode(expected)


def authenticate(client: RawClient, token: bytes, api_version: int = 2) -> dict:
    return client.call("SaslAuthenticate", api_version, {"auth_bytes": token})


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("api_version", [0, 1, 2])
def test_scram_exchange_and_server_signature(sasl, mechanism, api_version):
    client, scram = sasl(), ScramClient(mechanism, USER, SECRET)
    answer = client.call("SaslHandshake", 1, {"mechanism": mechanism})
    assert answer["error_code"] == ErrorCode.NONE and set(answer["mechanisms"]) == {"PLAIN", *HASH}
    first = authenticate(client, scram.first(), api_version)
    assert first["error_code"] == ErrorCode.NONE
    final = authenticate(client, scram.final(first["auth_bytes"]), api_version)
    assert final["error_code"] == ErrorCode.NONE and scram.verify(final["auth_bytes"])
    assert client.call("Metadata", 12, {"topics": None})["brokers"][0]["port"] == int(
        client.sock.getpeername()[1])


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_unframed_exchange_after_handshake_v0(sasl, mechanism):
    client = sasl()
    assert client.call("SaslHandshake", 0, {"mechanism": mechanism})["error_code"] == ErrorCode.NONE

    def raw_token(token: bytes) -> bytes:
        client.sock.sendall(struct.pack(">i", len(token)) + token)
        return client.read_frame()[4:]
    if mechanism == "PLAIN":
        assert raw_token(b"\0alice\0alice-secret") == b""
    else:
        scram = ScramClient(mechanism, USER, SECRET)
        assert scram.verify(raw_token(scram.final(raw_token(scram.first()))))
    assert client.call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE
    assert client.call("Metadata", 12, {"topics": None})["cluster_id"]


def test_wrong_password_is_refused_and_closed(sasl):
    client = sasl()
    client.call("SaslHandshake", 1, {"mechanism": "PLAIN"})
    answer = authenticate(client, b"\0alice\0wrong")
    assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED and answer["error_message"]
    assert client.is_closed()


def test_unknown_user_and_bad_proof_are_refused(sasl):
    client = sasl()
    client.call("SaslHandshake", 1, {"mechanism": "SCRAM-SHA-256"})
    assert authenticate(client, ScramClient("SCRAM-SHA-256", "mallory", "x").first())["error_code"] == \
        ErrorCode.SASL_AUTHENTICATION_FAILED
    assert client.is_closed()
    client, scram = sasl(), ScramClient("SCRAM-SHA-256", USER, "not-it")
    client.call("SaslHandshake", 1, {"mechanism": "SCRAM-SHA-256"})
    final = scram.final(authenticate(client, scram.first())["auth_bytes"])
    assert authenticate(client, final)["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert client.is_closed()


def test_nonce_not_ending_with_the_servers_is_refused(sasl):
    client, scram = sasl(), ScramClient("SCRAM-SHA-512", USER, SECRET)
    client.call("SaslHandshake", 1, {"mechanism": "SCRAM-SHA-512"})
    first = authenticate(client, scram.first())["auth_bytes"]
    answer = authenticate(client, scram.final(first, nonce=scram.nonce + "forged"))
    assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED and "nonce" in answer["error_message"]


def test_request_before_authentication_closes(sasl):
    client = sasl()
    assert client.call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE   # allowed before authentication
    client.send("Metadata", 12, {"topics": None})
    assert client.is_closed()


def test_handshake_errors(broker, sasl):
    client = sasl()
    answer = client.call("SaslHandshake", 1, {"mechanism": "GSSAPI"})
    assert answer["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM and "SCRAM-SHA-512" in answer["mechanisms"]
    plain = RawClient(broker.bootstrap_servers)
    try:
        assert plain.call("SaslHandshake", 1, {"mechanism": "PLAIN"})["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    finally:
        plain.close()
    client = sasl()
    assert authenticate(client, b"\0alice\0alice-secret")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def test_scram_credentials_described_and_altered(broker):
    client = RawClient(broker.bootstrap_servers)
    try:
        described = client.call("DescribeUserScramCredentials", 0, {"users": None})["results"]
        assert [(r["user"], [(c["mechanism"], c["iterations"]) for c in r["credential_infos"]]) for r in described] \
            == [(USER, [(1, 4096), (2, 4096)])]
        salt = b"bob-salt-0123456"
        salted = hashlib.pbkdf2_hmac("sha512", b"bob-secret", salt, 8192)
        altered = client.call("AlterUserScramCredentials", 0, {"deletions": [], "upsertions": [
            {"name": "bob", "mechanism": 2, "iterations": 8192, "salt": salt, "salted_password": salted},
            {"name": "carol", "mechanism": 1, "iterations": 100, "salt": salt, "salted_password": salted}]})
        assert [(r["user"], r["error_code"]) for r in altered["results"]] == [
            ("bob", ErrorCode.NONE), ("carol", ErrorCode.UNACCEPTABLE_CREDENTIAL)]
        missing = client.call("DescribeUserScramCredentials", 0, {"users": [{"name": "carol"}]})["results"]
        assert missing[0]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND
        assert broker.users["bob"] == {"SCRAM-SHA-512": 8192}
    finally:
        client.close()
    bob = RawClient(broker.sasl_bootstrap_servers)
    try:
        scram = ScramClient("SCRAM-SHA-512", "bob", "bob-secret")
        bob.call("SaslHandshake", 1, {"mechanism": "SCRAM-SHA-512"})
        final = authenticate(bob, scram.final(authenticate(bob, scram.first())["auth_bytes"]))
        assert final["error_code"] == ErrorCode.NONE and scram.verify(final["auth_bytes"])
        assert authenticate(bob, b"again")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    finally:
        bob.close()


def test_no_password_is_kept(broker):
    held = repr(vars(broker.state.users)) + repr(vars(broker))
    assert SECRET not in held and SECRET.encode().hex() not in held


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       tokens=st.lists(st.binary(max_size=200) | st.sampled_from([b"n,,n=alice,r=x", b"c=biws,r=x,p=AAAA", b"\0\0",
                                                                    b"n,,n=al=ice,r=", b"p=tls,,n=a,r=b"]),
                       min_size=1, max_size=3))
def test_fuzzed_exchanges_never_hurt_the_broker(broker, mechanism, tokens):
    client = RawClient(broker.sasl_bootstrap_servers, timeout=10)
    try:
        client.call("SaslHandshake", 1, {"mechanism": mechanism})
        for token in tokens:
            answer = authenticate(client, token)
            assert answer["error_code"] in (ErrorCode.NONE, ErrorCode.SASL_AUTHENTICATION_FAILED,
                                             ErrorCode.ILLEGAL_SASL_STATE)
            if answer["error_code"] != ErrorCode.NONE:
                assert client.is_closed()
                break
    finally:
        client.close()
    check = RawClient(broker.sasl_bootstrap_servers)
    try:
        assert check.call("ApiVersions", 3, {})["error_code"] == ErrorCode.NONE
    finally:
        check.close()



class _Failures(logging.Handler):
    """Collects the broker's logged exceptions (a handler that crashed, a connection that failed)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def bystander(broker):
    """An authenticated connection kept open while the fuzzing goes on; it must keep being served."""
    client = RawClient(broker.sasl_bootstrap_servers)
    client.call("SaslHandshake", 1, {"mechanism": "PLAIN"})
    assert authenticate(client, b"\0alice\0alice-secret")["error_code"] == ErrorCode.NONE
    yield client
    client.close()


def _answer_or_close(client: RawClient) -> bytes | None:
    """The next frame the broker sends, or None once it closed the connection: never a hang."""
    try:
        return client.read_frame()
    except (ConnectionError, OSError) as exc:
        if isinstance(exc, TimeoutError):
            raise AssertionError("the broker neither answered nor closed within 10 s") from None
        return None


def _raw_request(api_key: int, api_version: int, body: bytes) -> bytes:
    """A request frame with a valid v1 header (api key, version, correlation id, client id) and any body bytes."""
    header = struct.pack(">hhih", api_key, api_version, 7, 4) + b"fuzz"
    return struct.pack(">i", len(header) + len(body)) + header + body


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(handshake=st.sampled_from([0, 1]),
       mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]) | st.text(max_size=30),
       steps=st.lists(st.tuples(st.sampled_from(["unframed", "SaslHandshake", "SaslAuthenticate"]),
                                st.integers(-1, 4), st.binary(max_size=120)), min_size=1, max_size=4))
def test_fuzzed_handshake_and_unframed_bytes_never_hurt_the_broker(broker, bystander, handshake, mechanism, steps):
    """SaslHandshake v0/v1 with any mechanism, then raw bytes: bare v0 tokens (KIP-43's unframed exchange) or
    SaslHandshake/SaslAuthenticate frames of any version with any body. Each step is answered or the connection
    closed; the broker logs no failure, and a connection authenticated before keeps being served."""
    failures = _Failures()
    logging.getLogger("kafkalab.broker").addHandler(failures)
    client = RawClient(broker.sasl_bootstrap_servers, timeout=10)
    try:
        answer = client.call("SaslHandshake", handshake, {"mechanism": mechanism})
        accepted = answer["error_code"] == ErrorCode.NONE
        assert accepted == (mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")), answer
        for kind, api_version, data in steps:
            if kind == "unframed":
                frame = struct.pack(">i", len(data)) + data
            else:
                frame = _raw_request(17 if kind == "SaslHandshake" else 36, api_version, data)
            try:
                client.sock.sendall(frame)
            except OSError:
                break                                      # closed after an earlier step: nothing more to say
            if _answer_or_close(client) is None:
                break
    finally:
        client.close()
        logging.getLogger("kafkalab.broker").removeHandler(failures)
    assert not [r for r in failures.records if r.exc_info], [r.getMessage() for r in failures.records]
    assert bystander.call("Metadata", 12, {"topics": None})["cluster_id"]


def test_cli_sasl_listener_and_user():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab", "broker", "--port", "0", "--sasl-port", "0",
                             "--user", "alice:alice-secret", "--deny-if-no-acl", "--super-user", "User:alice"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=root, env={**os.environ, "PYTHONPATH": root})
    try:
        plain_line = proc.stdout.readline()
        sasl_line = proc.stdout.readline()
        assert "SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)" in sasl_line
        client = RawClient(sasl_line.rsplit(" on ", 1)[1].strip())
        try:
            client.call("SaslHandshake", 1, {"mechanism": "PLAIN"})
            assert authenticate(client, b"\0alice\0alice-secret")["error_code"] == ErrorCode.NONE
            assert client.call("CreateTopics", 7, {"topics": [{"name": "by-alice", "num_partitions": 1,
                                                               "replication_factor": 1}], "timeout_ms": 5000}
                               )["topics"][0]["error_code"] == ErrorCode.NONE     # a super user, though no ACL
        finally:
            client.close()
        anonymous = RawClient(plain_line.split(" on ")[1].split()[0])
        try:
            assert anonymous.call("CreateTopics", 7, {"topics": [{"name": "by-anonymous", "num_partitions": 1,
                                                                  "replication_factor": 1}], "timeout_ms": 5000}
                                  )["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        finally:
            anonymous.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0


def _jwt(header: dict, claims: dict, signature: str = "") -> str:
    def part(d):
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    return f"{part(header)}.{part(claims)}.{signature}"


@pytest.mark.parametrize("token, accepted", [
    (_jwt({"alg": "none"}, {"sub": "carol", "exp": 4_000_000_000}), True),
    (_jwt({"alg": "none"}, {"sub": "carol", "exp": 1_000_000_000}), False),          # expired
    (_jwt({"alg": "HS256"}, {"sub": "carol"}, "c2ln"), False),                       # signed: not unsecured
    (_jwt({"alg": "none"}, {"exp": 4_000_000_000}), False),                           # no subject
    ("not-a-jwt", False)])
def test_oauthbearer_unsecured_tokens(token, accepted):
    with Broker(sasl_port=0, sasl_mechanisms=("OAUTHBEARER",)) as broker:
        client = RawClient(broker.sasl_bootstrap_servers)
        try:
            assert client.call("SaslHandshake", 1, {"mechanism": "OAUTHBEARER"})["mechanisms"] == ["OAUTHBEARER"]
            answer = authenticate(client, f"n,,\x01auth=Bearer {token}\x01\x01".encode())
            assert (answer["error_code"] == ErrorCode.NONE) is accepted
            if accepted:
                assert client.call("Metadata", 12, {"topics": None})["cluster_id"]
            else:
                assert client.is_closed()
        finally:
            client.close()


def test_cli_manages_users_of_a_running_broker(broker):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def scram_users(*args) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kafkalab", "users", "--bootstrap", broker.bootstrap_servers,
                               *args], capture_output=True, text=True, timeout=60, cwd=root,
                              env={**os.environ, "PYTHONPATH": root})
    added = scram_users("--set", "dora:dora-secret", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")
    assert added.returncode == 0, added.stderr
    assert "dora: SCRAM-SHA-512 (8192 iterations)" in added.stdout.splitlines()
    client, scram = RawClient(broker.sasl_bootstrap_servers), ScramClient("SCRAM-SHA-512", "dora", "dora-secret")
    try:
        client.call("SaslHandshake", 1, {"mechanism": "SCRAM-SHA-512"})
        final = authenticate(client, scram.final(authenticate(client, scram.first())["auth_bytes"]))
        assert final["error_code"] == ErrorCode.NONE and scram.verify(final["auth_bytes"])
    finally:
        client.close()
    removed = scram_users("--delete", "dora")
    assert removed.returncode == 0 and "dora" not in removed.stdout and "dora" not in broker.users
