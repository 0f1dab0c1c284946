"""DescribeClientQuotas (48), v0-v1 (KIP-546): the quota entries matching the filter components (a name, the
default entity, or any); ``strict`` leaves out entries naming other entity types. Needs DESCRIBE_CONFIGS on the
cluster."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    found = ctx.state.quotas.describe(body.get("components") or [], body.get("strict", False))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "entries": [
        {"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
         "values": [{"key": key, "value": value} for key, value in sorted(values.items())]}
        for entity, values in found]}


HANDLER = Handler(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, handle)
