"""ListGroups (16), v0-v5: every group with its protocol type; v4+ its state and a states filter
(KIP-518, case-insensitive), v5+ its type ("classic" or "consumer") and a types filter (KIP-848)."""
from __future__ import annotations

from kafkalab.protocol import ApiKey

from .base import Handler


def handle(ctx, body: dict) -> dict:
    groups = ctx.state.groups
    states = {s.casefold() for s in body.get("states_filter") or ()}
    types = {t.casefold() for t in body.get("types_filter") or ()}
    out = []
    for group_id in groups.known():
        if not ctx.allowed("DESCRIBE", "GROUP", group_id):      # Kafka lists only what the principal may see
            continue
        view = groups.describe(group_id)
        kind = groups.kind_of(group_id)
        if (states and view["group_state"].casefold() not in states) or (types and kind not in types):
            continue
        out.append({"group_id": group_id, "protocol_type": view["protocol_type"], "group_state": view["group_state"],
                    "group_type": kind})
    return {"throttle_time_ms": 0, "error_code": 0, "groups": out}


HANDLER = Handler(ApiKey.LIST_GROUPS, 0, 5, handle)
