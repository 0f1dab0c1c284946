"""GetTelemetrySubscriptions (71), v0 (KIP-714): "no subscription" - an empty metric list, so clients push
nothing. A client without an instance id gets one."""
from __future__ import annotations

import uuid

from .base import Handler

PUSH_INTERVAL_MS = 300_000


def handle(ctx, body: dict) -> dict:
    instance = body.get("client_instance_id")
    if instance is None or instance.int == 0:
        instance = uuid.uuid4()
    return {"throttle_time_ms": 0, "error_code": 0, "client_instance_id": instance, "subscription_id": 0,
            "accepted_compression_types": [], "push_interval_ms": PUSH_INTERVAL_MS, "telemetry_max_bytes": 0,
            "delta_temporality": True, "requested_metrics": []}


HANDLER = Handler(71, 0, 0, handle)
