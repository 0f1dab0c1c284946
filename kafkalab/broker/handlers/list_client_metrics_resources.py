"""ListClientMetricsResources (74), v0-v1: the config resources the broker knows (KIP-714; v1 is Kafka 4.1's
ListConfigResources, KIP-1142).

v0 lists the client-metrics resources (made with IncrementalAlterConfigs, resource type CLIENT_METRICS). v1
lists, for the asked ``resource_types`` (all when empty): topics (2), this cluster's brokers (4), client-metrics
resources (16) and groups (32, consumer and share groups); any other type is UNSUPPORTED_VERSION, as Kafka
answers. Needs DESCRIBE_CONFIGS on the cluster (the ACL table's gate).
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..configs import BROKER_RESOURCE, TOPIC_RESOURCE
from ..telemetry import CLIENT_METRICS_RESOURCE
from .base import Handler

GROUP_RESOURCE = 32
LISTED = (TOPIC_RESOURCE, BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE)


def handle(ctx, body: dict) -> dict:
    asked = list(body.get("resource_types") or ()) if ctx.api_version >= 1 else [CLIENT_METRICS_RESOURCE]
    if any(t not in LISTED for t in asked):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "config_resources": []}
    state = ctx.state
    names = {TOPIC_RESOURCE: lambda: sorted(state.store.topics),
             BROKER_RESOURCE: lambda: [str(n) for n in state.cluster.node_ids],
             CLIENT_METRICS_RESOURCE: lambda: sorted(state.telemetry.resources),
             GROUP_RESOURCE: lambda: sorted({*state.groups.groups, *state.share_groups.groups})}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "config_resources": [
        {"resource_name": name, "resource_type": kind} for kind in (asked or LISTED) for name in names[kind]()]}


HANDLER = Handler(ApiKey.LIST_CLIENT_METRICS_RESOURCES, 0, 1, handle)
