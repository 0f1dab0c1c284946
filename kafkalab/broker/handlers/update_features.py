"""UpdateFeatures (57), v0-v2 (KIP-584): finalize feature levels; ApiVersions v3+ reports them.

Each update names a feature the broker supports (else INVALID_UPDATE_VERSION) and a level within its supported
range, or 0 to unset it. Lowering a level needs a downgrade: ``allow_downgrade`` in v0, an upgrade type of
SAFE_DOWNGRADE (2) or UNSAFE_DOWNGRADE (3) from v1. ``validate_only`` (v1+) checks without applying. v0-v1
answer per feature; v2 only at the top level (the first failure).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..controls.cluster import SUPPORTED_FEATURES
from .base import Handler

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def handle(ctx, body: dict) -> dict:
    cluster = ctx.state.cluster
    results = []
    for update in body.get("feature_updates", ()):
        name, level = update.get("feature"), update.get("max_version_level")
        problem = _problem(ctx, cluster, name, level, update)
        if problem is None and not body.get("validate_only"):
            cluster.finalize(name, level)
        results.append({"feature": name, "error_code": int(ErrorCode.INVALID_UPDATE_VERSION if problem else 0),
                        "error_message": problem})
    failed = next((r for r in results if r["error_code"]), None)
    answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "results": results}
    if ctx.api_version >= 2 and failed:
        answer.update(error_code=failed["error_code"], error_message=failed["error_message"])
    return answer


def _problem(ctx, cluster, name: str, level: int, update: dict) -> str | None:
    if name not in SUPPORTED_FEATURES:
        return f"Feature {name} is not supported by this broker."
    low, high = SUPPORTED_FEATURES[name]
    if level != 0 and not low <= level <= high:
        return f"Feature {name} level {level} is outside the supported range {low}-{high}."
    downgrade = update.get("allow_downgrade") if ctx.api_version == 0 else \
        update.get("upgrade_type", UPGRADE) in (SAFE_DOWNGRADE, UNSAFE_DOWNGRADE)
    if level < cluster.features.get(name, 0) and not downgrade:
        return f"Feature {name} would be downgraded to {level} without a downgrade type."
    return None


HANDLER = Handler(ApiKey.UPDATE_FEATURES, 0, 2, handle)
