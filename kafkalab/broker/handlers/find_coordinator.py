"""FindCoordinator (10), v0-v6: this broker coordinates every group and transactional id.

v0-v3 ask for one key; v4+ for a list (``coordinator_keys``, KIP-699) answered one entry each.
"""
from __future__ import annotations

from .base import Handler


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    host = ctx.local_host or state.advertised_host
    port = ctx.local_port or state.advertised_port
    if ctx.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [
            {"key": key, "node_id": state.node_id, "host": host, "port": port, "error_code": 0, "error_message": None}
            for key in body.get("coordinator_keys", ())]}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "node_id": state.node_id,
            "host": host, "port": port}


HANDLER = Handler(10, 0, 6, handle)
