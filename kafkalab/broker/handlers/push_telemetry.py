"""PushTelemetry (72), v0 (KIP-714): accepted and dropped (there is no subscription to honour)."""
from __future__ import annotations

from .base import Handler


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0}


HANDLER = Handler(72, 0, 0, handle)
