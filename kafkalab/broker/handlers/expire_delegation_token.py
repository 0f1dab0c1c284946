"""ExpireDelegationToken (40), v0-v2: bring a token's expiry forward, by its owner or a renewer.

A negative ``expiry_time_period_ms`` ends the token at once (it no longer authenticates or shows in
DescribeDelegationToken); otherwise its expiry becomes now + the period, capped by its max timestamp. Errors as
for RenewDelegationToken.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey

from ..security.tokens import request_problem
from .base import Handler


def handle(ctx, body: dict) -> dict:
    code, expiry = request_problem(ctx.session), -1
    if not code:
        code, expiry = ctx.state.tokens.expire(body.get("hmac") or b"", ctx.principal,
                                               body.get("expiry_time_period_ms", -1), ctx.now_ms)
    return {"error_code": int(code), "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}


HANDLER = Handler(ApiKey.EXPIRE_DELEGATION_TOKEN, 0, 2, handle)
