"""SCRAM (RFC 5802, RFC 7677 for SHA-256; SHA-512 as Kafka's KIP-84 adds it), the server side, sans-IO.

Owns: deriving a stored credential from a password or a salted password (what AlterUserScramCredentials sends),
and the two-round server exchange. Must not know: sockets, where credentials are kept (a ``lookup`` callable
gives them), or Kafka's framing.

Theory: the broker keeps only (salt, iterations, StoredKey, ServerKey). The client proves it knows the salted
password by sending ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage); the server recovers ClientKey,
checks H(ClientKey) == StoredKey, and proves itself with HMAC(ServerKey, AuthMessage). The nonce the client
chose must prefix the combined nonce, and the final message must echo the combined nonce and the GS2 header.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}    # ScramMechanism in the *UserScramCredentials APIs
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384                     # Kafka's bounds


class ScramError(Exception):
    """The exchange failed; the message is safe to send to the client."""


@dataclass(frozen=True)
class ScramCredential:
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _hmac(name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    name = HASHES[mechanism]
    client_key = _hmac(name, salted, b"Client Key")
    return ScramCredential(mechanism, salt, iterations, hashlib.new(name, client_key).digest(),
                           _hmac(name, salted, b"Server Key"))


def credential_from_password(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(16)
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations)


def password_matches(credential: ScramCredential, password: str) -> bool:
    """SASL/PLAIN checked against a SCRAM credential, so no password is ever kept."""
    other = credential_from_password(credential.mechanism, password, credential.iterations, credential.salt)
    return hmac.compare_digest(other.stored_key, credential.stored_key)


def _attributes(text: str, extensions: bool = False) -> dict[str, str]:
    """``k=v,...``; with ``extensions`` (client-first), longer alphanumeric keys are SCRAM extensions (RFC 5802
    7, Kafka's ``tokenauth=true``)."""
    out = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key or key in out or (len(key) != 1 and not (extensions and key.isalnum())):
            raise ScramError(f"Invalid SCRAM message attribute {part[:40]!r}")
        out[key] = value
    return out


def _saslname(text: str) -> str:
    """RFC 5802 5.1: ',' and '=' travel as =2C and =3D; any other '=' is malformed."""
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ScramError("Invalid username encoding")
    return text.replace("=2C", ",").replace("=3D", "=")


def _nonce_matches(echoed: str, nonce: str) -> bool:
    """Kafka's check (ScramSaslServer) is that the client-final nonce *ends with* the combined nonce, looser than
    RFC 5802's equality; librdkafka 2.0.0 (kcat in Debian/Ubuntu) relies on it, sending its own nonce twice."""
    return echoed.endswith(nonce)


class ScramServer:
    """One exchange: ``step(client_first)`` returns server-first, ``step(client_final)`` returns server-final and
    sets ``username``. Any failure raises :class:`ScramError` and the exchange is over.

    With the ``tokenauth=true`` extension the user name is a delegation token id: ``token_lookup(id, mechanism)``
    gives (its credential, its owner's principal) and ``token_owner`` is set once the proof checks."""

    def __init__(self, mechanism: str, lookup: Callable[[str, str], ScramCredential | None],
                 nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
                 token_lookup: Callable[[str, str], tuple[ScramCredential, str] | None] | None = None) -> None:
        self.mechanism, self.lookup, self.make_nonce, self.token_lookup = mechanism, lookup, nonce, token_lookup
        self.username: str | None = None
        self.token_owner: str | None = None
        self._owner: str | None = None
        self._round = 0
        self._credential: ScramCredential | None = None
        self._nonce = self._gs2 = self._first_bare = self._server_first = ""

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("SCRAM message is not UTF-8") from None
        self._round += 1
        if self._round == 1:
            return self._first(text).encode()
        if self._round == 2:
            return self._final(text).encode()
        raise ScramError("SCRAM exchange already finished")

    def _first(self, text: str) -> str:
        cb, _, rest = text.partition(",")
        authzid, sep, bare = rest.partition(",")
        if cb != "n" or not sep:
            raise ScramError("Channel binding is not supported" if cb in ("p", "y") or cb.startswith("p=")
                             else "Invalid SCRAM client-first message")
        attrs = _attributes(bare, extensions=True)
        if "n" not in attrs or "r" not in attrs or not attrs["r"] or "m" in attrs:
            raise ScramError("Invalid SCRAM client-first message")
        user = _saslname(attrs["n"])
        if authzid and authzid != f"a={attrs['n']}":
            raise ScramError("Authorization id must be empty or the username")
        if attrs.get("tokenauth", "").lower() == "true":
            found = self.token_lookup(user, self.mechanism) if self.token_lookup is not None else None
            self._credential, self._owner = found if found is not None else (None, None)
        else:
            self._credential = self.lookup(user, self.mechanism)
        if self._credential is None:
            raise ScramError("Authentication failed during authentication due to invalid credentials with "
                             f"SASL mechanism {self.mechanism}")
        self._pending_user = user
        self._gs2, self._first_bare = cb + "," + authzid + ",", bare
        self._nonce = attrs["r"] + self.make_nonce()
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first

    def _final(self, text: str) -> str:
        attrs = _attributes(text)
        without_proof, _, _ = text.rpartition(",p=")
        if set(attrs) - {"c", "r", "p"} or "p" not in attrs or not text.endswith(",p=" + attrs["p"]):
            raise ScramError("Invalid SCRAM client-final message")
        if attrs.get("c") != base64.b64encode(self._gs2.encode()).decode():
            raise ScramError("Invalid channel binding")
        if not _nonce_matches(attrs.get("r", ""), self._nonce):
            raise ScramError("Invalid SCRAM nonce")
        cred, name = self._credential, HASHES[self.mechanism]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(attrs["p"], validate=True)
        except ValueError:
            raise ScramError("Invalid SCRAM client proof") from None
        signature = _hmac(name, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("Invalid SCRAM client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.new(name, client_key).digest(), cred.stored_key):
            raise ScramError("Authentication failed during authentication due to invalid credentials with "
                             f"SASL mechanism {self.mechanism}")
        self.username, self.token_owner = self._pending_user, self._owner
        return "v=" + base64.b64encode(_hmac(name, cred.server_key, auth_message)).decode()
