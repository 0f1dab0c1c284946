"""A KIP-848 group survives a broker restart: librdkafka (``group.protocol=consumer``) keeps consuming through a
SIGKILL of the broker process and its restart on the same data directory, and the restarted broker describes
the group (ConsumerGroupDescribe) with the same member, epoch and assignment."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient

from kafkalab.broker import Broker
from kafkalab.protocol.payloads import decode_offsets_record

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 60.0
GROUP, TOPIC = "kip848-restart", "t"


def start_broker(data_dir, port: int = 0) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab", "broker", "--port", str(port), "--data-dir",
                             str(data_dir), "--topic", f"{TOPIC}:2"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    line = proc.stdout.readline()
    assert "listening on" in line, line
    return proc, line.split("listening on ")[1].split()[0]


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def produce(bootstrap: str, values: list[bytes]) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(TOPIC, value=value, partition=i % 2)
    assert producer.flush(20) == 0


def consume(consumer, count: int) -> list[bytes]:
    got, deadline = [], time.monotonic() + TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        got += [m.value() for m in consumer.consume(10, 0.5) if not m.error()]
    return got


def describe(bootstrap: str):
    """The group as AdminClient describes it, and {member id: sorted partitions}, once both partitions are out."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + TIMEOUT
    while True:
        group = admin.describe_consumer_groups([GROUP])[GROUP].result(TIMEOUT)
        members = {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in group.members}
        if sum(len(p) for p in members.values()) == 2 or time.monotonic() > deadline:
            return group, members
        time.sleep(0.3)


def group_view(bootstrap: str) -> dict:
    """What ConsumerGroupDescribe says about the group's members: {member id: (epoch, partitions)}."""
    from broker_helpers import RawClient
    raw = RawClient(bootstrap)
    try:
        body = raw.call(69, 0, {"group_ids": [GROUP], "include_authorized_operations": False})
    finally:
        raw.close()
    group = body["groups"][0]
    return {"epoch": group["group_epoch"], "assignment_epoch": group["assignment_epoch"],
            "members": {m["member_id"]: (m["member_epoch"], sorted(
                p for t in m["assignment"]["topic_partitions"] for p in t["partitions"])) for m in group["members"]}}


def test_consumer_protocol_group_resumes_after_sigkill_and_restart(tmp_path):
    proc, bootstrap = start_broker(tmp_path)
    port = int(bootstrap.rsplit(":", 1)[1])
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False,
                            "reconnect.backoff.max.ms": 200})
    try:
        produce(bootstrap, [b"before-%d" % i for i in range(10)])
        consumer.subscribe([TOPIC])
        assert sorted(consume(consumer, 10)) == sorted(b"before-%d" % i for i in range(10))
        consumer.commit(asynchronous=False)
        group, members = describe(bootstrap)
        before = group_view(bootstrap)
        assert members and sorted(p for ps in members.values() for p in ps) == [0, 1]

        kill(proc)
        proc, again = start_broker(tmp_path, port)
        assert again == bootstrap
        after_restart = group_view(bootstrap)
        assert after_restart == before             # the restarted broker knows the member, its epoch, its partitions
        group_again, members_again = describe(bootstrap)
        assert members_again == members            # and AdminClient (ConsumerGroupDescribe) says so too
        assert group_again.type == ck.ConsumerGroupType.CONSUMER and group_again.partition_assignor == "uniform"
        assert all(sorted(tp.partition for tp in m.target_assignment.topic_partitions) == members[m.member_id]
                   for m in group_again.members)

        produce(bootstrap, [b"after-%d" % i for i in range(6)])
        got = consume(consumer, 6)
        assert sorted(got) == sorted(b"after-%d" % i for i in range(6))   # from the committed offsets, no repeats
        assert not [m for m in consumer.consume(10, 1.0) if not m.error()]
        consumer.commit(asynchronous=False)
        now = group_view(bootstrap)
        assert set(now["members"]) == set(before["members"])            # the same member carried on
        assert now["epoch"] == before["epoch"]                           # no rebalance was needed
        group, members = describe(bootstrap)
        assert str(group.state).endswith("STABLE") and list(members) == list(before["members"])
        consumer.close()
        # a new member starts where the group's committed offsets say: after every record consumed so far
        produce(bootstrap, [b"late-%d" % i for i in range(4)])
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([TOPIC])
        assert sorted(consume(consumer, 4)) == sorted(b"late-%d" % i for i in range(4))
    finally:
        consumer.close()
        kill(proc)
    with Broker(data_dir=tmp_path) as broker:
        store = broker.state.store
        assert {(t, p): c.offset for (t, p), c in store.committed[GROUP].items()} == {(TOPIC, 0): 8, (TOPIC, 1): 8}
        kinds = {decode_offsets_record(r.key, r.value)["key_type"]
                 for r in _records(store.partition("__consumer_offsets", 0).log)}
        assert {"consumer_group_metadata", "consumer_group_partition_metadata", "consumer_group_member_metadata",
                "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
                "consumer_group_current_member_assignment", "offset_commit"} <= kinds


def _records(log):
    from kafkalab.protocol.records import decode_records
    return [r for batch in decode_records(log.read(log.log_start_offset, 1 << 24)) if not batch.control
            for r in batch.records]


def test_leaving_member_and_deleted_group_leave_tombstones(tmp_path):
    """A member that leaves is tombstoned (its subscription, target and current assignment); a deleted group
    leaves nothing a restarted broker would bring back."""
    with Broker(data_dir=tmp_path, topics={TOPIC: 2}) as broker:
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP,
                                "group.protocol": "consumer", "auto.offset.reset": "earliest"})
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + TIMEOUT
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        records = broker.state.store.consumer_group_records[GROUP]
        assert {kind for kind, _ in records} == {3, 4, 5, 6, 7, 8}
        consumer.close()
        deadline = time.monotonic() + TIMEOUT
        while any(member for _, member in broker.state.store.consumer_group_records[GROUP]):
            assert time.monotonic() < deadline, "the member's records were not tombstoned"
            time.sleep(0.1)
    with Broker(data_dir=tmp_path) as broker:
        assert {kind for kind, _ in broker.state.store.consumer_group_records[GROUP]} == {3, 4, 6}
        assert broker.state.groups.state_of(GROUP) == "Empty"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.delete_consumer_groups([GROUP])[GROUP].result(TIMEOUT)
    with Broker(data_dir=tmp_path) as broker:
        assert GROUP not in broker.state.store.consumer_group_records
        assert GROUP not in broker.state.groups.groups


