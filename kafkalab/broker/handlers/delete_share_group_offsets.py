"""DeleteShareGroupOffsets (92), v0 (KIP-932): forget a share group's state for whole topics, so the next
fetch starts again from the log start. Only while the group has no members (NON_EMPTY_GROUP)."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..share.groups import offsets_request
from .base import Handler


def handle(ctx, body: dict) -> dict:
    group, answer = offsets_request(ctx.state.share_groups, body)
    if answer["error_code"]:
        return answer
    for t in body.get("topics", ()):
        name = t.get("topic_name")
        topic = ctx.state.store.topic(name)
        allowed = ctx.allowed("READ", "TOPIC", name or "")
        for key in [k for k in group.partitions if k[0] == name and allowed]:
            del group.partitions[key]
        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if not allowed else \
            ErrorCode.NONE if topic else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        answer["responses"].append({"topic_name": name, "topic_id": topic.topic_id if topic else None,
                                    "error_code": int(code),
                                    "error_message": None})
    return answer


HANDLER = Handler(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, handle)
