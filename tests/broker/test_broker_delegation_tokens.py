"""Delegation tokens over real sockets: issued, described, renewed and expired through kafkalab's codec (no
Python or C client speaks these APIs), then used to authenticate by SCRAM with ``tokenauth=true`` by
kafka-python's own SCRAM client (which sends no extensions by itself: a subclass adds the one Kafka defines)."""
from __future__ import annotations

import base64

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.broker.security.tokens import DAY_MS, DelegationTokens
from kafkalab.protocol import ApiKey, ErrorCode

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
HOUR_MS = 3600 * 1000


@pytest.fixture(scope="module")
def broker():
    with Broker(sasl_port=0, users=USERS, super_users=("User:admin",), allow_everyone_if_no_acl_found=False,
                topics={"alice-topic": 1, "other": 1}) as b:
        b.add_acl("User:alice", "DESCRIBE", "TOPIC", "alice-topic")
        yield b


def _scram_client(token: bool):
    from kafka.net.sasl.scram import ScramClient

    class TokenScramClient(ScramClient):
        """kafka-python's SCRAM client plus Kafka's delegation-token extension in client-first."""

        def first_message(self):
            bare = b"n=" + self.user + b",r=" + self.nonce + b",tokenauth=true"
            self.auth_message += bare
            return b"n,," + bare
    return TokenScramClient if token else ScramClient


def login(broker, user: str, password: str, token: bool = False) -> tuple[RawClient, int]:
    """A SASL connection authenticated by SCRAM-SHA-256 (as a user, or with a token): (client, error code)."""
    client = RawClient(broker.sasl_bootstrap_servers)
    scram = _scram_client(token)(user, password, "SCRAM-SHA-256")
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})["error_code"] == 0
    first = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first_message()})
    if first["error_code"]:
        return client, first["error_code"]
    scram.process_server_first_message(first["auth_bytes"])
    final = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final_message()})
    if not final["error_code"]:
        scram.process_server_final_message(final["auth_bytes"])       # the server proved it knows the token too
    return client, final["error_code"]


def as_user(broker, user: str) -> RawClient:
    client, code = login(broker, user, USERS[user])
    assert code == 0
    return client


def create(client: RawClient, renewers=(), owner: str | None = None, max_lifetime_ms: int = -1) -> dict:
    return client.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, {
        "owner_principal_type": "User" if owner else None, "owner_principal_name": owner,
        "renewers": [{"principal_type": "User", "principal_name": r} for r in renewers],
        "max_lifetime_ms": max_lifetime_ms})


def describe(client: RawClient, owners=None) -> list[str]:
    body = client.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": owners})
    assert body["error_code"] == 0
    return [t["token_id"] for t in body["tokens"]]


