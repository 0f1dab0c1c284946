"""DescribeConfigs (32), v0-v4: topic and broker configs with their values and where each value comes from.

Resources: a topic (UNKNOWN_TOPIC_OR_PARTITION if missing, INVALID_TOPIC_EXCEPTION for an illegal name); a
broker by node id (every broker config, read_only for static ones); "" for the cluster-wide dynamic defaults
(only those set). Other resource types get INVALID_REQUEST. ``configuration_keys`` null or empty means all;
unknown keys are left out. Versions: v0 reports ``is_default``; v1+ ``config_source`` and, when
``include_synonyms``, the synonyms in precedence order (topic override, dynamic broker, dynamic default,
static, default); v3+ ``config_type`` and, when ``include_documentation``, a description.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey

from .base import Handler
from .config_resources import Problem, describe_item, entries, resolve


def handle(ctx, body: dict) -> dict:
    synonyms = bool(body.get("include_synonyms", False))
    documentation = bool(body.get("include_documentation", False))
    return {"throttle_time_ms": 0,
            "results": [_describe(ctx, r, synonyms, documentation) for r in body.get("resources", ())]}


def _describe(ctx, r: dict, synonyms: bool, documentation: bool) -> dict:
    answer = {"resource_type": r["resource_type"], "resource_name": r["resource_name"], "error_code": 0,
              "error_message": None, "configs": []}
    try:
        resource = resolve(ctx, r["resource_type"], r["resource_name"])
    except Problem as p:
        return {**answer, "error_code": p.error_code, "error_message": p.message}
    wanted = set(r.get("configuration_keys") or ())
    answer["configs"] = [describe_item(e, read_only, synonyms, documentation) for e, read_only in entries(ctx, resource)
                         if not wanted or e.name in wanted]
    return answer


HANDLER = Handler(ApiKey.DESCRIBE_CONFIGS, 0, 4, handle)
