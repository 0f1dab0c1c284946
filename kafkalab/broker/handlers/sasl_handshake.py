"""SaslHandshake (17), v0-v1: choose the mechanism of the connection's SASL exchange.

v1 (KIP-152): the exchange follows in SaslAuthenticate requests. v0: the tokens follow as bare size-prefixed
frames (KIP-43), which the dispatcher hands to the session. On a listener without SASL, or a second handshake,
Kafka answers ILLEGAL_SASL_STATE; an unknown mechanism is UNSUPPORTED_SASL_MECHANISM, with the enabled list.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    session = ctx.session
    if session is None or not session.required:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    return {"error_code": session.handshake(body["mechanism"], ctx.api_version), "mechanisms": list(session.enabled)}


HANDLER = Handler(ApiKey.SASL_HANDSHAKE, 0, 1, handle)
