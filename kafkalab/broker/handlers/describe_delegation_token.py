"""DescribeDelegationToken (41), v0-v3: the live tokens, filtered by owner, that the requester may see.

``owners`` null means every owner, an empty list none. A token is shown to its owner and renewers, and to
principals with DESCRIBE on its DELEGATION_TOKEN resource (the token id) or DESCRIBE_TOKENS on its owner's USER
resource (KIP-373), as Kafka does. v3 adds who requested each token.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.tokens import principal_fields, request_problem
from .base import Handler


def handle(ctx, body: dict) -> dict:
    code = request_problem(ctx.session)
    if code:
        return {"error_code": int(code), "tokens": [], "throttle_time_ms": 0}
    owners = body.get("owners")
    wanted = None if owners is None else {f"{o.get('principal_type')}:{o.get('principal_name')}" for o in owners}
    me = ctx.principal
    tokens = [t for t in ctx.state.tokens.tokens(ctx.now_ms) if (wanted is None or t.owner in wanted) and (
        t.may_renew(me) or ctx.allowed("DESCRIBE", "DELEGATION_TOKEN", t.token_id)
        or ctx.allowed("DESCRIBE_TOKENS", "USER", t.owner))]
    return {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "tokens": [
        {**principal_fields(t.owner), **principal_fields(t.requester, "token_requester_"),
         "issue_timestamp": t.issue_ms, "expiry_timestamp": t.expiry_ms, "max_timestamp": t.max_ms,
         "token_id": t.token_id, "hmac": t.hmac, "renewers": [principal_fields(r) for r in t.renewers]}
        for t in tokens]}


HANDLER = Handler(ApiKey.DESCRIBE_DELEGATION_TOKEN, 0, 3, handle)
