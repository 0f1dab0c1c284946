"""CreateDelegationToken (38), v0-v3 (KIP-48, KIP-373): issue a token to the requester or, v3, to another owner.

Only SASL-authenticated connections not themselves using a token may ask (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
Owner and renewers must be ``User`` principals (INVALID_PRINCIPAL_TYPE). Issuing a token for someone else needs
CREATE_TOKENS on that owner's USER resource (DELEGATION_TOKEN_AUTHORIZATION_FAILED). The answer carries the
token id and HMAC: the credentials a client then authenticates with (SCRAM, ``tokenauth=true``).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.tokens import principal_fields, request_problem
from .base import Handler

USER = "User"


def handle(ctx, body: dict) -> dict:
    requester = ctx.principal
    owner = requester
    if body.get("owner_principal_name"):
        owner = f"{body.get('owner_principal_type') or USER}:{body['owner_principal_name']}"
    renewers = [(r.get("principal_type"), r.get("principal_name")) for r in body.get("renewers") or ()]
    code = request_problem(ctx.session)
    if not code and (owner.partition(":")[0] != USER or any(kind != USER for kind, _ in renewers)):
        code = ErrorCode.INVALID_PRINCIPAL_TYPE
    if not code and owner != requester and not ctx.allowed("CREATE_TOKENS", "USER", owner):
        code = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if code:
        return {"error_code": int(code), **principal_fields(owner), **principal_fields(requester, "token_requester_"),
                "issue_timestamp_ms": -1, "expiry_timestamp_ms": -1, "max_timestamp_ms": -1, "token_id": "",
                "hmac": b"", "throttle_time_ms": 0}
    token = ctx.state.tokens.create(owner, requester, [f"{k}:{n}" for k, n in renewers],
                                    body.get("max_lifetime_ms", -1), ctx.now_ms)
    return {"error_code": ErrorCode.NONE, **principal_fields(owner), **principal_fields(requester, "token_requester_"),
            "issue_timestamp_ms": token.issue_ms, "expiry_timestamp_ms": token.expiry_ms,
            "max_timestamp_ms": token.max_ms, "token_id": token.token_id, "hmac": token.hmac, "throttle_time_ms": 0}


HANDLER = Handler(ApiKey.CREATE_DELEGATION_TOKEN, 0, 3, handle)
