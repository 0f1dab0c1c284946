"""DescribeAcls (29), v0-v3: the bindings a filter matches, grouped by resource. Needs DESCRIBE on the cluster."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .acls import acl_fields, acl_filter
from .base import Handler


def handle(ctx, body: dict) -> dict:
    resources: dict[tuple, list] = {}
    for acl in ctx.state.authorizer.describe(acl_filter(body)):
        resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl_fields(acl))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
                          for (t, n, p), acls in resources.items()]}


HANDLER = Handler(ApiKey.DESCRIBE_ACLS, 0, 3, handle)
