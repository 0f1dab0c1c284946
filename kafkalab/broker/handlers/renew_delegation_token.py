"""RenewDelegationToken (39), v0-v2: push a token's expiry out, by its owner or a renewer.

The new expiry is now + ``renew_period_ms`` (the broker's renew interval when negative), never past the token's
max timestamp. Unknown HMAC: DELEGATION_TOKEN_NOT_FOUND; another principal: DELEGATION_TOKEN_OWNER_MISMATCH;
already expired: DELEGATION_TOKEN_EXPIRED (see security/tokens.py).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey

from ..security.tokens import request_problem
from .base import Handler


def handle(ctx, body: dict) -> dict:
    code, expiry = request_problem(ctx.session), -1
    if not code:
        code, expiry = ctx.state.tokens.renew(body.get("hmac") or b"", ctx.principal, body.get("renew_period_ms", -1),
                                              ctx.now_ms)
    return {"error_code": int(code), "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}


HANDLER = Handler(ApiKey.RENEW_DELEGATION_TOKEN, 0, 2, handle)
