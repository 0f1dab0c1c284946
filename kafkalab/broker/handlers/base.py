"""What every handler module shares: the registry entry, the request context and the long-poll result.

A handler is ``handle(ctx, body) -> dict | Wait | Offload | None``: the response body, a :class:`Wait` (the
response is not ready: the server retries ``attempt`` when data arrives and once more at the deadline), an
:class:`Offload` (work for a worker thread first), or None (no response at all: Produce with acks=0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

UNSUPPORTED_VERSION = 35


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    handle: Callable[[RequestContext, dict], Any]


@dataclass
class RequestContext:
    state: Any                  # BrokerState
    registry: dict[int, Handler]
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    now_ms: int
    local_host: str = ""
    local_port: int = 0
    stream: int = 0
    client_address: str = ""    # "ip:port" of the client (group members report it as their host)


@dataclass
class Wait:
    """A response that waits for data: ``attempt(now_ms, final)`` returns the body, or None to keep waiting."""
    max_wait_ms: int
    attempt: Callable[[int, bool], dict | None]


@dataclass
class Offload:
    """CPU-heavy work to run off the event loop (inflating a hostile wrapper must not stall other clients):
    ``work()`` runs in a worker thread and must not touch broker state; ``then(result)`` runs back on the
    loop and returns what a handler returns."""
    work: Callable[[], Any]
    then: Callable[[Any], Any]
