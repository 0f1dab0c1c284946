"""DescribeUserScramCredentials (50), v0 (KIP-554): which SCRAM mechanisms and iteration counts each user has.

No users asked (null or empty list): every user. An unknown user is RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE, as in Kafka. Salts and keys never leave the broker. Needs DESCRIBE on the cluster.
"""
from __future__ import annotations

from collections import Counter

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.scram import MECHANISM_CODES
from .base import Handler


def _result(users, name: str, duplicated: bool) -> dict:
    held = users.mechanisms(name)
    if duplicated:
        return {"user": name, "error_code": ErrorCode.DUPLICATE_RESOURCE,
                "error_message": f"Cannot describe SCRAM credentials for the same user twice: {name}",
                "credential_infos": []}
    if not held:
        return {"user": name, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                "error_message": f"Attempt to describe a user credential that does not exist: {name}",
                "credential_infos": []}
    return {"user": name, "error_code": ErrorCode.NONE, "error_message": None,
            "credential_infos": [{"mechanism": MECHANISM_CODES[m], "iterations": i} for m, i in held.items()]}


def handle(ctx, body: dict) -> dict:
    users = ctx.state.users
    asked = [u["name"] for u in body.get("users") or []] or users.names()
    counts = Counter(asked)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "results": [_result(users, name, counts[name] > 1) for name in dict.fromkeys(asked)]}


HANDLER = Handler(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, handle)
