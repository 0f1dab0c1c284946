"""AlterUserScramCredentials (51), v0 (KIP-554): upsert salted credentials, delete them.

The client salts: an upsertion carries (salt, iterations, salted password) and the broker keeps StoredKey and
ServerKey derived from it. Kafka's checks: an unknown mechanism is UNSUPPORTED_SASL_MECHANISM, iterations outside
4096..16384 UNACCEPTABLE_CREDENTIAL, an empty user name UNACCEPTABLE_CREDENTIAL, deleting what is not there
RESOURCE_NOT_FOUND, and the same (user, mechanism) twice in one request DUPLICATE_RESOURCE. One result per user. Needs ALTER on the cluster.
"""
from __future__ import annotations

from collections import Counter

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.scram import MECHANISM_CODES
from .base import Handler

_BY_CODE = {code: name for name, code in MECHANISM_CODES.items()}


def _error(user: str, code: int, message: str) -> dict:
    return {"user": user, "error_code": code, "error_message": message}


def _apply(users, change: dict, upsert: bool) -> tuple[int, str | None]:
    mechanism = _BY_CODE.get(change["mechanism"])
    if not change["name"]:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {change['mechanism']}"
    if not upsert:
        if users.delete(change["name"], mechanism):
            return ErrorCode.NONE, None
        return ErrorCode.RESOURCE_NOT_FOUND, f"Attempt to delete a user credential that does not exist: {mechanism}"
    problem = users.upsert(change["name"], mechanism, change["salt"], change["salted_password"], change["iterations"])
    return (ErrorCode.UNACCEPTABLE_CREDENTIAL, problem) if problem else (ErrorCode.NONE, None)


def handle(ctx, body: dict) -> dict:
    changes = [(c, False) for c in body.get("deletions") or []] + [(c, True) for c in body.get("upsertions") or []]
    counts = Counter((c["name"], c["mechanism"]) for c, _ in changes)
    duplicated = {name for (name, _), n in counts.items() if n > 1}
    results: dict[str, dict] = {}
    for change, upsert in changes:
        name = change["name"]
        if name in duplicated:
            results[name] = _error(name, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice "
                                   "in the same request")
            continue
        if not ctx.allowed("ALTER", "CLUSTER"):
            results[name] = _error(name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
            continue
        code, message = _apply(ctx.state.users, change, upsert)
        if not results.get(name, {}).get("error_code"):     # one answer per user: its first failure stands
            results[name] = _error(name, code, message)
    return {"throttle_time_ms": 0, "results": list(results.values())}


HANDLER = Handler(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, handle)
