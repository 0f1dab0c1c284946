"""One connection's SASL state, sans-IO: handshake, authentication exchange, principal.

Owns: which APIs a connection may send before it is authenticated (ApiVersions, SaslHandshake,
SaslAuthenticate), the mechanism chosen by SaslHandshake, the exchange (PLAIN in one round, SCRAM in two), and
the principal once authenticated (``User:alice``; ``User:ANONYMOUS`` on a listener without SASL).
Must not know: frames, sockets, the codec. The dispatcher asks :meth:`admits` and feeds KIP-43's unframed tokens
to :meth:`authenticate` after a SaslHandshake v0; the SaslHandshake/SaslAuthenticate handlers call the rest.

Kafka's rules kept here: one handshake per connection (a second is ILLEGAL_SASL_STATE); a failed exchange
ends the connection (``failure`` says why, the adapter closes after sending the error).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .oauthbearer import OAuthBearerExchange
from .scram import HASHES, ScramError, ScramServer

MECHANISMS = ("PLAIN", *HASHES)
ANONYMOUS = "User:ANONYMOUS"
PRE_AUTHENTICATION = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


class SaslFailure(Exception):
    """Authentication failed; ``error_code`` and the message go to the client, then the connection closes."""

    def __init__(self, message: str, error_code: int = ErrorCode.SASL_AUTHENTICATION_FAILED) -> None:
        super().__init__(message)
        self.error_code = error_code


class PlainExchange:
    """RFC 4616: one message ``authzid NUL user NUL password``."""

    def __init__(self, users) -> None:
        self.users, self.username = users, None

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise ScramError("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise ScramError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user or (authzid and authzid != user):
            raise ScramError("Invalid SASL/PLAIN response: bad username or authorization id")
        if not self.users.check_plain(user, password):
            raise ScramError("Authentication failed: Invalid username or password")
        self.username = user
        return b""


class SaslSession:
    def __init__(self, users, required: bool = True, mechanisms=MECHANISMS, host: str = "*", clock=None) -> None:
        self.users, self.required, self.enabled, self.host = users, required, tuple(mechanisms), host
        self.clock = clock             # wall-clock seconds (OAUTHBEARER's token expiry); None: not checked
        self.principal: str | None = None if required else ANONYMOUS
        self.token_authenticated = False   # authenticated with a delegation token (which cannot ask for tokens)
        self.mechanism: str | None = None
        self.unframed = False          # KIP-43: after SaslHandshake v0, tokens travel without a request header
        self.failure: str | None = None
        self.mute_ms = 0               # KIP-219: set by a throttled answer, the adapter mutes the channel this long
        self._exchange = None

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def admits(self, api_key: int) -> bool:
        return self.authenticated or api_key in PRE_AUTHENTICATION

    def handshake(self, mechanism: str, api_version: int) -> int:
        """The error code for SaslHandshake; on success the exchange for ``mechanism`` is ready."""
        if not self.required or self.mechanism is not None or self.authenticated:
            self.failure = "SaslHandshake out of order"
            return ErrorCode.ILLEGAL_SASL_STATE
        if mechanism not in self.enabled:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        self._exchange = (PlainExchange(self.users) if mechanism == "PLAIN" else
                          OAuthBearerExchange(self.clock) if mechanism == "OAUTHBEARER" else
                          ScramServer(mechanism, self.users.lookup, token_lookup=self._token_credential))
        self.unframed = api_version == 0
        return ErrorCode.NONE

    @property
    def over_sasl(self) -> bool:
        """Authenticated by a SASL exchange (Kafka issues delegation tokens only to these, not to PLAINTEXT/SSL)."""
        return self.mechanism is not None and self.authenticated

    def _token_credential(self, token_id: str, mechanism: str):
        tokens = getattr(self.users, "tokens", None)
        if tokens is None:
            return None
        now_ms = int(self.clock() * 1000) if self.clock is not None else 0
        return tokens.scram_credential(token_id, mechanism, now_ms)

    def authenticate(self, token: bytes) -> bytes:
        """The server's token for this client token; raises :class:`SaslFailure` (and records ``failure``)."""
        if self._exchange is None or self.authenticated:
            self.failure = "SaslAuthenticate out of order"
            raise SaslFailure("Unexpected SaslAuthenticate: no handshake, or already authenticated",
                              ErrorCode.ILLEGAL_SASL_STATE)
        try:
            reply = self._exchange.step(bytes(token))
        except ScramError as exc:
            self.failure = f"{self.mechanism} authentication failed: {exc}"
            raise SaslFailure(str(exc)) from None
        if self._exchange.username is not None:
            owner = getattr(self._exchange, "token_owner", None)
            self.principal = owner or f"User:{self._exchange.username}"
            self.token_authenticated = owner is not None
            self.unframed = False
        return reply
