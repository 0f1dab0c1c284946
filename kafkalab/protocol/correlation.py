"""Pairing responses with requests on one connection, and inferring what a response answers when its request
was not seen. The one home of these rules: captures (both readers) and the distributed reader call them.

Kafka responses carry only a correlation id: their API key and version are those of the request they answer,
so a reader of responses must remember what was asked (clients pipeline several requests), must forget
requests that get no answer (:func:`expects_response`: Produce with acks=0), and, when a request was lost
(capture loss, a capture started mid-connection), must guess.

Inference never guesses silently (:func:`infer_response`): candidates are tried tier by tier, and the tiers
(:func:`inference_tiers`) put first what the *same connection* asked, newest first, so a lost Produce request's
response on a connection sending Produce v10 reads as v10 even where v12 fits the bytes too; then the
ApiVersions ranges advertised to the connection, then what the same client host asked on other connections,
then every API and version the schema knows. A candidate *fits* when the frame decodes exactly (no leftover
bytes, no diagnostics). The first tier with fits wins if all its fits are one API (its highest fitting version
is taken and the alternatives are named); fits from several APIs leave the frame undecoded, with the candidates
in its diagnostic.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from .errors import ProtocolError
from .messages import Response, decode_response
from .schema.api_keys import ApiKey
from .schema.headers import API_VERSIONS  # noqa: F401 - the capture stages import it from here
from .schema.registry import api_keys, api_name, api_spec

PRODUCE = int(ApiKey.PRODUCE)      # a plain int: compared once per frame
Pair = tuple[int, int]              # (api_key, api_version)


def expects_response(api_key: int, body: dict | None) -> bool:
    """Produce with acks=0 is fire-and-forget: the broker sends nothing back (the one API that does this)."""
    return not (api_key == PRODUCE and body is not None and body.get("acks") == 0)


class Asked:
    """What one connection has asked: the requests waiting for their response, by correlation id (clients
    pipeline several), and the (api_key, api_version) pairs it used, in order of first use (the first tier of
    inference). Sans-IO; a connection's two directions share one."""

    __slots__ = ("in_flight", "pairs")

    def __init__(self) -> None:
        self.in_flight: dict[int, object] = {}      # correlation id -> the caller's handle for the request
        self.pairs: dict[Pair, None] = {}           # an ordered set

    def request(self, api_key: int, api_version: int, correlation_id: int, answered: bool, token) -> bool:
        """Remember a request (``answered``: see :func:`expects_response`); False, remembering nothing, when
        its header is too damaged to pair by."""
        if api_key < 0 or api_version < 0 or correlation_id < 0:
            return False
        if answered:
            self.in_flight[correlation_id] = token
        self.pairs[(api_key, api_version)] = None
        return True

    def response(self, correlation_id: int):
        """The handle of the request this response answers (now forgotten), or None if none waits."""
        return self.in_flight.pop(correlation_id, None)


def advertised_ranges(body: dict) -> list[Pair]:
    """(api_key, version) pairs an ApiVersions response advertises."""
    out = []
    for entry in body.get("api_keys") or []:
        try:
            low, high = int(entry["min_version"]), int(entry["max_version"])
            key = int(entry["api_key"])
        except (KeyError, TypeError, ValueError):
            continue
        out.extend((key, v) for v in range(max(low, 0), min(high, 64) + 1))
    return out


def inference_tiers(asked: Iterable[Pair], advertised: Iterable[Pair] = (), host_asked: Iterable[Pair] = ()
                    ) -> list[tuple[str, list[Pair]]]:
    """The candidates for a response whose request was not seen, most likely first. ``asked`` and
    ``host_asked`` are in order of first use (the newest is tried first)."""
    return [("this connection's requests", list(reversed(list(asked)))),
            ("the ApiVersions ranges advertised", list(advertised)),
            ("requests from the same client host", list(reversed(list(host_asked))))]


@lru_cache(maxsize=1)
def every_response_schema() -> tuple[Pair, ...]:
    out = []
    for key in api_keys():
        low, high = api_spec(key).message("response").versions
        out.extend((key, version) for version in range(low, high + 1))
    return tuple(out)


def fits(raw: bytes, candidates: Iterable[Pair]) -> list[tuple[int, int, Response]]:
    """The candidates ``raw`` (a response frame) decodes as exactly."""
    out = []
    for key, version in candidates:
        try:
            response = decode_response(raw, key, version)
        except (ProtocolError, ValueError, KeyError, IndexError):
            continue
        if not response.diagnostics and response.api_version == version:
            out.append((key, version, response))
    return out


def infer_response(raw: bytes, tiers: list[tuple[str, list[Pair]]], *, every_api: bool = True
                   ) -> tuple[Response | None, str]:
    """(decoded response or None, diagnostic explaining the choice or the refusal). ``every_api=False`` stops
    after the given tiers (the caller may learn more before trying every schema)."""
    tried: set[Pair] = set()
    last = [("any API", list(every_response_schema()))] if every_api else []
    for label, candidates in tiers + last:
        fresh = [c for c in dict.fromkeys(candidates) if c not in tried]
        tried.update(fresh)
        found = fits(raw, fresh)
        if not found:
            continue
        keys = sorted({key for key, _, _ in found})
        if len(keys) > 1:
            names = ", ".join(f"{api_name(k)} v{v}" for k, v, _ in found[:8])
            more = f" and {len(found) - 8} more" if len(found) > 8 else ""
            return None, (f"request not captured; response fits several APIs ({names}{more}): left undecoded")
        key, version, response = max(found, key=lambda fit: fit[1])
        others = [v for _, v, _ in found if v != version]
        note = f"inferred {api_name(key)} v{version} (request not captured; fits {label}"
        note += f"; also fits v{', v'.join(map(str, sorted(others)))})" if others else ")"
        response.diagnostics.append(note)
        return response, note
    return None, "request not captured and no known response schema fits exactly: left undecoded"
