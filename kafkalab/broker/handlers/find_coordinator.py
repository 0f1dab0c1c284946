"""FindCoordinator (10), v0-v6: the first node coordinates every group and transactional id.

v0-v3 ask for one key; v4+ for a list (``coordinator_keys``, KIP-699) answered one entry each.
"""
from __future__ import annotations

from .base import Handler


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    host, port = next((h, p) for node, h, p in state.brokers(ctx.local_host, ctx.local_port) if node == state.node_id)
    if ctx.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [
            {"key": key, "node_id": state.node_id, "host": host, "port": port, "error_code": 0, "error_message": None}
            for key in body.get("coordinator_keys", ())]}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "node_id": state.node_id,
            "host": host, "port": port}


HANDLER = Handler(10, 0, 6, handle)
