"""SaslAuthenticate (36), v0-v2 (KIP-152): one round of the SASL exchange chosen by SaslHandshake v1.

A failure answers SASL_AUTHENTICATION_FAILED with Kafka's message and the connection is closed after the
answer (the session's ``failure``). v1+ carries ``session_lifetime_ms``: 0, sessions here do not expire.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security import SaslFailure
from .base import Handler


def handle(ctx, body: dict) -> dict:
    session = ctx.session
    if session is None or not session.required:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "error_message": "SASL is not enabled on this listener",
                "auth_bytes": b"", "session_lifetime_ms": 0}
    try:
        reply = session.authenticate(body["auth_bytes"])
    except SaslFailure as exc:
        return {"error_code": exc.error_code, "error_message": str(exc), "auth_bytes": b"", "session_lifetime_ms": 0}
    return {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": reply, "session_lifetime_ms": 0}


HANDLER = Handler(ApiKey.SASL_AUTHENTICATE, 0, 2, handle)
