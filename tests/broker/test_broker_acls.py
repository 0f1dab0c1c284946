"""ACLs seen by real clients: confluent-kafka's admin creates, describes and deletes them; producers, consumers
and transactions of a principal without rights get the errors Kafka sends; the authorized-operations bit fields
follow the ACLs; super users and ``allow_everyone_if_no_acl_found``."""
from __future__ import annotations

import subprocess

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.protocol import ErrorCode
from kafkalab.protocol.schema.enums import ACL_OPERATIONS

from tests.tools import require_tool

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
OP = ACL_OPERATIONS.by_name


@pytest.fixture(scope="module")
def broker():
    with Broker(sasl_port=0, users=USERS, super_users=("User:admin",), topics={"open": 1, "secret": 1, "hidden": 1}) as b:
        from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                           ResourcePatternType, ResourceType)
        admin = AdminClient(auth(b, "admin"))
        alice_only = [AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:alice", "*",
                                 operation, AclPermissionType.ALLOW)
                      for operation in (AclOperation.READ, AclOperation.WRITE)]
        bob_describes = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:bob", "*",
                                   AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        hidden = AclBinding(ResourceType.TOPIC, "hid", ResourcePatternType.PREFIXED, "User:alice", "*",
                            AclOperation.ALL, AclPermissionType.ALLOW)
        deny_bob = AclBinding(ResourceType.TRANSACTIONAL_ID, "tx-", ResourcePatternType.PREFIXED, "User:bob", "*",
                              AclOperation.ALL, AclPermissionType.DENY)
        group = AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED, "User:alice", "*",
                           AclOperation.READ, AclPermissionType.ALLOW)
        for future in admin.create_acls([*alice_only, bob_describes, hidden, deny_bob, group], request_timeout=15).values():
            assert future.result(15) is None
        yield b


