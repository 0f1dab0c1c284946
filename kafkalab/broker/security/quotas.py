"""Client quotas, sans-IO: the quota entries (AlterClientQuotas / DescribeClientQuotas), byte-rate
measurement, and the throttle time a client is told (KIP-13, with KIP-219's order: the broker answers at
once with ``throttle_time_ms``, then mutes the channel for that long).

Owns: entities - (user, client-id) with names or the default (None) - their values by quota key, Kafka's
precedence when several entries match a client, and the throttle computation. Must not know: sockets or
timers (the adapter mutes the channel; see server.py). Time comes in as ``now_ms``.

Throttle time (Kafka's ClientQuotaManager): with the byte rate observed over the recent window above the quota,
``(rate - quota) / quota * window``, so the client's long-run rate falls back to the quota.
"""
from __future__ import annotations

from collections import deque

from kafkalab.protocol import ErrorCode

PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, "request_percentage", "controller_mutation_rate"})
USER, CLIENT_ID = "user", "client-id"
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2        # DescribeClientQuotas component match types
WINDOW_MS, MAX_THROTTLE_MS = 5000, 30_000

Entity = tuple[tuple[str, "str | None"], ...]          # sorted ((entity type, name or None for default), ...)


def _precedence(user: str, client_id: str) -> list[Entity]:
    """Kafka's order, most specific first (ClientQuotaManager's /config/users/... then /config/clients/...)."""
    return [((CLIENT_ID, client_id), (USER, user)), ((CLIENT_ID, None), (USER, user)), ((USER, user),),
            ((CLIENT_ID, client_id), (USER, None)), ((CLIENT_ID, None), (USER, None)), ((USER, None),),
            ((CLIENT_ID, client_id),), ((CLIENT_ID, None),)]


class ClientQuotas:
    def __init__(self) -> None:
        self.entries: dict[Entity, dict[str, float]] = {}
        self.listener = None            # told of every value set or removed (SecurityLog: they survive a restart)
        self._samples: dict[tuple[str, str, str], deque] = {}

    # --- the entries --------------------------------------------------------------------------------------

    def alter(self, entity: Entity, ops: list[dict], validate_only: bool = False) -> tuple[int, str | None]:
        kinds = [kind for kind, _ in entity]
        if not kinds or len(set(kinds)) != len(kinds) or set(kinds) - {USER, CLIENT_ID}:
            return ErrorCode.INVALID_REQUEST, f"Invalid quota entity {entity}"
        for op in ops:
            if op["key"] not in KEYS:
                return ErrorCode.INVALID_REQUEST, f"Unknown quota key {op['key']}"
            if not op.get("remove") and not op["value"] > 0:
                return ErrorCode.INVALID_REQUEST, f"Quota {op['key']} must be positive"
        if validate_only:
            return ErrorCode.NONE, None
        entity = tuple(sorted(entity, key=lambda e: e[0]))
        values = self.entries.setdefault(entity, {})
        for op in ops:
            if op.get("remove"):
                values.pop(op["key"], None)
            else:
                values[op["key"]] = float(op["value"])
            if self.listener is not None:
                self.listener.quota_changed(entity, op["key"], None if op.get("remove") else values[op["key"]])
        self.entries = {e: v for e, v in self.entries.items() if v}
        return ErrorCode.NONE, None

    def describe(self, components: list[dict], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        out = []
        for entity, values in self.entries.items():
            named = dict(entity)
            if strict and set(named) != {c["entity_type"] for c in components}:
                continue
            if all(_component_matches(c, named) for c in components):
                out.append((entity, values))
        return out

    def limit(self, key: str, user: str, client_id: str) -> float | None:
        for entity in _precedence(user, client_id):
            value = self.entries.get(entity, {}).get(key)
            if value is not None:
                return value
        return None

    # --- measurement --------------------------------------------------------------------------------------

    def record(self, key: str, user: str, client_id: str, nbytes: int, now_ms: int) -> int:
        """Count ``nbytes`` against the client's ``key`` quota; the throttle time in ms (0: within quota)."""
        quota = self.limit(key, user, client_id)
        if quota is None:
            return 0
        samples = self._samples.setdefault((key, user, client_id), deque())
        samples.append((now_ms, nbytes))
        while samples and samples[0][0] < now_ms - WINDOW_MS:
            samples.popleft()
        elapsed_ms = max(now_ms - samples[0][0], 1000)
        rate = sum(n for _, n in samples) * 1000.0 / elapsed_ms
        if rate <= quota:
            return 0
        return min(int((rate - quota) / quota * elapsed_ms), MAX_THROTTLE_MS)


def _component_matches(component: dict, named: dict) -> bool:
    kind, match = component["entity_type"], component.get("match_type", MATCH_EXACT)
    if match == MATCH_ANY:
        return kind in named
    if match == MATCH_DEFAULT:
        return kind in named and named[kind] is None
    return named.get(kind, "") == component.get("match")
