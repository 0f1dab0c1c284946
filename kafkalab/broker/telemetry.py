"""Client metrics (KIP-714), sans-IO: the client-metrics config resources, which clients they select, and the
metrics clients push.

Owns: the subscriptions (a CLIENT_METRICS config resource, made with IncrementalAlterConfigs or AlterConfigs:
``metrics``, a list of metric-name prefixes, ``*`` for all; ``interval.ms``, how often to push; ``match``,
``selector=regex`` items that choose clients by client_instance_id, client_id or client_source_address), the
subscription a client gets from GetTelemetrySubscriptions (the union of the metrics of every resource that
matches it, the shortest interval, an id that changes when any of that changes), and the pushes PushTelemetry
receives (kept per client instance, newest last, as the OTLP bytes the client sent).
Must not know: requests, sockets, clocks.
"""
from __future__ import annotations

import re
import uuid
import zlib
from collections import deque
from dataclasses import dataclass

from kafkalab.protocol import ErrorCode

from .configs import INT, LIST, ConfigDef

CLIENT_METRICS_RESOURCE = 16
CLIENT_METRICS_CONFIG_SOURCE = 7          # Kafka's ConfigSource.CLIENT_METRICS_CONFIG
DEFAULT_INTERVAL_MS, MAX_BYTES, KEPT_PUSHES = 300_000, 1024 * 1024, 32
SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
             "client_source_address", "client_source_port")
CONFIGS: dict[str, ConfigDef] = {d.name: d for d in (
    ConfigDef("metrics", LIST, "", "Metric name prefixes the selected clients push; * for all."),
    ConfigDef("interval.ms", INT, str(DEFAULT_INTERVAL_MS), "How often the selected clients push, in ms.",
              low=100, high=3_600_000),
    ConfigDef("match", LIST, "", "selector=regex items choosing the clients (all clients when empty)."),
)}


def match_problem(value: str | None) -> str | None:
    """Why a ``match`` value is not a list of ``selector=regex`` with known selectors and valid patterns."""
    for item in (i.strip() for i in (value or "").split(",") if i.strip()):
        selector, eq, pattern = item.partition("=")
        if not eq or selector not in SELECTORS:
            return f"Invalid match {item!r}: use selector=regex with one of {', '.join(SELECTORS)}"
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"Invalid regex in match {item!r}: {exc}"
    return None


@dataclass(frozen=True)
class Subscription:
    subscription_id: int
    metrics: list[str]          # [] none, [""] all (KIP-714's encoding)
    interval_ms: int


@dataclass(frozen=True)
class Push:
    subscription_id: int
    compression_type: int
    metrics: bytes
    terminating: bool


class ClientMetrics:
    def __init__(self) -> None:
        self.resources: dict[str, dict[str, str]] = {}
        self.pushes: dict[uuid.UUID, deque[Push]] = {}

    def set(self, name: str, configs: dict[str, str]) -> None:
        """A resource's configs (all of them); none left removes the resource."""
        if configs:
            self.resources[name] = dict(configs)
        else:
            self.resources.pop(name, None)

    def subscription(self, client: dict[str, str]) -> Subscription:
        """What a client (its selector values: client_instance_id, client_id, client_source_address...) is asked
        to push."""
        chosen = [(name, c) for name, c in sorted(self.resources.items()) if _selects(c.get("match", ""), client)]
        prefixes = sorted({m.strip() for _, c in chosen for m in c.get("metrics", "").split(",") if m.strip()})
        metrics = [""] if "*" in prefixes else prefixes
        interval = min((int(c.get("interval.ms", DEFAULT_INTERVAL_MS)) for _, c in chosen if metrics),
                       default=DEFAULT_INTERVAL_MS)
        ident = zlib.crc32(repr((metrics, interval)).encode()) & 0x7FFFFFFF
        return Subscription(ident, metrics, interval)

    def push(self, client: dict[str, str], instance: uuid.UUID, subscription_id: int, compression_type: int,
             metrics: bytes, terminating: bool) -> int:
        """Record a push; UNKNOWN_SUBSCRIPTION_ID when the subscription changed since the client fetched it
        (it fetches again), TELEMETRY_TOO_LARGE over the size limit."""
        if subscription_id != self.subscription(client).subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if len(metrics) > MAX_BYTES:
            return ErrorCode.TELEMETRY_TOO_LARGE
        self.pushes.setdefault(instance, deque(maxlen=KEPT_PUSHES)).append(
            Push(subscription_id, compression_type, bytes(metrics), terminating))
        return ErrorCode.NONE


def _selects(match: str, client: dict[str, str]) -> bool:
    for item in (i.strip() for i in match.split(",") if i.strip()):
        selector, _, pattern = item.partition("=")
        if re.fullmatch(pattern, client.get(selector, "")) is None:
            return False
    return True
