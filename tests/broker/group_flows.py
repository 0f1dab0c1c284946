"""The two-member group flow every client runs against the broker, and the member harness for clients that
poll from a thread (kafka-python, confluent-kafka). Each client module supplies how to make, poll, commit and
close one consumer; the flow and its checks are the same for all.

The flow: four partitions hold five records each; two members join the group and must end with disjoint
assignments covering all four partitions and with every record consumed; both commit; one leaves and the
other must take over all four partitions; after both are gone one more record lands on each partition and a
fresh member must start exactly at the committed offsets (5)."""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

PARTITIONS = 4
PER_PARTITION = 5
ALL = set(range(PARTITIONS))
FLOW_SECONDS = 60          # each wait of a flow; a loaded 2-core machine stays well inside it


def wait_until(check: Callable[[], bool], what: str, seconds: float = FLOW_SECONDS, every: float = 0.05,
               describe: Callable[[], Any] = lambda: "") -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what} {describe()}")
        time.sleep(every)


def fill(broker, topic: str, start: int, count: int) -> None:
    """``count`` records per partition, values "p-i", through the broker's own Produce path (a real client)."""
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for p in range(PARTITIONS):
        for i in range(start, start + count):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def committed(broker, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets as the broker holds them (read on the broker's thread)."""
    def read():
        found = {p: broker.state.store.fetch_committed(group, topic, p) for p in range(PARTITIONS)}
        return {p: c.offset for p, c in found.items() if c is not None}
    return broker._on_loop(read)


@dataclass
class Client:
    """How one client library makes, polls, commits and closes a subscribed consumer."""
    make: Callable[[], Any]
    poll: Callable[[Any], list[tuple[int, int]]]        # (partition, offset) of the records it returned
    assignment: Callable[[Any], set[int]]
    commit: Callable[[Any], None]
    close: Callable[[Any], None]


@dataclass(eq=False)
class Member(threading.Thread):
    """One consumer on its own thread, polling until told to commit or close."""
    client: Client
    seen: dict[int, set[int]] = field(default_factory=dict)
    assigned: set[int] = field(default_factory=set)
    commands: queue.Queue = field(default_factory=queue.Queue)
    done: set[str] = field(default_factory=set)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, daemon=True)

    def run(self) -> None:
        try:
            consumer = self.client.make()
            while True:
                command = None if self.commands.empty() else self.commands.get()
                if command == "close":
                    self.client.close(consumer)
                    self.done.add("close")
                    return
                if command == "commit":
                    self.client.commit(consumer)
                    self.done.add("commit")
                for partition, offset in self.client.poll(consumer):
                    self.seen.setdefault(partition, set()).add(offset)
                self.assigned = self.client.assignment(consumer)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            self.error = exc

    def order(self, command: str) -> None:
        self.commands.put(command)
        wait_until(lambda: command in self.done or self.error is not None, f"{command} by a member")
        assert self.error is None, self.error


def consumed_all(*members: Member) -> bool:
    offsets: dict[int, set[int]] = {}
    for m in members:
        for p, seen in m.seen.items():
            offsets.setdefault(p, set()).update(seen)
    return all(offsets.get(p, set()) >= set(range(PER_PARTITION)) for p in ALL)


def run_polling_flow(broker, client: Client, group: str, topic: str) -> dict:
    """The flow with thread members; returns what the checks in :func:`check_flow` need."""
    fill(broker, topic, 0, PER_PARTITION)
    a, b = Member(client), Member(client)
    a.start()
    b.start()
    try:
        wait_until(lambda: a.error or b.error or (a.assigned and b.assigned and a.assigned | b.assigned == ALL
                                                  and not a.assigned & b.assigned and consumed_all(a, b)),
                   "two members sharing the partitions", describe=lambda: (a.assigned, b.assigned))
        assert a.error is None and b.error is None, a.error or b.error
        assignments = [set(a.assigned), set(b.assigned)]
        a.order("commit")
        b.order("commit")
        b.order("close")
        wait_until(lambda: a.error or a.assigned == ALL, "the remaining member taking every partition")
        after_leave = set(a.assigned)
        a.order("close")
    finally:
        for m in (a, b):
            m.commands.put("close")
            m.join(FLOW_SECONDS)
    offsets = committed(broker, group, topic)
    fill(broker, topic, PER_PARTITION, 1)
    c = Member(client)
    c.start()
    try:
        wait_until(lambda: c.error or set(c.seen) == ALL, "a new member resuming")
        assert c.error is None, c.error
        resumed = {p: min(o) for p, o in c.seen.items()}
        c.order("close")
    finally:
        c.commands.put("close")
        c.join(FLOW_SECONDS)
    return {"assignments": assignments, "after_leave": after_leave, "committed": offsets, "resumed": resumed}


def check_flow(result: dict) -> None:
    first, second = result["assignments"]
    assert first and second and not first & second and first | second == ALL, result
    assert result["after_leave"] == ALL
    assert result["committed"] == {p: PER_PARTITION for p in ALL}
    assert result["resumed"] == {p: PER_PARTITION for p in ALL}
