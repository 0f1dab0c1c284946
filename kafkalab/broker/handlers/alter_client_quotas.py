"""AlterClientQuotas (49), v0-v1 (KIP-546): set or remove quota values per entity (user and/or client-id, a
null name being the default entity). Needs ALTER_CONFIGS on the cluster."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def _alter(ctx, entry: dict, validate_only: bool) -> dict:
    entity = tuple((e["entity_type"], e.get("entity_name")) for e in entry.get("entity") or [])
    if not ctx.allowed("ALTER_CONFIGS", "CLUSTER"):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    else:
        code, message = ctx.state.quotas.alter(entity, entry.get("ops") or [], validate_only)
    return {"error_code": code, "error_message": message, "entity": entry.get("entity") or []}


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0,
            "entries": [_alter(ctx, e, body.get("validate_only", False)) for e in body.get("entries") or []]}


HANDLER = Handler(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, handle)
