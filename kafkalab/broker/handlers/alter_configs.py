"""AlterConfigs (33), v0-v2: replace a resource's whole set of dynamic configs (the legacy, non-incremental API).

Every config not named in the request goes back to its inherited value. Topics and brokers (node id, or "" for
the cluster default) as in DescribeConfigs. A resource named twice is INVALID_REQUEST; an unknown, read-only or
invalid config is INVALID_CONFIG and leaves the resource untouched; a null value is INVALID_REQUEST.
``validate_only`` checks without applying.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler
from .config_resources import Problem, alter_resources


def handle(ctx, body: dict) -> dict:
    return alter_resources(ctx, body, _replacement)


def _replacement(ctx, resource, r: dict) -> dict[str, str]:
    """AlterConfigs replaces a resource's whole set of dynamic configs with the ones given."""
    configs = {}
    for c in r.get("configs", ()):
        if c.get("value") is None:
            raise Problem(ErrorCode.INVALID_REQUEST, f"Null value not supported for {c['name']}.")
        configs[c["name"]] = c["value"]
    return configs


HANDLER = Handler(ApiKey.ALTER_CONFIGS, 0, 2, handle)
