"""AlterConfigs (33), v0-v2: replace a resource's whole set of dynamic configs (the legacy, non-incremental API).

Every config not named in the request goes back to its inherited value. Topics and brokers (node id, or "" for
the cluster default) as in DescribeConfigs. A resource named twice is INVALID_REQUEST; an unknown, read-only or
invalid config is INVALID_CONFIG and leaves the resource untouched; a null value is INVALID_REQUEST.
``validate_only`` checks without applying.
"""
from __future__ import annotations

from collections import Counter

from .base import Handler
from .config_resources import INVALID_REQUEST, Problem, apply, check, resolve


def handle(ctx, body: dict) -> dict:
    resources = body.get("resources", ())
    seen = Counter((r["resource_type"], r["resource_name"]) for r in resources)
    validate_only = body.get("validate_only", False)
    return {"throttle_time_ms": 0,
            "responses": [_alter(ctx, r, seen[(r["resource_type"], r["resource_name"])] > 1, validate_only)
                          for r in resources]}


def _alter(ctx, r: dict, duplicated: bool, validate_only: bool) -> dict:
    answer = {"resource_type": r["resource_type"], "resource_name": r["resource_name"], "error_code": 0,
              "error_message": None}
    try:
        if duplicated:
            raise Problem(INVALID_REQUEST, "A resource may appear only once in a request.")
        resource = resolve(ctx, r["resource_type"], r["resource_name"])
        configs = {}
        for c in r.get("configs", ()):
            if c.get("value") is None:
                raise Problem(INVALID_REQUEST, f"Null value not supported for {c['name']}.")
            configs[c["name"]] = c["value"]
        check(resource, configs)
        if not validate_only:
            apply(ctx, resource, configs)
    except Problem as p:
        answer.update(error_code=p.error_code, error_message=p.message)
    return answer


HANDLER = Handler(33, 0, 2, handle)
