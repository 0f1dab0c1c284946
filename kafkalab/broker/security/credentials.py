"""The broker's users: SCRAM credentials by user and mechanism (salted, never a password).

``set_password`` derives both SCRAM-SHA-256 and SCRAM-SHA-512 credentials (what ``Broker(users=...)`` and
``--user`` do); AlterUserScramCredentials upserts the salted password a client computed. SASL/PLAIN is checked
against the stored SCRAM credential, so PLAIN needs no password either.
"""
from __future__ import annotations

from .scram import (HASHES, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, credential_from_password,
                    credential_from_salted, password_matches)


class ScramUsers:
    def __init__(self, tokens=None) -> None:
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self.tokens = tokens        # security.tokens.DelegationTokens: SCRAM with tokenauth=true authenticates these

    def set_password(self, user: str, password: str, mechanisms=tuple(HASHES), iterations: int = MIN_ITERATIONS) -> None:
        for mechanism in mechanisms:
            self._users.setdefault(user, {})[mechanism] = credential_from_password(mechanism, password, iterations)

    def upsert(self, user: str, mechanism: str, salt: bytes, salted: bytes, iterations: int) -> str | None:
        """Store a client-salted credential; returns the problem, if any (Kafka's checks)."""
        if mechanism not in HASHES:
            return "Unknown SCRAM mechanism"
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            return f"Iterations {iterations} must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
        if not salt or not salted:
            return "Salt and salted password must not be empty"
        self._users.setdefault(user, {})[mechanism] = credential_from_salted(mechanism, salted, salt, iterations)
        return None

    def delete(self, user: str, mechanism: str) -> bool:
        held = self._users.get(user, {})
        if held.pop(mechanism, None) is None:
            return False
        if not held:
            del self._users[user]
        return True

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def mechanisms(self, user: str) -> dict[str, int]:
        """{mechanism: iterations} held for ``user`` (what DescribeUserScramCredentials shows)."""
        return {m: c.iterations for m, c in sorted(self._users.get(user, {}).items())}

    def names(self) -> list[str]:
        return sorted(self._users)

    def check_plain(self, user: str, password: str) -> bool:
        held = self._users.get(user)
        return bool(held) and password_matches(next(iter(held.values())), password)
