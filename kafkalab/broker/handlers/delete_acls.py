"""DeleteAcls (31), v0-v3: remove the bindings each filter matches and list them. Needs ALTER on the cluster."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .acls import acl_fields, acl_filter
from .base import Handler


def _delete(ctx, item: dict) -> dict:
    gone = ctx.state.authorizer.delete(acl_filter(item))
    return {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": [
        {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": a.resource_type,
         "resource_name": a.resource_name, "pattern_type": a.pattern_type, **acl_fields(a)} for a in gone]}


def handle(ctx, body: dict) -> dict:
    filters = body.get("filters") or []
    if not ctx.allowed("ALTER", "CLUSTER"):
        return {"throttle_time_ms": 0, "filter_results": [
            {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed.",
             "matching_acls": []} for _ in filters]}
    return {"throttle_time_ms": 0, "filter_results": [_delete(ctx, item) for item in filters]}


HANDLER = Handler(ApiKey.DELETE_ACLS, 0, 3, handle)
