"""PushTelemetry (72), v0 (KIP-714): a client's metrics, kept per client instance (``broker.state.telemetry``).

A push under a subscription that has changed since the client fetched it is UNKNOWN_SUBSCRIPTION_ID (the client
asks GetTelemetrySubscriptions again); one over the size limit TELEMETRY_TOO_LARGE.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey

from .base import Handler
from .get_telemetry_subscriptions import client_selectors


def handle(ctx, body: dict) -> dict:
    instance = body.get("client_instance_id")
    code = ctx.state.telemetry.push(client_selectors(ctx, instance), instance, body.get("subscription_id", 0),
                                    body.get("compression_type", 0), body.get("metrics") or b"",
                                    bool(body.get("terminating")))
    return {"throttle_time_ms": 0, "error_code": int(code)}


HANDLER = Handler(ApiKey.PUSH_TELEMETRY, 0, 0, handle)
