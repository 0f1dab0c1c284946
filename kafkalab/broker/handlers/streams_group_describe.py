"""StreamsGroupDescribe (89), v0 (KIP-1071): a streams group's state, epochs, topology and members with their
tasks. Needs DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); an unknown group is GROUP_ID_NOT_FOUND.
The target assignment is the current one (tasks move at once, see streams/groups.py)."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.authorizer import OMITTED_OPERATIONS
from .base import Handler

TOPOLOGY_FIELDS = ("subtopology_id", "source_topics", "repartition_sink_topics", "state_changelog_topics",
                   "repartition_source_topics")


def handle(ctx, body: dict) -> dict:
    return {"throttle_time_ms": 0, "groups": [_describe(ctx, g, body.get("include_authorized_operations"))
                                              for g in body.get("group_ids", ())]}


def _describe(ctx, group_id: str, operations: bool) -> dict:
    group = ctx.state.streams_groups.group(group_id)
    denied = not ctx.allowed("DESCRIBE", "GROUP", group_id)
    if group is None or denied:
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED if denied else ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": None if denied else f"Group {group_id} is not a streams group.",
                "group_id": group_id, "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1,
                "topology": None, "members": [], "authorized_operations": OMITTED_OPERATIONS}
    topology = None
    if group.topology is not None:
        topology = {"epoch": group.topology["epoch"], "subtopologies": [
            {k: s.get(k, []) for k in TOPOLOGY_FIELDS} for s in group.topology.get("subtopologies", ())]}
    return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id, "group_state": group.state,
            "group_epoch": group.epoch, "assignment_epoch": group.epoch, "topology": topology,
            "members": [_member(m) for m in sorted(group.members.values(), key=lambda m: m.member_id)],
            "authorized_operations": ctx.authorized_operations("GROUP", group_id) if operations else OMITTED_OPERATIONS}


def _member(m) -> dict:
    tasks = {"active_tasks": [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(m.active.items())],
             "standby_tasks": [], "warmup_tasks": []}
    return {"member_id": m.member_id, "member_epoch": m.epoch, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "client_id": m.client_id, "client_host": m.client_host, "topology_epoch": m.topology_epoch,
            "process_id": m.process_id or "", "user_endpoint": m.user_endpoint, "client_tags": m.client_tags or [],
            "task_offsets": [], "task_end_offsets": [], "assignment": tasks, "target_assignment": tasks,
            "is_classic": False}


HANDLER = Handler(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 0, handle)
