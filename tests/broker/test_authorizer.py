"""The sans-IO authorizer's rules, one by one (Kafka's StandardAuthorizer semantics)."""
from __future__ import annotations

from kafkalab.broker.security.authorizer import (OP, PATTERN, PERMISSION, RESOURCE, AclBinding, AclFilter,
                                                 Authorizer)

TOPIC, GROUP = RESOURCE["TOPIC"], RESOURCE["GROUP"]


def acl(name, operation, permission="ALLOW", principal="User:alice", pattern="LITERAL", host="*", kind=TOPIC):
    return AclBinding(kind, name, PATTERN[pattern], principal, host, OP[operation], PERMISSION[permission])


def test_no_acl_found_switch_and_super_users():
    assert Authorizer().allowed("User:x", "h", OP["WRITE"], TOPIC, "t")
    closed = Authorizer(super_users=["User:root"], allow_everyone_if_no_acl_found=False)
    assert not closed.allowed("User:x", "h", OP["WRITE"], TOPIC, "t")
    assert closed.allowed("User:root", "h", OP["WRITE"], TOPIC, "t")


def test_deny_wins_all_covers_and_describe_is_implied():
    auth = Authorizer()
    auth.add(acl("orders", "ALL"))
    auth.add(acl("orders", "WRITE", "DENY"))
    assert auth.allowed("User:alice", "h", OP["READ"], TOPIC, "orders")
    assert not auth.allowed("User:alice", "h", OP["WRITE"], TOPIC, "orders")
    assert not auth.allowed("User:bob", "h", OP["READ"], TOPIC, "orders")      # an ACL names it: closed to bob
    auth.add(acl("logs", "WRITE"))
    assert auth.allowed("User:alice", "h", OP["DESCRIBE"], TOPIC, "logs")
    assert not auth.allowed("User:alice", "h", OP["READ"], TOPIC, "logs")
    bits = auth.authorized_operations("User:alice", "h", TOPIC, "logs")
    assert bits == (1 << OP["WRITE"]) | (1 << OP["DESCRIBE"])


def test_prefixed_wildcards_and_hosts():
    auth = Authorizer(allow_everyone_if_no_acl_found=False)
    auth.add(acl("app-", "READ", pattern="PREFIXED"))
    auth.add(acl("*", "READ", principal="User:*", kind=GROUP))
    auth.add(acl("pinned", "READ", host="10.0.0.1"))
    assert auth.allowed("User:alice", "h", OP["READ"], TOPIC, "app-1")
    assert not auth.allowed("User:alice", "h", OP["READ"], TOPIC, "ap")
    assert auth.allowed("User:anyone", "h", OP["READ"], GROUP, "g")
    assert auth.allowed("User:alice", "10.0.0.1", OP["READ"], TOPIC, "pinned")
    assert not auth.allowed("User:alice", "10.0.0.2", OP["READ"], TOPIC, "pinned")


def test_filters_and_validation():
    auth = Authorizer()
    assert auth.add(acl("x", "READ", pattern="MATCH")) is not None
    assert auth.add(AclBinding(RESOURCE["CLUSTER"], "other", PATTERN["LITERAL"], "User:a", "*", OP["ALTER"],
                               PERMISSION["ALLOW"])) is not None
    auth.add(acl("app-", "READ", pattern="PREFIXED"))
    auth.add(acl("app-1", "WRITE"))
    match = AclFilter(TOPIC, "app-1", PATTERN["MATCH"], None, None, OP["ANY"], PERMISSION["ANY"])
    assert len(auth.describe(match)) == 2
    literal = AclFilter(TOPIC, "app-1", PATTERN["LITERAL"], None, None, OP["ANY"], PERMISSION["ANY"])
    assert [a.operation for a in auth.delete(literal)] == [OP["WRITE"]] and len(auth.acls) == 1
