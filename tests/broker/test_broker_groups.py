"""Consumer groups with real clients: kafka-python, confluent-kafka (eager, cooperative-sticky and KIP-848's
``group.protocol=consumer``), aiokafka and kcat each run the two-member flow of :mod:`group_flows`
(rebalance, disjoint assignment, commit, leave, resume from the committed offsets); a member killed with
SIGKILL is evicted after its session timeout."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest
from tests.tools import require_tool
from group_flows import (ALL, PER_PARTITION, Client, Member, check_flow, committed, fill, run_polling_flow,
                         wait_until)

from kafkalab.broker import Broker

SESSION_MS = 6000          # Kafka's minimum; members that vanish are evicted this long after their last heartbeat


@pytest.fixture
def broker():
    with Broker(topics={"t": 4}) as b:
        yield b


# --- kafka-python -------------------------------------------------------------------------------------------

def kafka_python(broker, group: str, topic: str = "t", **extra) -> Client:
    from kafka import KafkaConsumer

    def make():
        return KafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                             heartbeat_interval_ms=500, fetch_max_wait_ms=100, **extra)

    def poll(c):
        return [(r.partition, r.offset) for records in c.poll(200).values() for r in records]
    return Client(make, poll, lambda c: {tp.partition for tp in c.assignment()}, lambda c: c.commit(),
                  lambda c: c.close())


@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_kafka_python_group(broker, cooperative):
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

    extra = {"partition_assignment_strategy": [CooperativeStickyAssignor]} if cooperative else {}
    group = f"kp-{cooperative}"
    check_flow(run_polling_flow(broker, kafka_python(broker, group, **extra), group, "t"))
    chosen = {f.body["protocol_name"] for f in broker.journal
              if f.api_name == "JoinGroup" and f.kind == "response" and f.body["error_code"] == 0}
    assert chosen == {"cooperative-sticky" if cooperative else "range"}


# --- confluent-kafka ------------------------------------------------------------------------------------------

def confluent(broker, group: str, topic: str = "t", **extra) -> Client:
    import confluent_kafka as ck

    config = {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "fetch.wait.max.ms": 100, **extra}
    if extra.get("group.protocol") != "consumer":
        config.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500})

    def make():
        c = ck.Consumer(config)
        c.subscribe([topic])
        return c

    def poll(c):
        return [(m.partition(), m.offset()) for m in c.consume(10, 0.2) if not m.error()]

    def commit(c):
        try:
            c.commit(asynchronous=False)
        except ck.KafkaException as exc:            # nothing consumed since the last commit: nothing to do
            if exc.args[0].code() != ck.KafkaError._NO_OFFSET:
                raise
    return Client(make, poll, lambda c: {tp.partition for tp in c.assignment()}, commit, lambda c: c.close())


@pytest.mark.parametrize("extra", [{}, {"partition.assignment.strategy": "cooperative-sticky"},
                                   {"group.protocol": "consumer"}], ids=["eager", "cooperative", "kip848"])
def test_confluent_group(broker, extra):
    group = "ck-" + "-".join(extra.values()) if extra else "ck"
    result = run_polling_flow(broker, confluent(broker, group, **extra), group, "t")
    check_flow(result)
    kinds = {f.api_name for f in broker.journal if f.kind == "request"}
    if extra.get("group.protocol") == "consumer":
        assert "ConsumerGroupHeartbeat" in kinds and "JoinGroup" not in kinds
    else:
        assert {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"} <= kinds


def test_confluent_static_member_restarts_without_a_rebalance(broker):
    """KIP-345: a member with group.instance.id that goes away without leaving and comes back with the same
    instance id takes its old place: same partitions, same generation, no rebalance for the other member."""
    fill(broker, "t", 0, PER_PARTITION)
    members = {name: Member(confluent(broker, "static", **{"group.instance.id": name})) for name in ("s1", "s2")}
    for m in members.values():
        m.start()
    try:
        wait_until(lambda: all(m.assigned for m in members.values()) and
                   set().union(*(m.assigned for m in members.values())) == ALL, "two static members")
        before = {name: set(m.assigned) for name, m in members.items()}
        group = broker._on_loop(lambda: broker.state.groups.groups["static"])
        generation = broker._on_loop(lambda: group.generation)
        # the follower restarts: a leader's return before JoinGroup v9 (skip_assignment) rebalances, as in Kafka
        name = next(n for n, member_id in broker._on_loop(lambda: dict(group.static)).items()
                    if member_id != broker._on_loop(lambda: group.leader))
        members[name].order("close")                   # librdkafka's static members do not send LeaveGroup
        members[name] = Member(confluent(broker, "static", **{"group.instance.id": name}))
        members[name].start()
        wait_until(lambda: members[name].assigned, "the static member back")
        after = {name: set(m.assigned) for name, m in members.items()}
        generation_after = broker._on_loop(lambda: broker.state.groups.groups["static"].generation)
    finally:
        for m in members.values():
            m.commands.put("close")
            m.join(30)
    assert after == before and generation_after == generation


# --- aiokafka ---------------------------------------------------------------------------------------------------

async def _aiokafka_flow(broker, group: str) -> dict:
    from aiokafka import AIOKafkaConsumer

    def member():
        return AIOKafkaConsumer("t", bootstrap_servers=broker.bootstrap_servers, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                                heartbeat_interval_ms=500, fetch_max_wait_ms=100)

    async def until(check, what, seconds=60):
        deadline = time.monotonic() + seconds
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.05)

    seen: dict[int, dict[int, set]] = {0: {}, 1: {}, 2: {}}

    async def pump(i, consumer, stop):
        while not stop.is_set():
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                seen[i].setdefault(tp.partition, set()).update(r.offset for r in records)

    def parts(c):
        return {tp.partition for tp in c.assignment()}

    a, b = member(), member()
    await a.start()
    await b.start()
    stop_a, stop_b = asyncio.Event(), asyncio.Event()
    tasks = [asyncio.create_task(pump(0, a, stop_a)), asyncio.create_task(pump(1, b, stop_b))]
    everything = set(range(PER_PARTITION))
    await until(lambda: parts(a) and parts(b) and parts(a) | parts(b) == ALL and not parts(a) & parts(b)
                and all(seen[0].get(p, set()) | seen[1].get(p, set()) >= everything for p in ALL), "two members")
    assignments = [parts(a), parts(b)]
    stop_a.set()
    stop_b.set()
    await asyncio.gather(*tasks)
    await a.commit()
    await b.commit()
    await b.stop()
    stop_a = asyncio.Event()
    task = asyncio.create_task(pump(0, a, stop_a))
    await until(lambda: parts(a) == ALL, "the remaining member taking every partition")
    after_leave = parts(a)
    stop_a.set()
    await task
    await a.stop()
    offsets = committed(broker, group, "t")
    await asyncio.to_thread(fill, broker, "t", PER_PARTITION, 1)
    c = member()
    await c.start()
    stop_c = asyncio.Event()
    task = asyncio.create_task(pump(2, c, stop_c))
    await until(lambda: set(seen[2]) == ALL, "a new member resuming")
    stop_c.set()
    await task
    await c.stop()
    return {"assignments": assignments, "after_leave": after_leave, "committed": offsets,
            "resumed": {p: min(o) for p, o in seen[2].items()}}


def test_aiokafka_group(broker):
    fill(broker, "t", 0, PER_PARTITION)
    check_flow(asyncio.run(asyncio.wait_for(_aiokafka_flow(broker, "aio"), 180)))


# --- kcat (-G: librdkafka's balanced consumer) --------------------------------------------------------------------

FORMAT = "%p %o\\n"


def kcat_member(broker, group: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([require_tool("kcat"), "-b", broker.bootstrap_servers, "-G", group, "-f", FORMAT, "-q",
                             "-X", f"session.timeout.ms={SESSION_MS}", "-X", "heartbeat.interval.ms=500",
                             "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=false",
                             "-X", "auto.commit.interval.ms=100", *extra, "t"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def group_members(broker, group: str) -> dict[str, set[int]]:
    """member id -> partitions, from the coordinator's own view (kcat does not print its assignment)."""
    from kafkalab.protocol.payloads import ASSIGNMENT, decode_payload

    def view():
        described = broker.state.groups.describe(group)
        return {m["member_id"]: {p for t in decode_payload(ASSIGNMENT, m["member_assignment"])["assigned_partitions"]
                                 for p in t["partitions"]} if m["member_assignment"] else set()
                for m in described["members"]}
    return broker._on_loop(view)


