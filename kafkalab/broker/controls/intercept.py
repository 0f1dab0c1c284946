"""The lab controls at the dispatcher's interception hook: faults, holds and partition leadership.

:class:`LabControls` is what ``Connection.intercept`` holds. ``before_handler`` runs once a request is decoded:
it finds the topic-partitions the request names, takes the fault rules it triggers, decides which partitions
are refused (an error fault, a moved leader, or a partition this node does not lead in a multi-node cluster),
withholds their records from Produce so nothing is appended, and may close the connection (``drop``). It
leaves a :class:`Plan` on the pending request. ``after_response`` runs when the response body is built (at
once, or when a long poll completes): it writes the refusals' error codes and the throttle into the body,
encodes it, cuts or garbles the bytes, and returns them, or a :class:`Parked` response (a delay or a hold)
the I/O adapter finishes later. Every fault and hold leaves a note on its journal entries, which the frames
table shows in ``diagnostics``. Sans-IO: no clocks or sockets; the adapter passes ``ts``.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable

from kafkalab.protocol import ApiKey, ErrorCode, api_spec

from ..dispatch import CloseConnection
from .faults import FAULT_KINDS, FaultRule, Faults
from .hold import DROP, Hold

#: APIs that must go to the partition's leader (Kafka answers the others from any broker).
LEADER_APIS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.DELETE_RECORDS,
                         ApiKey.OFFSET_FOR_LEADER_EPOCH})
_TOPIC_KEYS, _PARTITION_KEYS = ("name", "topic", "topic_name"), ("index", "partition_index", "partition")


@dataclass
class Refusal:
    topic: str | None           # None: every entry
    partition: int | None
    code: int


@dataclass
class Plan:
    refusals: list[Refusal] = field(default_factory=list)
    after: list[FaultRule] = field(default_factory=list)     # delay, truncate, garble, throttle
    hold: Hold | None = None
    notes: list[str] = field(default_factory=list)           # for the response's journal entry


@dataclass
class Parked:
    """A response the adapter sends later: after ``delay`` seconds, or once ``hold`` is decided. ``finish(ts)``
    then gives the bytes to send, or raises CloseConnection."""
    finish: Callable[[float], bytes]
    delay: float = 0.0
    hold: Hold | None = None


class LabControls:
    def __init__(self, state, faults: Faults, holds: list[Hold], cluster) -> None:
        self.state, self.faults, self.holds, self.cluster = state, faults, holds, cluster

    def active(self) -> bool:
        return bool(self.faults.rules or self.holds or self.cluster.size > 1)

    # --- before the handler ---------------------------------------------------------------------------

    def before_handler(self, conn, pending, request) -> None:
        if not self.active():
            return
        body, api_key = request.body, pending.api_key
        named = self.partitions_of(body)
        plan = Plan()
        if api_key in LEADER_APIS and self.cluster.size > 1:
            plan.refusals += [Refusal(t, p, ErrorCode.NOT_LEADER_OR_FOLLOWER) for t, p in named
                              if p is not None and not self.cluster.leads(conn.node_id, t, p)]
        for rule in self.faults.take(api_key, named):
            self.faults.record(rule, api_spec(api_key).name, pending.entry.number)
            _note(pending.entry, rule.describe())
            plan.notes.append(rule.describe())
            self._apply(rule, plan, named)
        answered = not (api_key == ApiKey.PRODUCE and body.get("acks") == 0)   # acks=0: nothing to hold
        hold = next((h for h in self.holds if h.matches(api_key, named)), None) if answered else None
        if hold is not None:
            self.holds.remove(hold)
            plan.hold = hold
        if plan.refusals and api_key == ApiKey.PRODUCE:
            self._withhold_records(body, plan.refusals)
        if plan.refusals or plan.after or plan.hold:
            pending.plan = plan

    def _apply(self, rule: FaultRule, plan: Plan, named) -> None:
        if rule.kind == "drop":
            raise CloseConnection(rule.describe())
        if rule.kind == "error":
            plan.refusals.append(Refusal(rule.topic, rule.partition, rule.error))
        elif rule.kind == "move_leader":
            for topic, partition in named:
                if partition is not None and (rule.topic in (None, topic)) and rule.partition in (None, partition):
                    self.cluster.move(topic, partition, rule.node)
                    plan.refusals.append(Refusal(topic, partition, ErrorCode.NOT_LEADER_OR_FOLLOWER))
        else:
            plan.after.append(rule)

    @staticmethod
    def _withhold_records(body: dict, refusals: list[Refusal]) -> None:
        def visit(node: dict, topic, partition) -> None:
            if partition is not None and "records" in node and _refused(refusals, topic, partition):
                node["records"] = None
        walk(body, visit, None)

    def partitions_of(self, body: dict) -> set[tuple[str, int | None]]:
        """The (topic, partition) pairs a request names; (topic, None) for topics named without partitions."""
        found: set[tuple[str, int | None]] = set()
        walk(body, lambda node, t, p: found.add((t, p)) if t is not None else None, self.state.store.by_id)
        return found

    # --- after the response is built ------------------------------------------------------------------

    def after_response(self, conn, pending, body: dict, version: int, ts: float) -> bytes | Parked:
        plan: Plan = pending.plan
        if plan.refusals:
            self._refuse(conn, pending.api_key, body, version, plan.refusals)
        for rule in plan.after:
            if rule.kind == "throttle" and "throttle_time_ms" in body:
                body["throttle_time_ms"] = rule.throttle_ms
        if plan.hold is not None:
            return self._park_for_hold(conn, pending, body, version, plan, ts)
        raw = self._bytes(conn, pending, body, version, plan)
        delay = sum(r.seconds for r in plan.after if r.kind == "delay")
        if delay:
            plan.notes.append(f"held {delay:g} s (fault)")
            return Parked(lambda sent_ts: conn.sent(pending, raw, sent_ts, plan.notes), delay=delay)
        return conn.sent(pending, raw, ts, plan.notes)

    def _refuse(self, conn, api_key: int, body: dict, version: int, refusals: list[Refusal]) -> None:
        """Write the refusals' error codes into a response body, as Kafka answers a refused partition: no
        records (an empty set, never null: librdkafka cannot parse a null one), and for a partition this node
        does not lead, the leader and its epoch (KIP-951: ``current_leader`` and ``node_endpoints``, in the
        versions that have them) so the client goes to the new leader without asking for metadata first."""
        response = api_spec(api_key).response
        hints = _has_field(response.fields, "current_leader", version)
        leaders: set[int] = set()

        def refuse(node: dict, topic, partition) -> None:
            code = _refused(refusals, topic, partition)
            if code is None or "error_code" not in node:
                return
            node["error_code"] = int(code)
            if "records" in node:
                node["records"] = b""
            if hints and code == ErrorCode.NOT_LEADER_OR_FOLLOWER and topic is not None and partition is not None:
                leader, epoch = self.cluster.leader(topic, partition)
                node["current_leader"] = {"leader_id": leader, "leader_epoch": epoch}
                leaders.add(leader)
        walk(body, refuse, self.state.store.by_id)
        if leaders and _has_field(response.fields, "node_endpoints", version, nested=False):
            body["node_endpoints"] = [{"node_id": node, "host": host, "port": port, "rack": None}
                                      for node, host, port in self.state.brokers(conn.local_host, conn.local_port)
                                      if node in leaders]

    def _bytes(self, conn, pending, body: dict, version: int, plan: Plan) -> bytes:
        raw = conn.encode(pending, body, version)
        for rule in plan.after:
            if rule.kind == "truncate":
                raw = truncate(raw)
            elif rule.kind == "garble":
                raw = garble(raw)
        return raw

    def _park_for_hold(self, conn, pending, body: dict, version: int, plan: Plan, ts: float) -> Parked:
        hold = plan.hold
        hold.catch(conn.journal.frame(pending.entry.number), body, version,
                   lambda edited: conn.encode(pending, edited, version))

        def finish(sent_ts: float) -> bytes:
            held = f"held {sent_ts - ts:.1f} s"
            if hold.decision == DROP:
                _note(pending.entry, f"{held}, dropped: connection closed")
                raise CloseConnection(f"held {api_spec(pending.api_key).name} dropped from the notebook")
            edited = hold.edited is not None
            plan.notes.append(held + (", response edited" if edited else ", released"))
            return conn.sent(pending, self._bytes(conn, pending, hold.edited if edited else body, version, plan),
                             sent_ts, plan.notes)
        return Parked(finish, hold=hold)


def walk(node, visit, topic_ids, topic: str | None = None, partition: int | None = None) -> None:
    """Call ``visit(dict, topic, partition)`` for every dict in a message body, with the topic and partition
    it sits in (topic entries are dicts with a name, or a topic id resolved through ``topic_ids``)."""
    if isinstance(node, list):
        for item in node:
            walk(item, visit, topic_ids, topic, partition)
        return
    if not isinstance(node, dict):
        return
    for key in _TOPIC_KEYS:
        if isinstance(node.get(key), str):
            topic, partition = node[key], None
            break
    else:
        topic_id = node.get("topic_id")
        if isinstance(topic_id, uuid.UUID) and topic_ids and topic_id in topic_ids:
            topic, partition = topic_ids[topic_id].name, None
    for key in _PARTITION_KEYS:
        if isinstance(node.get(key), int) and not isinstance(node.get(key), bool):
            partition = node[key]
            break
    visit(node, topic, partition)
    for value in node.values():
        if isinstance(value, (list, dict)):
            walk(value, visit, topic_ids, topic, partition)


def _has_field(fields, name: str, version: int, nested: bool = True) -> bool:
    """Whether a message (or, with ``nested``, any struct in it) has field ``name`` in ``version``."""
    return any(f.exists_in(version) and (f.name == name or (nested and _has_field(f.fields, name, version)))
               for f in fields)


def _refused(refusals: list[Refusal], topic, partition) -> int | None:
    for r in refusals:
        if (r.topic is None or r.topic == topic) and (r.partition is None or r.partition == partition):
            if r.topic is None or topic is not None:
                return r.code
    return None


def _note(entry, note: str) -> None:
    entry.notes = [*(entry.notes or ()), note]


def truncate(raw: bytes) -> bytes:
    """The first half of the frame's body (never less than its correlation id), size prefix made to match."""
    keep = max(4, (len(raw) - 4) // 2)
    return keep.to_bytes(4, "big") + raw[4:4 + keep]


def garble(raw: bytes) -> bytes:
    """Every bit after the correlation id flipped: the client matches the answer, then cannot read it."""
    return raw[:8] + bytes(b ^ 0xFF for b in raw[8:])


__all__ = ["LabControls", "Parked", "FAULT_KINDS", "walk"]