def test_create_describe_renew_expire(broker):
    alice, bob, carol, admin = (as_user(broker, u) for u in ("alice", "bob", "carol", "admin"))
    made = create(alice, renewers=["bob"], max_lifetime_ms=2 * HOUR_MS)
    assert made["error_code"] == 0 and made["principal_name"] == "alice" and made["token_requester_principal_name"] == "alice"
    assert made["max_timestamp_ms"] == made["issue_timestamp_ms"] + 2 * HOUR_MS       # asked lifetime < the max
    assert made["expiry_timestamp_ms"] == made["max_timestamp_ms"]                    # the 1-day interval is capped
    token_id, mac = made["token_id"], made["hmac"]
    assert token_id in describe(alice) and token_id in describe(bob)                 # owner and renewer see it
    assert token_id not in describe(carol) and token_id in describe(admin)
    assert describe(admin, owners=[]) == []
    assert token_id in describe(admin, owners=[{"principal_type": "User", "principal_name": "alice"}])
    broker.add_acl("User:carol", "DESCRIBE_TOKENS", "USER", "User:alice")            # KIP-373
    assert token_id in describe(carol)

    renewed = bob.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": mac, "renew_period_ms": HOUR_MS})
    assert renewed["error_code"] == 0 and renewed["expiry_timestamp_ms"] <= made["max_timestamp_ms"]
    assert carol.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": mac, "renew_period_ms": 1})["error_code"] == \
        ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    assert alice.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": b"nope", "renew_period_ms": 1})["error_code"] == \
        ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    assert alice.call(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": mac, "expiry_time_period_ms": -1})["error_code"] == 0
    assert token_id not in describe(admin)
    assert login(broker, token_id, base64.b64encode(mac).decode(), token=True)[1] == \
        ErrorCode.SASL_AUTHENTICATION_FAILED


def test_token_authenticates_as_its_owner(broker):
    alice = as_user(broker, "alice")
    made = create(alice)
    password = base64.b64encode(made["hmac"]).decode()
    client, code = login(broker, made["token_id"], password, token=True)
    assert code == 0
    topics = [t["name"] for t in client.call(ApiKey.METADATA, 12, {"topics": None})["topics"]]
    assert topics == ["alice-topic"]                    # alice's view: the token's principal is its owner
    # A token-authenticated connection may not ask for tokens (Kafka's rule); nor may a PLAINTEXT one.
    assert create(client)["error_code"] == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    plain = RawClient(broker.bootstrap_servers)
    assert create(plain)["error_code"] == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    # Without the extension the token id is just an unknown user; a wrong HMAC fails the proof.
    assert login(broker, made["token_id"], password)[1] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert login(broker, made["token_id"], "d3Jvbmc=", token=True)[1] == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_kafka_python_admin_authenticates_with_a_token(broker, monkeypatch):
    import kafka.net.sasl.scram as scram_module
    from kafka.admin import KafkaAdminClient
    made = create(as_user(broker, "alice"))
    monkeypatch.setattr(scram_module, "ScramClient", _scram_client(token=True))
    admin = KafkaAdminClient(bootstrap_servers=broker.sasl_bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=made["token_id"],
                             sasl_plain_password=base64.b64encode(made["hmac"]).decode(), request_timeout_ms=10000)
    try:
        assert set(admin.list_topics()) == {"alice-topic"}
    finally:
        admin.close()


def test_creating_for_another_owner_needs_create_tokens(broker):
    bob = as_user(broker, "bob")
    assert create(bob, owner="alice")["error_code"] == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    broker.add_acl("User:bob", "CREATE_TOKENS", "USER", "User:alice")
    made = create(bob, owner="alice")
    assert made["error_code"] == 0 and (made["principal_name"], made["token_requester_principal_name"]) == ("alice", "bob")
    assert bob.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, {"owner_principal_type": "Group", "owner_principal_name": "x",
                                                        "renewers": [], "max_lifetime_ms": -1})["error_code"] == \
        ErrorCode.INVALID_PRINCIPAL_TYPE


def test_lifetime_rules_on_an_explicit_clock():
    tokens = DelegationTokens(secret=b"k" * 32)
    t = tokens.create("User:a", "User:a", ["User:r"], max_lifetime_ms=-1, now_ms=0)
    assert (t.expiry_ms, t.max_ms) == (DAY_MS, 7 * DAY_MS)
    assert tokens.renew(t.hmac, "User:r", -1, now_ms=DAY_MS - 1) == (ErrorCode.NONE, 2 * DAY_MS - 1)
    assert tokens.renew(t.hmac, "User:a", 30 * DAY_MS, now_ms=2 * DAY_MS - 2) == (ErrorCode.NONE, 7 * DAY_MS)
    assert tokens.scram_credential(t.token_id, "SCRAM-SHA-512", 7 * DAY_MS) is not None
    assert tokens.scram_credential(t.token_id, "SCRAM-SHA-512", 7 * DAY_MS + 1) is None        # past its expiry
    assert tokens.renew(t.hmac, "User:a", 1, now_ms=7 * DAY_MS + 1)[0] == ErrorCode.DELEGATION_TOKEN_EXPIRED
    tokens.purge(7 * DAY_MS + 1)
    assert tokens.renew(t.hmac, "User:a", 1, now_ms=7 * DAY_MS + 1)[0] == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
