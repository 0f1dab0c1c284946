"""Responses whose request was not captured: which API and version are they? Trial decoding decides.

Kafka responses do not name their API; without the request a reader must guess, so this module never
guesses silently: candidates are tried tier by tier (what this connection asked before, what the same client
host asked anywhere, then every API and version the schema knows). A candidate *fits* when the frame decodes
exactly (no leftover bytes, no diagnostics). The first tier with fits wins if all its fits are one API
(the highest fitting version is taken and the alternatives are named); fits from several APIs mean the frame
stays undecoded, with the candidates in its diagnostic.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from kafkalab.protocol import ProtocolError, Response, api_keys, api_name, api_spec, decode_response


@lru_cache(maxsize=1)
def every_response_schema() -> tuple[tuple[int, int], ...]:
    out = []
    for key in api_keys():
        low, high = api_spec(key).message("response").versions
        out.extend((key, version) for version in range(low, high + 1))
    return tuple(out)


def _fits(raw: bytes, candidates: Iterable[tuple[int, int]]) -> list[tuple[int, int, Response]]:
    fits = []
    for key, version in candidates:
        try:
            response = decode_response(raw, key, version)
        except (ProtocolError, ValueError, KeyError, IndexError):
            continue
        if not response.diagnostics and response.api_version == version:
            fits.append((key, version, response))
    return fits


def infer_response(raw: bytes, tiers: list[tuple[str, list[tuple[int, int]]]]) -> tuple[Response | None, str]:
    """(decoded response or None, diagnostic explaining the choice or the refusal)."""
    tried: set[tuple[int, int]] = set()
    for label, candidates in tiers + [("any API", list(every_response_schema()))]:
        fresh = [c for c in dict.fromkeys(candidates) if c not in tried]
        tried.update(fresh)
        fits = _fits(raw, fresh)
        if not fits:
            continue
        keys = sorted({key for key, _, _ in fits})
        if len(keys) > 1:
            names = ", ".join(f"{api_name(k)} v{v}" for k, v, _ in fits[:8])
            more = f" and {len(fits) - 8} more" if len(fits) > 8 else ""
            return None, (f"request not captured; response fits several APIs ({names}{more}): left undecoded")
        key, version, response = max(fits, key=lambda fit: fit[1])
        others = [v for _, v, _ in fits if v != version]
        note = f"inferred {api_name(key)} v{version} (request not captured; fits {label}"
        note += f"; also fits v{', v'.join(map(str, sorted(others)))})" if others else ")"
        response.diagnostics.append(note)
        return response, note
    return None, "request not captured and no known response schema fits exactly: left undecoded"
