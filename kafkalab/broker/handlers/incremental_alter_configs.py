"""IncrementalAlterConfigs (44), v0-v1 (KIP-339): change named configs, leave the others alone.

Operations: SET (0), DELETE (1: back to the inherited value), APPEND (2) and SUBTRACT (3), the last two only
for LIST configs (``cleanup.policy``), else INVALID_CONFIG. An unknown operation, a config named twice in a
resource, a resource named twice or a null SET/APPEND value is INVALID_REQUEST; the outcome is validated as a
whole (INVALID_CONFIG leaves the resource untouched). Changes take effect at once (``message.timestamp.type``
on the next produce, ``segment.bytes`` on the next segment roll). ``validate_only`` checks without applying.
"""
from __future__ import annotations

from collections import Counter

from kafkalab.protocol import ApiKey, ErrorCode

from ..configs import LIST
from .base import Handler
from .config_resources import Problem, alter_resources, catalogue, dynamic_configs

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def handle(ctx, body: dict) -> dict:
    return alter_resources(ctx, body, _changed)


def _changed(ctx, resource, r: dict) -> dict[str, str]:
    """IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT to the configs in force."""
    names = Counter(c["name"] for c in r.get("configs", ()))
    if any(n > 1 for n in names.values()):
        twice = next(k for k, n in names.items() if n > 1)
        raise Problem(ErrorCode.INVALID_REQUEST, f"Config {twice} appears more than once for one resource.")
    configs = dynamic_configs(ctx, resource)
    for c in r.get("configs", ()):
        _operate(ctx, resource, configs, c)
    return configs


def _operate(ctx, resource, configs: dict[str, str], c: dict) -> None:
    name, op, value = c["name"], c["config_operation"], c.get("value")
    if op == DELETE:
        configs.pop(name, None)
        return
    if op not in (SET, APPEND, SUBTRACT):
        raise Problem(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op} for {name}.")
    if value is None and op != SUBTRACT:
        raise Problem(ErrorCode.INVALID_REQUEST, f"Null value not supported for {name}.")
    if op == SET:
        configs[name] = value
        return
    definition = catalogue(resource).get(name)
    if definition is None or definition.type != LIST:
        raise Problem(ErrorCode.INVALID_CONFIG, f"Config value append/subtract is not allowed for config key: {name}")
    current = configs.get(name)
    if current is None:
        current = _inherited(ctx, resource, name)
    items = [i.strip() for i in (current or "").split(",") if i.strip()]
    change = [i.strip() for i in (value or "").split(",") if i.strip()]
    if op == APPEND:
        items += [i for i in change if i not in items]
    else:
        items = [i for i in items if i not in change]
    configs[name] = ",".join(items)


def _inherited(ctx, resource, name: str) -> str | None:
    """APPEND and SUBTRACT start from the value in effect, as Kafka does."""
    layers = ctx.state.configs
    if resource.kind == "topic":
        return layers.topic_entry(name, {}).value
    if resource.kind == "client-metrics":
        return None
    return layers.broker_entry(name).value


HANDLER = Handler(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle)
