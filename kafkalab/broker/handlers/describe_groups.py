"""DescribeGroups (15), v0-v6: each group's state, protocol and members.

A group this broker does not know is "Dead" with no error before v6 and ErrorCode.GROUP_ID_NOT_FOUND from v6 (as
Kafka answers); v3+ asks for authorized operations (none are computed: the "not provided" value).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

NOT_PROVIDED = -2147483648


def handle(ctx, body: dict) -> dict:
    groups = ctx.state.groups
    out = []
    for group_id in body.get("groups") or ():
        view = groups.describe(group_id)
        missing = view["group_state"] == "Dead" and ctx.api_version >= 6
        out.append({"error_code": ErrorCode.GROUP_ID_NOT_FOUND if missing else ErrorCode.NONE,
                    "error_message": f"group {group_id} not found" if missing else None,
                    "authorized_operations": NOT_PROVIDED, **view})
    return {"throttle_time_ms": 0, "groups": out}


HANDLER = Handler(ApiKey.DESCRIBE_GROUPS, 0, 6, handle)
