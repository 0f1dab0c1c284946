"""Config resources shared by DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and CreateTopics.

Owns: naming a resource (a topic; a broker by node id; "" for the cluster-wide broker default) with Kafka's
errors, validating a proposed set of dynamic configs, applying it, and turning resolved entries into
DescribeConfigs items. Not a handler module (it has no ``HANDLER``).
"""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from kafkalab.protocol import ErrorCode

from ..config import topic_name_problem
from ..configs import BROKER_CONFIGS, BROKER_RESOURCE, DEFAULT_CONFIG, TOPIC_CONFIGS, TOPIC_RESOURCE, Entry
from ..telemetry import CLIENT_METRICS_CONFIG_SOURCE, CLIENT_METRICS_RESOURCE, match_problem
from ..telemetry import CONFIGS as CLIENT_METRICS_CONFIGS


class Resource(NamedTuple):
    kind: str            # "topic", "broker" (this node), "cluster" (the dynamic default, resource name "") or
                         # "client-metrics" (a KIP-714 subscription)
    target: object       # the Topic, the dynamic-config scope ("1" or ""), or the client-metrics resource name


class Problem(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code, self.message = error_code, message


def resolve(ctx, resource_type: int, name: str, operation: str = "DESCRIBE_CONFIGS") -> Resource:
    """The resource, after the authorizer allowed ``operation`` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the
    topic, or on the cluster for broker resources."""
    if resource_type == TOPIC_RESOURCE and not ctx.allowed(operation, "TOPIC", name):
        raise Problem(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    if resource_type in (BROKER_RESOURCE, CLIENT_METRICS_RESOURCE) and not ctx.allowed(operation, "CLUSTER"):
        raise Problem(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    if resource_type == TOPIC_RESOURCE:
        problem = topic_name_problem(name)
        if problem:
            raise Problem(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        topic = ctx.state.store.topic(name)
        if topic is None:
            raise Problem(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        return Resource("topic", topic)
    if resource_type == BROKER_RESOURCE:
        if not name:
            return Resource("cluster", "")
        if not name.lstrip("-").isdigit():
            raise Problem(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, not {name!r}.")
        if int(name) != ctx.state.node_id:
            raise Problem(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.state.node_id} or an empty "
                                           f"string, but received {name}.")
        return Resource("broker", str(ctx.state.node_id))
    if resource_type == CLIENT_METRICS_RESOURCE:
        if not name:
            raise Problem(ErrorCode.INVALID_REQUEST, "A client-metrics resource needs a name.")
        return Resource("client-metrics", name)
    raise Problem(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}.")


def dynamic_configs(ctx, resource: Resource) -> dict[str, str]:
    if resource.kind == "topic":
        return dict(resource.target.configs)
    if resource.kind == "client-metrics":
        return dict(ctx.state.telemetry.resources.get(resource.target, {}))
    return dict(ctx.state.configs.dynamic.get(resource.target, {}))


def catalogue(resource: Resource) -> dict:
    """The config definitions a resource of this kind accepts."""
    return {"topic": TOPIC_CONFIGS, "client-metrics": CLIENT_METRICS_CONFIGS}.get(resource.kind, BROKER_CONFIGS)


def check(resource: Resource, configs: dict[str, str]) -> None:
    """Raise :class:`Problem` (INVALID_CONFIG) for an unknown, read-only or invalid config."""
    for name, value in configs.items():
        definition = catalogue(resource).get(name)
        if definition is None:
            kind = resource.kind if resource.kind != "cluster" else "broker"
            raise Problem(ErrorCode.INVALID_CONFIG, f"Unknown {kind} config name: {name}")
        if resource.kind != "topic" and not definition.dynamic:
            raise Problem(ErrorCode.INVALID_CONFIG, f"Cannot update {name} dynamically (it is a static broker config).")
        problem = definition.problem(value) or (match_problem(value) if resource.kind == "client-metrics"
                                                and name == "match" else None)
        if problem:
            raise Problem(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: {problem}")


def apply(ctx, resource: Resource, configs: dict[str, str]) -> None:
    if resource.kind == "topic":
        ctx.state.set_topic_configs(resource.target, configs)
    elif resource.kind == "client-metrics":
        ctx.state.telemetry.set(resource.target, configs)
    else:
        ctx.state.set_broker_configs(resource.target, configs)


def entries(ctx, resource: Resource) -> list[tuple[Entry, bool]]:
    """(entry, read_only) for every config of the resource, sorted by name."""
    layers = ctx.state.configs
    if resource.kind == "topic":
        names = sorted(set(TOPIC_CONFIGS) | set(resource.target.configs))
        return [(layers.topic_entry(n, resource.target.configs), False) for n in names]
    if resource.kind == "cluster":
        return [(e, False) for e in layers.default_entries()]
    if resource.kind == "client-metrics":
        held = ctx.state.telemetry.resources.get(resource.target, {})
        return [(Entry(n, held.get(n, d.default), CLIENT_METRICS_CONFIG_SOURCE if n in held else DEFAULT_CONFIG, [], d),
                 False) for n, d in sorted(CLIENT_METRICS_CONFIGS.items())]
    return [(layers.broker_entry(n), not BROKER_CONFIGS[n].dynamic) for n in sorted(BROKER_CONFIGS)]


def describe_item(entry: Entry, read_only: bool, synonyms: bool, documentation: bool) -> dict:
    """One DescribeConfigs config; v0 gets ``is_default``, v1+ ``config_source`` and synonyms, v3+ the type and
    (when asked) documentation. The codec's version fitting drops what a version lacks."""
    return {"name": entry.name, "value": entry.value, "read_only": read_only, "config_source": entry.source,
            "is_default": entry.source == DEFAULT_CONFIG, "is_sensitive": False,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in entry.synonyms] if synonyms else [],
            "config_type": entry.definition.type,
            "documentation": (entry.definition.doc or None) if documentation else None}


def alter_resources(ctx, body: dict, new_configs) -> dict:
    """The shared shape of AlterConfigs and IncrementalAlterConfigs: one answer per resource, a resource named
    twice is INVALID_REQUEST, ``validate_only`` checks without applying. ``new_configs(ctx, resource, r)``
    returns the resource's complete set of dynamic configs after the request (or raises Problem)."""
    resources = body.get("resources", ())
    seen = Counter((r["resource_type"], r["resource_name"]) for r in resources)
    validate_only = body.get("validate_only", False)
    responses = []
    for r in resources:
        answer = {"resource_type": r["resource_type"], "resource_name": r["resource_name"], "error_code": 0,
                  "error_message": None}
        try:
            if seen[(r["resource_type"], r["resource_name"])] > 1:
                raise Problem(ErrorCode.INVALID_REQUEST, "A resource may appear only once in a request.")
            resource = resolve(ctx, r["resource_type"], r["resource_name"], "ALTER_CONFIGS")
            configs = new_configs(ctx, resource, r)
            check(resource, configs)
            if not validate_only:
                apply(ctx, resource, configs)
        except Problem as p:
            answer.update(error_code=p.error_code, error_message=p.message)
        responses.append(answer)
    return {"throttle_time_ms": 0, "responses": responses}
