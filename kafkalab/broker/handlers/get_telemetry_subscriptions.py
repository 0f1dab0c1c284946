"""GetTelemetrySubscriptions (71), v0 (KIP-714): the metrics this client is asked to push, and how often.

The subscription comes from the client-metrics config resources (IncrementalAlterConfigs on resource type
CLIENT_METRICS; see telemetry.py) whose ``match`` selects this client by instance id, client id or source
address: no resource, no metrics (the client then pushes nothing). A client without an instance id gets one.
Pushes arrive uncompressed (no compression types are offered) and may be up to 1 MiB.
"""
from __future__ import annotations

import uuid

from kafkalab.protocol import ApiKey, ErrorCode

from ..telemetry import MAX_BYTES
from .base import Handler


def client_selectors(ctx, instance: uuid.UUID) -> dict[str, str]:
    """The values a client-metrics ``match`` selects on, for this request's client."""
    host, _, port = ctx.client_address.rpartition(":")
    return {"client_instance_id": str(instance), "client_id": ctx.client_id or "", "client_source_address": host,
            "client_source_port": port}


def handle(ctx, body: dict) -> dict:
    instance = body.get("client_instance_id")
    if instance is None or instance.int == 0:
        instance = uuid.uuid4()
    subscription = ctx.state.telemetry.subscription(client_selectors(ctx, instance))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "client_instance_id": instance,
            "subscription_id": subscription.subscription_id, "accepted_compression_types": [],
            "push_interval_ms": subscription.interval_ms, "telemetry_max_bytes": MAX_BYTES,
            "delta_temporality": True, "requested_metrics": subscription.metrics}


HANDLER = Handler(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, handle)
