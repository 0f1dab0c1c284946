"""Fault rules, sans-IO: what a notebook arms with ``broker.faults.inject(...)`` and what fired.

A rule matches requests by API and, optionally, topic and partition; it fires ``times`` times (None: until
cleared). :data:`FAULT_KINDS` is the table of what a fault can do to the exchange; :mod:`.intercept` carries
each kind out at the dispatcher's interception hook. Rules are armed from the notebook's thread and taken on
the broker's, so a lock guards them.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkalab.protocol import ErrorCode, api_spec, resolve_api_key


class FaultKind(NamedTuple):
    name: str
    what: str            # one line for the table and the journal
    acts_before: bool    # True: decided before the handler runs (the request is not applied)


FAULT_KINDS = {kind.name: kind for kind in (
    FaultKind("error", "answer with an error code in the matching topic/partition entries; writes are not applied",
              True),
    FaultKind("delay", "hold the response back for `seconds` before sending it", False),
    FaultKind("drop", "close the connection instead of answering", True),
    FaultKind("truncate", "send only the first half of the response (its size prefix cut to match)", False),
    FaultKind("garble", "flip the bits of the response body after the correlation id", False),
    FaultKind("throttle", "answer with throttle_time_ms set (KIP-219: the client backs off that long)", False),
    FaultKind("move_leader", "move the partition's leadership to another node, then answer NOT_LEADER_OR_FOLLOWER",
              True),
)}


@dataclass
class FaultRule:
    id: int
    kind: str
    api_key: int | None             # None: any API
    topic: str | None = None
    partition: int | None = None
    times: int | None = 1           # None: every matching request until cleared
    error: ErrorCode | None = None
    seconds: float = 1.0            # delay
    throttle_ms: int = 1000         # throttle
    node: int | None = None         # move_leader: the new leader (None: the next node)
    fired: int = 0

    @property
    def armed(self) -> bool:
        return self.times is None or self.fired < self.times

    def matches(self, api_key: int, partitions: set[tuple[str, int | None]]) -> bool:
        if self.api_key is not None and api_key != self.api_key:
            return False
        if self.topic is None and self.partition is None:
            return True
        return any((self.topic is None or t == self.topic) and (self.partition is None or p == self.partition)
                   for t, p in partitions)

    def describe(self) -> str:
        """The journal's words for this fault, e.g. "fault injected: NOT_LEADER_OR_FOLLOWER"."""
        if self.kind == "error":
            return f"fault injected: {self.error.name}"
        if self.kind == "delay":
            return f"fault injected: delayed {self.seconds:g} s"
        if self.kind == "throttle":
            return f"fault injected: throttle_time_ms {self.throttle_ms}"
        if self.kind == "move_leader":
            return "fault injected: leadership moved, NOT_LEADER_OR_FOLLOWER"
        return f"fault injected: {self.kind}"


@dataclass
class Fired:
    rule: int
    kind: str
    api: str
    frame: int                       # the request's journal frame number
    note: str


@dataclass
class Faults:
    """The armed rules and the log of what fired: ``broker.faults``."""
    rules: list[FaultRule] = field(default_factory=list)
    history: list[Fired] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = 0

    def inject(self, api: int | str | None = None, error: int | str | None = None, *, kind: str | None = None,
               times: int | None = 1, topic: str | None = None, partition: int | None = None,
               seconds: float = 1.0, throttle_ms: int = 1000, node: int | None = None) -> FaultRule:
        """Arm a fault. ``kind`` is one of :data:`FAULT_KINDS` ("error" when ``error`` is given)."""
        kind = kind or ("error" if error is not None else None)
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault kind {kind!r} is not one of {', '.join(FAULT_KINDS)}")
        code = None
        if kind == "error":
            if error is None:
                raise ValueError("an error fault needs error=, e.g. error='NOT_LEADER_OR_FOLLOWER'")
            code = ErrorCode[error.upper()] if isinstance(error, str) else ErrorCode(error)
        api_key = None if api is None else resolve_api_key(api)
        if api_key is not None:
            api_spec(api_key)          # an unknown API is refused now, not silently never matched
        with self._lock:
            self._ids += 1
            rule = FaultRule(self._ids, kind, api_key, topic, partition, times, code, seconds, throttle_ms, node)
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def take(self, api_key: int, partitions: set[tuple[str, int | None]]) -> list[FaultRule]:
        """The armed rules this request triggers, each counted as fired once."""
        taken = []
        with self._lock:
            for rule in self.rules:
                if rule.armed and rule.matches(api_key, partitions):
                    rule.fired += 1
                    taken.append(rule)
            self.rules[:] = [r for r in self.rules if r.armed]
        return taken

    def record(self, rule: FaultRule, api: str, frame: int) -> None:
        with self._lock:
            self.history.append(Fired(rule.id, rule.kind, api, frame, rule.describe()))

    @property
    def armed(self) -> list[FaultRule]:
        with self._lock:
            return list(self.rules)

    @property
    def fired(self) -> list[Fired]:
        with self._lock:
            return list(self.history)

    def __repr__(self) -> str:
        armed = ", ".join(f"#{r.id} {r.kind} {_api_name(r.api_key)}" + (f" {r.topic}" if r.topic else "")
                          for r in self.armed) or "nothing"
        return f"<Faults armed: {armed}; fired: {len(self.fired)}>"

    def table(self):
        """Armed and fired faults as a pandas DataFrame (state, rule, kind, api, topic, frame, note)."""
        import pandas as pd
        rows = [{"state": "armed", "rule": r.id, "kind": r.kind, "api": _api_name(r.api_key), "topic": r.topic,
                 "frame": None, "note": FAULT_KINDS[r.kind].what} for r in self.armed]
        rows += [{"state": "fired", "rule": f.rule, "kind": f.kind, "api": f.api, "topic": None, "frame": f.frame,
                  "note": f.note} for f in self.fired]
        return pd.DataFrame(rows, columns=["state", "rule", "kind", "api", "topic", "frame", "note"])

    def _repr_html_(self) -> str:
        return self.table().to_html(index=False)


def _api_name(api_key: int | None) -> str:
    return "any" if api_key is None else api_spec(api_key).name
