"""What every handler module shares: the registry entry, the request context and the long-poll result.

A handler is ``handle(ctx, body) -> dict | Wait | None``: the response body, a :class:`Wait` (the response
is not ready: the server retries ``attempt`` when data arrives and once more at the deadline), or None (no
response at all: Produce with acks=0).
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
    session: Any = None         # the connection's security.SaslSession (principal, SASL exchange)


@dataclass
class Wait:
    """A response that waits for data: ``attempt(now_ms, final)`` returns the body, or None to keep waiting."""
    max_wait_ms: int
    attempt: Callable[[int, bool], dict | None]
