"""Pairing responses with requests on one connection, by correlation id.

Kafka responses carry only a correlation id: their API key and version are those of the request they answer,
so a reader of responses must remember what was asked. A :class:`Correlator` holds the requests in flight on
one connection (clients pipeline several), forgets requests that get no answer (Produce with acks=0), and
hands back the request a response answers. Sans-IO; a connection's two directions feed the same correlator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRODUCE = 0


@dataclass(frozen=True, slots=True)
class InFlight:
    """What a response needs to know about the request it answers."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    token: Any = None          # the caller's handle for the request (a frame number, a timestamp...)


def expects_response(api_key: int, body: dict | None) -> bool:
    """Produce with acks=0 is fire-and-forget: the broker sends nothing back (the one API that does this)."""
    return not (api_key == PRODUCE and body is not None and body.get("acks") == 0)


class Correlator:
    """Requests in flight on one connection, keyed by correlation id."""

    def __init__(self) -> None:
        self._in_flight: dict[int, InFlight] = {}

    def __len__(self) -> int:
        return len(self._in_flight)

    def request(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None = None,
                token: Any = None, body: dict | None = None) -> InFlight | None:
        """Remember a request; returns the record, or None when no response will come."""
        if not expects_response(api_key, body):
            return None
        entry = InFlight(api_key, api_version, correlation_id, client_id, token)
        self._in_flight[correlation_id] = entry
        return entry

    def response(self, correlation_id: int) -> InFlight | None:
        """The request this response answers (and forget it), or None if it was never seen."""
        return self._in_flight.pop(correlation_id, None)

    def pending(self) -> list[InFlight]:
        """Requests still waiting for an answer, oldest first."""
        return list(self._in_flight.values())
