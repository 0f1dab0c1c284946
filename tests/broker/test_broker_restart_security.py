"""Users, ACLs and client quotas survive a broker restart with ``--data-dir``: made through real clients, then
the broker process is killed (SIGKILL) and started again on the same directory; SCRAM-SHA-256 and -512 still
authenticate, the ACL still refuses, DescribeClientQuotas still answers with the quota, and no file in the
data directory holds a password."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import confluent_kafka as ck
from broker_helpers import RawClient
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

from kafkalab.broker import Broker
from kafkalab.protocol.metadata_records import decode_metadata_record
from kafkalab.protocol.records import decode_records

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADMIN_SECRET, CAROL_SECRET = "admin-Secret-4417", "carol-Passw0rd-8821"
QUOTA = {"validate_only": False, "entries": [{"entity": [{"entity_type": "user", "entity_name": "carol"}],
                                              "ops": [{"key": "producer_byte_rate", "value": 1048576.0,
                                                       "remove": False}]}]}


def start_broker(data_dir) -> tuple[subprocess.Popen, str, str]:
    """A broker process: (process, PLAINTEXT bootstrap, SASL_PLAINTEXT bootstrap)."""
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab", "broker", "--port", "0", "--sasl-port", "0",
                             "--data-dir", str(data_dir), "--topic", "open:1", "--topic", "secret:1",
                             "--user", f"admin:{ADMIN_SECRET}", "--super-user", "User:admin"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": ROOT})
    plain = proc.stdout.readline().split("listening on ")[1].split()[0]
    sasl = proc.stdout.readline().rsplit(" on ", 1)[1].strip()
    return proc, plain, sasl


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def auth(sasl: str, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> dict:
    return {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def produce(config: dict, topic: str):
    """The delivery error of one record (None: delivered)."""
    delivered = []
    producer = ck.Producer({**config, "message.timeout.ms": 8000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(15)
    return delivered[0] if delivered else "not delivered"


def describe_quotas(plain: str) -> list:
    client = RawClient(plain)
    try:
        body = client.call("DescribeClientQuotas", 1, {"strict": False, "components": [
            {"entity_type": "user", "match_type": 0, "match": "carol"}]})
    finally:
        client.close()
    return [([(e["entity_type"], e["entity_name"]) for e in entry["entity"]],
             {v["key"]: v["value"] for v in entry["values"]}) for entry in body["entries"]]


def test_users_acls_and_quotas_survive_sigkill_and_restart(tmp_path):
    proc, plain, sasl = start_broker(tmp_path)
    try:
        admin = AdminClient(auth(sasl, "admin", ADMIN_SECRET))
        upserts = [UserScramCredentialUpsertion("carol", ScramCredentialInfo(mechanism, 4096), CAROL_SECRET.encode())
                   for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]
        for future in admin.alter_user_scram_credentials(upserts, request_timeout=15).values():
            assert future.result(15) is None
        deny = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:carol", "*",
                          AclOperation.WRITE, AclPermissionType.DENY)
        for future in admin.create_acls([deny], request_timeout=15).values():
            assert future.result(15) is None
        client = RawClient(plain)
        assert client.call("AlterClientQuotas", 1, QUOTA)["entries"][0]["error_code"] == 0
        client.close()
        assert produce(auth(sasl, "carol", CAROL_SECRET), "open") is None
    finally:
        kill(proc)

    proc, plain, sasl = start_broker(tmp_path)
    try:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            assert produce(auth(sasl, "carol", CAROL_SECRET, mechanism), "open") is None, mechanism
        assert produce(auth(sasl, "carol", CAROL_SECRET), "secret").code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
        wrong = produce(auth(sasl, "carol", "not-the-password"), "open")
        assert wrong is not None and wrong.code() != ck.KafkaError.NO_ERROR
        assert describe_quotas(plain) == [([("user", "carol")], {"producer_byte_rate": 1048576.0})]
        admin = AdminClient(auth(sasl, "admin", ADMIN_SECRET))
        held = admin.describe_user_scram_credentials(["carol"], request_timeout=15)["carol"].result(15)
        assert sorted(info.mechanism for info in held.scram_credential_infos) == [
            ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512]
        acls = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                    AclOperation.ANY, AclPermissionType.ANY)).result(15)
        assert acls == [deny]
    finally:
        kill(proc)

    for folder, _, files in os.walk(tmp_path):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
            for secret in (CAROL_SECRET, ADMIN_SECRET):
                assert secret.encode() not in data, f"{name} holds a password"

    # what is on disk is Kafka's KRaft records, readable by kafkalab's decoder
    log = os.path.join(tmp_path, "__cluster_metadata-0")
    data = b"".join(open(os.path.join(log, name), "rb").read() for name in sorted(os.listdir(log))
                    if name.endswith(".log"))
    kinds = [decode_metadata_record(r.value)["type"] for batch in decode_records(data) for r in batch.records]
    assert kinds.count("user_scram_credential_record") == 4           # admin's two (once: kept at restart), carol's two
    assert {"access_control_entry_record", "client_quota_record"} <= set(kinds)


def test_removals_are_recorded_and_memory_brokers_write_nothing(tmp_path):
    """A deleted user, a deleted ACL and a removed quota stay gone after a restart; without a data directory
    nothing is written at all."""
    with Broker(data_dir=tmp_path, users={"dave": "dave-pw-1"}) as broker:
        broker.set_quota(user="dave", producer_byte_rate=5000.0)
        broker.add_acl("User:dave", "READ", "TOPIC", "t")
        broker.add_acl("User:dave", "WRITE", "TOPIC", "t")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        read = AclBindingFilter(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:dave", "*",
                                AclOperation.READ, AclPermissionType.ALLOW)
        assert len(admin.delete_acls([read], request_timeout=15)[read].result(15)) == 1
        client = RawClient(broker.bootstrap_servers)
        assert client.call("AlterClientQuotas", 1, {"validate_only": False, "entries": [
            {"entity": [{"entity_type": "user", "entity_name": "dave"}],
             "ops": [{"key": "producer_byte_rate", "value": 0.0, "remove": True}]}]})["entries"][0]["error_code"] == 0
        client.close()
        broker.delete_user("dave")
    with Broker(data_dir=tmp_path) as broker:
        state = broker.state
        assert state.users.names() == []
        assert [(a.principal, a.operation) for a in state.authorizer.acls] == [("User:dave", 4)]    # WRITE stays
        assert state.quotas.entries == {}
    with Broker() as broker:
        assert broker.state.security_log.log is None


def test_records_kafkalab_cannot_use_are_skipped_not_fatal(tmp_path, caplog):
    """A metadata log with a record of another type and a credential of an unknown mechanism still starts."""
    from kafkalab.broker.security.metadata_log import METADATA_LOG
    from kafkalab.broker.storage.log import PartitionLog
    from kafkalab.protocol.metadata_records import encode_metadata_record
    from kafkalab.protocol.records import build_batch, encode_records
    log = PartitionLog.open(os.path.join(tmp_path, METADATA_LOG), 1 << 20)
    odd = encode_metadata_record("user_scram_credential_record", {
        "name": "eve", "mechanism": 9, "salt": b"s", "stored_key": b"k", "server_key": b"k", "iterations": 4096})
    log.append(encode_records([build_batch([(None, b"\x01\x02\x00\x00"), (None, odd)])]))     # 2: RegisterBroker
    log.close()
    with Broker(data_dir=tmp_path, users={"frank": "frank-pw-2"}) as broker:
        assert broker.state.users.names() == ["frank"]
    assert "does not read" in caplog.text and "unknown SCRAM mechanism 9" in caplog.text
