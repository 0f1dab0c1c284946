"""DeleteGroups (42), v0-v2: remove empty groups and their committed offsets (tombstones in
``__consumer_offsets``); NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND for unknown ids."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler


def handle(ctx, body: dict) -> dict:
    groups = ctx.state.groups
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": groups.delete_group(ctx.now_ms, g) if ctx.allowed("DELETE", "GROUP", g)
         else ErrorCode.GROUP_AUTHORIZATION_FAILED} for g in body.get("groups_names") or ()]}


HANDLER = Handler(ApiKey.DELETE_GROUPS, 0, 2, handle)
