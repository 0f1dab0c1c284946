"""ApiVersions (18), v0-v4: the version ranges of every registered handler.

The KIP-511 fallback (a request in a version the broker does not speak gets a v0 body with
UNSUPPORTED_VERSION and the ranges) happens in the dispatcher, before the body is decoded; see
``dispatch.api_versions_fallback``.
"""
from __future__ import annotations

from .base import Handler


def advertised(registry) -> list[dict]:
    return [{"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
            for _, h in sorted(registry.items())]


def handle(ctx, body: dict) -> dict:
    return {"error_code": 0, "api_keys": advertised(ctx.registry), "throttle_time_ms": 0}


HANDLER = Handler(18, 0, 4, handle)
