"""SASL/OAUTHBEARER (RFC 7628, KIP-255) with unsecured JWTs, as Kafka's development-mode validator accepts them.

Opt-in (``Broker(sasl_mechanisms=(..., "OAUTHBEARER"))``): an unsecured token proves nothing, it only names a
principal, which is what a lab needs to try OAUTHBEARER clients. The client's one message is a GS2 header then
``\\x01``-separated key=value pairs, one of them ``auth=Bearer <token>``; the token is ``header.payload.`` with
``alg: none``, a ``sub`` (the principal's name) and, if present, an ``exp`` (seconds) still in the future.
A refused token ends the exchange at once (Kafka first sends an error document and waits for the client's
``\\x01``; clients then report the same failure).
"""
from __future__ import annotations

import base64
import json
from typing import Callable

from .scram import ScramError


def _b64url(part: str) -> dict:
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise ScramError("Invalid OAUTHBEARER token: a part is not base64url JSON") from None
    if not isinstance(value, dict):
        raise ScramError("Invalid OAUTHBEARER token: a part is not a JSON object")
    return value


class OAuthBearerExchange:
    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock, self.username = clock, None

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("Invalid OAUTHBEARER message: not UTF-8") from None
        gs2, sep, rest = text.partition("\x01")
        if not sep or not gs2.startswith("n,") or not rest.endswith("\x01\x01"):
            raise ScramError("Invalid OAUTHBEARER message framing")
        pairs = dict(kv.split("=", 1) for kv in rest.split("\x01") if "=" in kv)
        scheme, _, jwt = pairs.get("auth", "").partition(" ")
        if scheme.lower() != "bearer" or jwt.count(".") != 2:
            raise ScramError("Invalid OAUTHBEARER message: no bearer token")
        header_part, payload_part, signature = jwt.split(".")
        header, claims = _b64url(header_part), _b64url(payload_part)
        if header.get("alg") != "none" or signature:
            raise ScramError("Only unsecured tokens (alg none, no signature) are accepted")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise ScramError("Invalid OAUTHBEARER token: no subject")
        expires = claims.get("exp")
        if self.clock is not None and isinstance(expires, (int, float)) and expires <= self.clock():
            raise ScramError("Invalid OAUTHBEARER token: expired")
        self.username = subject
        return b""
