"""The handler registry: api_key -> :class:`Handler` (with the versions it implements).

One module per API. Adding an API to the broker means writing its module and adding it to ``MODULES``;
ApiVersions advertises exactly this table, clamped to the versions the codec knows.
"""
from __future__ import annotations

from kafkalab.protocol import api_spec

from . import (api_versions, create_topics, fetch, find_coordinator, get_telemetry_subscriptions, init_producer_id,
               list_offsets, metadata, offset_commit, offset_fetch, produce, push_telemetry)
from .base import Handler, RequestContext, Wait

MODULES = (produce, fetch, list_offsets, metadata, offset_commit, offset_fetch, find_coordinator, api_versions,
           create_topics, init_producer_id, get_telemetry_subscriptions, push_telemetry)


def build_registry(modules=MODULES) -> dict[int, Handler]:
    registry = {}
    for module in modules:
        h = module.HANDLER
        low, high = api_spec(h.api_key).request.versions
        registry[h.api_key] = Handler(h.api_key, max(h.min_version, low), min(h.max_version, high), h.handle)
    return registry


REGISTRY = build_registry()

__all__ = ["Handler", "RequestContext", "Wait", "REGISTRY", "MODULES", "build_registry"]
