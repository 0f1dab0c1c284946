"""The broker's users: SCRAM credentials by user and mechanism (salted, never a password).

``set_password`` derives both SCRAM-SHA-256 and SCRAM-SHA-512 credentials (what ``Broker(users=...)`` and
``--user`` do); AlterUserScramCredentials upserts the salted password a client computed. SASL/PLAIN is checked
against the stored SCRAM credential, so PLAIN needs no password either. Every change is told to ``listener``
(with a data directory, :class:`~.metadata_log.SecurityLog`, which makes it survive a restart).
"""
from __future__ import annotations

from .scram import (HASHES, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, credential_from_password,
                    credential_from_salted, password_matches)


class ScramUsers:
    def __init__(self, tokens=None) -> None:
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self.listener = None
        self.tokens = tokens        # security.tokens.DelegationTokens: SCRAM with tokenauth=true authenticates these

    def set_password(self, user: str, password: str, mechanisms=tuple(HASHES), iterations: int = MIN_ITERATIONS) -> None:
        """Derive credentials for ``password``; one the user already holds for it is kept (so a ``--user``
        given again at every start of a broker with a data directory writes nothing new)."""
        for mechanism in mechanisms:
            held = self.lookup(user, mechanism)
            if held is None or held.iterations != iterations or not password_matches(held, password):
                self.put(user, credential_from_password(mechanism, password, iterations))

    def put(self, user: str, credential: ScramCredential) -> None:
        """Hold ``credential`` for ``user`` (replacing one of the same mechanism)."""
        self._users.setdefault(user, {})[credential.mechanism] = credential
        if self.listener is not None:
            self.listener.credential_changed(user, credential.mechanism, credential)

    def upsert(self, user: str, mechanism: str, salt: bytes, salted: bytes, iterations: int) -> str | None:
        """Store a client-salted credential; returns the problem, if any (Kafka's checks)."""
        if mechanism not in HASHES:
            return "Unknown SCRAM mechanism"
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            return f"Iterations {iterations} must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
        if not salt or not salted:
            return "Salt and salted password must not be empty"
        self.put(user, credential_from_salted(mechanism, salted, salt, iterations))
        return None

    def delete(self, user: str, mechanism: str) -> bool:
        held = self._users.get(user, {})
        if held.pop(mechanism, None) is None:
            return False
        if not held:
            del self._users[user]
        if self.listener is not None:
            self.listener.credential_changed(user, mechanism, None)
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