def auth(broker, user: str) -> dict:
    return {"bootstrap.servers": broker.sasl_bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": USERS[user]}


def _produce(broker, user: str, topic: str):
    from confluent_kafka import Producer
    delivered = []
    producer = Producer({**auth(broker, user), "message.timeout.ms": 10000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(15)
    return delivered[0]


def test_confluent_producer_denied_and_allowed(broker):
    from confluent_kafka import KafkaError
    assert _produce(broker, "alice", "secret") is None
    assert _produce(broker, "bob", "open") is None                   # no ACL names "open": everyone may
    assert _produce(broker, "bob", "secret").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_kafka_python_consumer_denied(broker):
    """bob may DESCRIBE "secret" (metadata, offsets) but not READ it: the Fetch answer refuses him."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import TopicAuthorizationFailedError
    consumer = KafkaConsumer(bootstrap_servers=broker.sasl_bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_plain_username="bob", sasl_plain_password=USERS["bob"],
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("secret", 0)])
        with pytest.raises(TopicAuthorizationFailedError):
            for _ in range(20):
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()


def test_transactional_id_denied(broker):
    from confluent_kafka import KafkaException, Producer
    producer = Producer({**auth(broker, "bob"), "transactional.id": "tx-bob"})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(15)
    assert refused.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_kcat_denied_produce(broker):
    done = subprocess.run([require_tool("kcat"), "-b", broker.sasl_bootstrap_servers, "-m", "15", "-P", "-t", "secret",
                           "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
                           "-X", "sasl.username=bob", "-X", "sasl.password=bob-secret"],
                          input="x\n", capture_output=True, text=True, timeout=40)
    assert "Topic authorization failed" in done.stderr, done.stderr


def _sasl_client(broker, user: str) -> RawClient:
    client = RawClient(broker.sasl_bootstrap_servers)
    client.call("SaslHandshake", 1, {"mechanism": "PLAIN"})
    assert client.call("SaslAuthenticate", 2, {"auth_bytes": f"\0{user}\0{USERS[user]}".encode()})["error_code"] == 0
    return client


def test_metadata_group_and_cluster_answers_follow_acls(broker):
    bob, alice = _sasl_client(broker, "bob"), _sasl_client(broker, "alice")
    try:
        listed = bob.call("Metadata", 12, {"topics": None, "include_topic_authorized_operations": True})["topics"]
        assert {t["name"]: t["topic_authorized_operations"] for t in listed} == {   # "hidden" is not listed
            "open": sum(1 << OP[op] for op in ("READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                                               "DESCRIBE_CONFIGS", "ALTER_CONFIGS")),
            "secret": 1 << OP["DESCRIBE"]}
        asked = bob.call("Metadata", 12, {"topics": [{"name": "hidden"}]})["topics"][0]
        assert asked["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        mine = alice.call("Metadata", 12, {"topics": [{"name": "secret"}],
                                           "include_topic_authorized_operations": True})["topics"][0]
        assert mine["topic_authorized_operations"] == (1 << OP["READ"]) | (1 << OP["WRITE"]) | (1 << OP["DESCRIBE"])
        commit = {"group_id": "alice-1", "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
            {"name": "open", "partitions": [{"partition_index": 0, "committed_offset": 0}]}]}
        assert alice.call("OffsetCommit", 8, commit)["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        assert bob.call("OffsetCommit", 8, commit)["topics"][0]["partitions"][0]["error_code"] == \
            ErrorCode.GROUP_AUTHORIZATION_FAILED
        cluster = bob.call("DescribeCluster", 1, {"include_cluster_authorized_operations": True})
        assert cluster["cluster_authorized_operations"] & (1 << OP["ALTER"])    # no ACL on the cluster: open
        denied = bob.call("CreateAcls", 3, {"creations": []})
        assert denied["results"] == []
    finally:
        bob.close()
        alice.close()


def test_admin_describes_and_deletes_acls(broker):
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)
    admin = AdminClient(auth(broker, "admin"))
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    described = admin.describe_acls(everything, request_timeout=15).result(15)
    assert sorted((a.restype_int, a.name, a.principal, a.operation_int) for a in described) == sorted([
        (2, "secret", "User:alice", OP["READ"]), (2, "secret", "User:alice", OP["WRITE"]),
        (2, "secret", "User:bob", OP["DESCRIBE"]), (2, "hid", "User:alice", OP["ALL"]),
        (5, "tx-", "User:bob", OP["ALL"]), (3, "alice-", "User:alice", OP["READ"])])
    matching = AclBindingFilter(ResourceType.TOPIC, "secret", ResourcePatternType.MATCH, None, None,
                                AclOperation.WRITE, AclPermissionType.ANY)
    deleted = next(iter(admin.delete_acls([matching], request_timeout=15).values())).result(15)
    assert [(a.name, a.operation_int) for a in deleted] == [("secret", OP["WRITE"])]
    bob_admin = AdminClient(auth(broker, "bob"))
    broker.state.authorizer.allow_everyone_if_no_acl_found = False     # the cluster now needs an ACL
    bob = _sasl_client(broker, "bob")
    try:
        broker.state.authorizer.allow_everyone_if_no_acl_found = False
        upsert = {"name": "bob", "mechanism": 1, "iterations": 4096, "salt": b"s", "salted_password": b"p"}
        altered = bob.call("AlterUserScramCredentials", 0, {"deletions": [], "upsertions": [upsert]})
        assert altered["results"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert bob.call("DescribeUserScramCredentials", 0, {"users": None})["error_code"] == \
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    finally:
        bob.close()
    try:      # librdkafka drops DescribeAcls' top-level error and shows no ACLs; the answer carries the error
        assert bob_admin.describe_acls(everything, request_timeout=15).result(15) == []
        answers = broker.frames.query("api_name == 'DescribeAcls' and kind == 'response'")
        assert answers["error"].iloc[-1] == "CLUSTER_AUTHORIZATION_FAILED"
    finally:
        broker.state.authorizer.allow_everyone_if_no_acl_found = True
    assert admin.describe_acls(everything, request_timeout=15).result(15)   # a super user is never refused


def test_group_denied_to_a_real_consumer_and_described_bits(broker):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError
    consumer = KafkaConsumer("open", bootstrap_servers=broker.sasl_bootstrap_servers, group_id="alice-team",
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="bob",
                             sasl_plain_password=USERS["bob"], enable_auto_commit=False)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()
    alice, bob = _sasl_client(broker, "alice"), _sasl_client(broker, "bob")
    try:
        mine = alice.call("DescribeGroups", 5, {"groups": ["alice-team"], "include_authorized_operations": True})
        assert mine["groups"][0]["authorized_operations"] == (1 << OP["READ"]) | (1 << OP["DESCRIBE"])
        theirs = bob.call("DescribeGroups", 5, {"groups": ["alice-team"], "include_authorized_operations": True})
        assert theirs["groups"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        found = bob.call("FindCoordinator", 3, {"key": "alice-team", "key_type": 0})
        assert found["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    finally:
        alice.close()
        bob.close()


def test_transaction_apis_and_log_dirs_ask_the_authorizer(broker):
    bob = _sasl_client(broker, "bob")
    try:
        ids = {"transactional_id": "tx-bob", "producer_id": 1, "producer_epoch": 0}
        assert bob.call("EndTxn", 3, {**ids, "committed": True})["error_code"] == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert bob.call("AddOffsetsToTxn", 3, {**ids, "group_id": "g"})["error_code"] == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        added = bob.call("AddPartitionsToTxn", 3, {"v3_and_below_transactional_id": "tx-bob",
                                                   "v3_and_below_producer_id": 1, "v3_and_below_producer_epoch": 0,
                                                   "v3_and_below_topics": [{"name": "open", "partitions": [0]}]})
        assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # bob may use his own transactional id, but not alice's group: the group check answers, not a crash
        init = bob.call("InitProducerId", 4, {"transactional_id": "bob-tx", "transaction_timeout_ms": 60000,
                                              "producer_id": -1, "producer_epoch": -1})
        assert init["error_code"] == 0
        mine = {"transactional_id": "bob-tx", "producer_id": init["producer_id"],
                "producer_epoch": init["producer_epoch"]}
        assert bob.call("AddOffsetsToTxn", 3, {**mine, "group_id": "alice-group"})["error_code"] == \
            ErrorCode.GROUP_AUTHORIZATION_FAILED
        broker.state.authorizer.allow_everyone_if_no_acl_found = False
        assert bob.call("DescribeLogDirs", 4, {"topics": None})["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    finally:
        broker.state.authorizer.allow_everyone_if_no_acl_found = True
        bob.close()


def test_config_partition_and_record_apis_ask_the_authorizer(broker):
    bob = _sasl_client(broker, "bob")
    try:
        described = bob.call("DescribeConfigs", 4, {"resources": [
            {"resource_type": 2, "resource_name": "hidden", "configuration_keys": None}], "include_synonyms": False,
            "include_documentation": False})["results"][0]
        assert described["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        altered = bob.call("IncrementalAlterConfigs", 1, {"resources": [
            {"resource_type": 2, "resource_name": "secret", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1000"}]}], "validate_only": True})
        assert altered["responses"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        grown = bob.call("CreatePartitions", 3, {"topics": [{"name": "secret", "count": 3, "assignments": None}],
                                                 "timeout_ms": 5000, "validate_only": True})
        assert grown["results"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        deleted = bob.call("DeleteRecords", 2, {"topics": [{"name": "secret", "partitions": [
            {"partition_index": 0, "offset": 0}]}], "timeout_ms": 5000})
        assert deleted["topics"][0]["partitions"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        offsets = bob.call("OffsetDelete", 0, {"group_id": "alice-team", "topics": []})
        assert offsets["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    finally:
        bob.close()
