"""DescribeGroups (15), v0-v6: each group's state, protocol and members.

A group this broker does not know is "Dead" with no error before v6 and ErrorCode.GROUP_ID_NOT_FOUND from v6 (as
Kafka answers); v3+ may ask for the authorized-operations bit field (from the authorizer). A group the
principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.authorizer import OMITTED_OPERATIONS as NOT_PROVIDED
from .base import Handler


def handle(ctx, body: dict) -> dict:
    groups = ctx.state.groups
    out = []
    for group_id in body.get("groups") or ():
        if not ctx.allowed("DESCRIBE", "GROUP", group_id):
            out.append({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": None, "group_id": group_id,
                        "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
                        "authorized_operations": NOT_PROVIDED})
            continue
        view = groups.describe(group_id)
        missing = view["group_state"] == "Dead" and ctx.api_version >= 6
        out.append({"error_code": ErrorCode.GROUP_ID_NOT_FOUND if missing else ErrorCode.NONE,
                    "error_message": f"group {group_id} not found" if missing else None,
                    "authorized_operations": ctx.authorized_operations("GROUP", group_id)
                    if body.get("include_authorized_operations") else NOT_PROVIDED, **view})
    return {"throttle_time_ms": 0, "groups": out}


HANDLER = Handler(ApiKey.DESCRIBE_GROUPS, 0, 6, handle)
