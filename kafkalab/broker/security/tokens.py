"""Delegation tokens (KIP-48), sans-IO: issue, renew, expire, describe, and the SCRAM credential a token is.

Owns: the broker's token store and Kafka's lifetime rules. A token is (id, HMAC-SHA512 of the id under the
broker's secret, owner, requester, renewers, issue/expiry/max timestamps). Its expiry starts at issue +
``renew_interval_ms`` (delegation.token.expiry.time.ms) and never passes issue + the max lifetime (the asked one,
capped by ``max_lifetime_ms``, delegation.token.max.lifetime.ms). The owner or a renewer may renew (expiry
moves to now + the asked period, or the renew interval when the period is negative, capped by the max) or
expire it (now + the period; a negative period ends it at once). Past its expiry a token no longer
authenticates, is no longer described, and renewing it is DELEGATION_TOKEN_EXPIRED until :meth:`purge` (the
broker's periodic tick) removes it.
Must not know: requests, sockets, clocks (every call takes ``now_ms``).

Authentication (Kafka's ``tokenauth=true`` SCRAM extension): the client sends the token id as its user name and
the base64 HMAC as its password; :meth:`scram_credential` is the credential that password derives, and the
connection's principal becomes the token's owner.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode

from .scram import ScramCredential, credential_from_password

DAY_MS = 24 * 3600 * 1000
RENEW_INTERVAL_MS, MAX_LIFETIME_MS = DAY_MS, 7 * DAY_MS       # Kafka's defaults


@dataclass
class Token:
    token_id: str
    hmac: bytes
    owner: str                      # "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int
    credentials: dict[str, ScramCredential] = field(default_factory=dict, repr=False)

    @property
    def password(self) -> str:
        """What a client authenticating with this token sends as its SCRAM password."""
        return base64.b64encode(self.hmac).decode()

    def may_renew(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers


class DelegationTokens:
    def __init__(self, secret: bytes | None = None, renew_interval_ms: int = RENEW_INTERVAL_MS,
                 max_lifetime_ms: int = MAX_LIFETIME_MS) -> None:
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        self.renew_interval_ms, self.max_lifetime_ms = renew_interval_ms, max_lifetime_ms
        self._tokens: dict[str, Token] = {}

    def create(self, owner: str, requester: str, renewers, max_lifetime_ms: int, now_ms: int) -> Token:
        lifetime = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(max_lifetime_ms, self.max_lifetime_ms)
        token_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        mac = hmac.new(self.secret, token_id.encode(), hashlib.sha512).digest()
        max_ms = now_ms + lifetime
        token = Token(token_id, mac, owner, requester, tuple(renewers), now_ms,
                      min(now_ms + self.renew_interval_ms, max_ms), max_ms)
        self._tokens[token_id] = token
        return token

    def find(self, mac: bytes) -> Token | None:
        return next((t for t in self._tokens.values() if hmac.compare_digest(t.hmac, bytes(mac))), None)

    def renew(self, mac: bytes, principal: str, period_ms: int, now_ms: int) -> tuple[int, int]:
        """(error code, new expiry timestamp)."""
        token, code = self._owned(mac, principal, now_ms)
        if token is None:
            return code, -1
        period = self.renew_interval_ms if period_ms < 0 else period_ms
        token.expiry_ms = min(token.max_ms, now_ms + period)
        return ErrorCode.NONE, token.expiry_ms

    def expire(self, mac: bytes, principal: str, period_ms: int, now_ms: int) -> tuple[int, int]:
        """(error code, new expiry timestamp); a negative period removes the token now."""
        token, code = self._owned(mac, principal, now_ms)
        if token is None:
            return code, -1
        if period_ms < 0:
            del self._tokens[token.token_id]
            return ErrorCode.NONE, now_ms
        token.expiry_ms = min(token.max_ms, now_ms + period_ms)
        return ErrorCode.NONE, token.expiry_ms

    def tokens(self, now_ms: int) -> list[Token]:
        """The live tokens, oldest first."""
        live = (t for t in self._tokens.values() if t.expiry_ms >= now_ms)
        return sorted(live, key=lambda t: (t.issue_ms, t.token_id))

    def purge(self, now_ms: int) -> None:
        """Forget the tokens past their expiry (Kafka's periodic expiry check)."""
        for token_id in [i for i, t in self._tokens.items() if t.expiry_ms < now_ms]:
            del self._tokens[token_id]

    def scram_credential(self, token_id: str, mechanism: str, now_ms: int) -> tuple[ScramCredential, str] | None:
        """(the SCRAM credential of a live token, its owner) for authentication with ``tokenauth=true``."""
        token = self._tokens.get(token_id)
        if token is None or token.expiry_ms < now_ms:
            return None
        if mechanism not in token.credentials:
            token.credentials[mechanism] = credential_from_password(mechanism, token.password)
        return token.credentials[mechanism], token.owner

    def _owned(self, mac: bytes, principal: str, now_ms: int) -> tuple[Token | None, int]:
        token = self.find(mac)
        if token is None:
            return None, ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        if not token.may_renew(principal):
            return None, ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        if token.expiry_ms < now_ms:
            return None, ErrorCode.DELEGATION_TOKEN_EXPIRED
        return token, ErrorCode.NONE


def request_problem(session) -> int:
    """Kafka's rule for every delegation-token API: only connections authenticated by SASL, and not with a
    token, may create, renew, expire or describe tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED otherwise)."""
    if session is None or not session.over_sasl or session.token_authenticated:
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    return ErrorCode.NONE


def principal_fields(principal: str, prefix: str = "") -> dict:
    """"User:alice" as the (principal_type, principal_name) pair the token APIs carry."""
    kind, _, name = principal.partition(":")
    return {f"{prefix}principal_type": kind, f"{prefix}principal_name": name}