def test_kcat_balanced_consumer_group(broker):
    fill(broker, "t", 0, PER_PARTITION)
    auto_commit = ("-X", "enable.auto.commit=true")
    a, b = kcat_member(broker, "kc", *auto_commit), kcat_member(broker, "kc", *auto_commit)
    procs = [a, b]
    try:
        wait_until(lambda: len(group_members(broker, "kc")) == 2 and all(group_members(broker, "kc").values()),
                   "two kcat members sharing the partitions")
        assignments = list(group_members(broker, "kc").values())
        wait_until(lambda: committed(broker, "kc", "t") == {p: PER_PARTITION for p in ALL}, "auto commits")
        offsets = committed(broker, "kc", "t")
        b.terminate()                                  # kcat leaves the group on a clean exit
        b.wait(30)
        wait_until(lambda: list(group_members(broker, "kc").values()) == [ALL], "kcat taking every partition")
        a.terminate()
        a.wait(30)
        fill(broker, "t", PER_PARTITION, 1)
        procs.append(kcat_member(broker, "kc", "-e"))             # -e: exit at the end of every partition
        out, _ = procs[-1].communicate(timeout=60)
        seen = [tuple(map(int, line.split())) for line in out.splitlines()]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
    check_flow({"assignments": assignments, "after_leave": ALL, "committed": offsets,
                "resumed": {p: o for p, o in seen}})


# --- eviction -----------------------------------------------------------------------------------------------------

def test_member_that_stops_heartbeating_is_evicted_after_its_session_timeout(broker):
    """kcat killed with SIGKILL never leaves: the coordinator evicts it once its session runs out, and the
    kafka-python member still there takes over its partitions."""
    fill(broker, "t", 0, PER_PARTITION)
    survivor = Member(kafka_python(broker, "ev"))
    survivor.start()
    victim = kcat_member(broker, "ev")
    try:
        wait_until(lambda: len(group_members(broker, "ev")) == 2 and survivor.assigned and survivor.assigned != ALL,
                   "two members")
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        killed = time.monotonic()
        wait_until(lambda: survivor.assigned == ALL, "the survivor taking every partition")
        waited = time.monotonic() - killed
        remaining = group_members(broker, "ev")
    finally:
        if victim.poll() is None:
            victim.kill()
        survivor.commands.put("close")
        survivor.join(30)
    assert list(remaining.values()) == [ALL]
    assert waited >= SESSION_MS / 1000 - 1.5, waited       # not before the session could have run out
    assert survivor.error is None

