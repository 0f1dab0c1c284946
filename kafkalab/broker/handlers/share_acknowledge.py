"""ShareAcknowledge (79), v0-v2 (KIP-932): accept, release or reject records a member acquired.

Each acknowledgement batch covers first..last offset with one type for all or one per offset (0 gap,
1 accept, 2 release, 3 reject); see :mod:`.share_fetch` for the same batches piggybacked on ShareFetch.
The member must have a share session (SHARE_SESSION_NOT_FOUND; UNKNOWN_MEMBER_ID for a stranger), which may
outlive its group membership; epoch -1 closes the session after applying the batches.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..share.groups import LOCK_MS
from .base import Handler
from .share_fetch import acknowledge

CLOSE = -1


def handle(ctx, body: dict) -> dict:
    group = ctx.state.share_groups.group(body.get("group_id"))
    member = body.get("member_id")
    answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
              "acquisition_lock_timeout_ms": LOCK_MS, "responses": [], "node_endpoints": []}
    if group is None or not group.knows(member):
        return {**answer, "error_code": ErrorCode.UNKNOWN_MEMBER_ID}
    if member not in group.sessions:
        return {**answer, "error_code": ErrorCode.SHARE_SESSION_NOT_FOUND}
    codes = acknowledge(ctx, group, member, body.get("topics", ()))
    if body.get("share_session_epoch") == CLOSE:
        group.close_session(member)
    by_topic: dict = {}
    for (topic_id, index), code in codes.items():
        by_topic.setdefault(topic_id, []).append({"partition_index": index, "error_code": int(code),
                                                  "error_message": None,
                                                  "current_leader": {"leader_id": -1, "leader_epoch": -1}})
    answer["responses"] = [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]
    return answer


HANDLER = Handler(ApiKey.SHARE_ACKNOWLEDGE, 0, 2, handle)
