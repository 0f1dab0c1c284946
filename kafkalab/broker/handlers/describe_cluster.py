"""DescribeCluster (60), v0-v2 (KIP-700): the cluster's nodes, its id and its controller (the KRaft quorum leader).

v1+ asks for an endpoint type: brokers (1) are served; asking a broker for controllers (2) is
MISMATCHED_ENDPOINT_TYPE, any other type UNSUPPORTED_ENDPOINT_TYPE. v2 may include fenced brokers (there are
none). ``include_cluster_authorized_operations`` reports what the authorizer allows this principal on the
cluster.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode

from ..security.authorizer import OMITTED_OPERATIONS as OMITTED
from .base import Handler

BROKERS, CONTROLLERS = 1, 2


def handle(ctx, body: dict) -> dict:
    state = ctx.state
    endpoint_type = body.get("endpoint_type", BROKERS)
    answer = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": endpoint_type,
              "cluster_id": state.cluster_id, "controller_id": state.cluster.controller, "brokers": [],
              "cluster_authorized_operations": OMITTED}
    if endpoint_type != BROKERS:
        code = (ErrorCode.MISMATCHED_ENDPOINT_TYPE if endpoint_type == CONTROLLERS
                else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)
        return {**answer, "error_code": code, "controller_id": -1,
                "error_message": f"This endpoint serves brokers (endpoint type 1), not type {endpoint_type}."}
    answer["brokers"] = [{"broker_id": node, "host": host, "port": port, "rack": None, "is_fenced": False}
                         for node, host, port in state.brokers(ctx.local_host, ctx.local_port)]
    if body.get("include_cluster_authorized_operations"):
        answer["cluster_authorized_operations"] = ctx.authorized_operations("CLUSTER")
    return answer


HANDLER = Handler(ApiKey.DESCRIBE_CLUSTER, 0, 2, handle)
