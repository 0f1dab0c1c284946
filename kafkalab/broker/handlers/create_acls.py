"""CreateAcls (30), v0-v3: add ACL bindings. Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for
every creation otherwise); an invalid binding is INVALID_REQUEST with Kafka's reason."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .acls import acl_binding
from .base import Handler


def _create(ctx, item: dict) -> dict:
    problem = ctx.state.authorizer.add(acl_binding(item))
    if problem:
        return {"error_code": ErrorCode.INVALID_REQUEST, "error_message": problem}
    return {"error_code": ErrorCode.NONE, "error_message": None}


def handle(ctx, body: dict) -> dict:
    creations = body.get("creations") or []
    if not ctx.allowed("ALTER", "CLUSTER"):
        denied = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed."}
        return {"throttle_time_ms": 0, "results": [dict(denied) for _ in creations]}
    return {"throttle_time_ms": 0, "results": [_create(ctx, item) for item in creations]}


HANDLER = Handler(ApiKey.CREATE_ACLS, 0, 3, handle)
