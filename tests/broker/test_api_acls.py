"""The ACL table covers every served API: each has a rule, gated checks only where the response can say so,
and each per-item check is asked by its handler."""
from __future__ import annotations

import inspect
import re

import pytest

from kafkalab.broker.handlers import MODULES, REGISTRY
from kafkalab.broker.security.api_acls import DENIED, FAIL_CLOSED, GATE, RULES, denial
from kafkalab.broker.security.authorizer import OP, RESOURCE
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.protocol.schema.registry import message_spec

MODULE_OF = {m.HANDLER.api_key: m for m in MODULES}


def test_every_served_api_has_an_authorization_rule():
    missing = sorted(ApiKey(k).name for k in REGISTRY if k not in RULES)
    assert not missing, f"add these APIs to security.api_acls.RULES: {missing}"


def test_rules_name_real_operations_and_resources():
    for key, checks in RULES.items():
        for check in checks:
            assert check.operation in OP and check.resource in RESOURCE and check.resource in DENIED, (key, check)


@pytest.mark.parametrize("api_key", sorted(k for k in REGISTRY if any(c.by == GATE for c in RULES.get(k, ()))),
                         ids=lambda k: ApiKey(k).name)
def test_gated_apis_answer_a_top_level_error_in_every_served_version(api_key):
    handler = REGISTRY[api_key]
    for version in range(handler.min_version, handler.max_version + 1):
        fields = message_spec(api_key, "response", version).fields
        assert any(f.name == "error_code" and f.exists_in(version) for f in fields), (ApiKey(api_key).name, version)
        for check in RULES[api_key]:
            if check.by == GATE and check.name_field:
                request = message_spec(api_key, "request", version).fields
                assert any(f.name == check.name_field and f.exists_in(version) for f in request)


def _source(module) -> str:
    """The handler module and the sibling modules it takes helpers from."""
    text = inspect.getsource(module)
    for sibling in re.findall(r"^from \.(\w+) import", text, re.M):
        if sibling != "base":
            text += inspect.getsource(__import__(f"kafkalab.broker.handlers.{sibling}", fromlist=["x"]))
    return text


@pytest.mark.parametrize("api_key", sorted(REGISTRY), ids=lambda k: ApiKey(k).name)
def test_handlers_ask_their_per_item_checks(api_key):
    source = _source(MODULE_OF[api_key])
    for check in RULES.get(api_key, ()):
        if check.by == GATE:
            continue
        if (check.operation, check.resource) == ("WRITE", "TRANSACTIONAL_ID") and "ctx.transaction(" in source:
            continue                       # RequestContext.transaction asks it
        assert "ctx.allowed(" in source and f'"{check.operation}"' in source and f'"{check.resource}"' in source, \
            f"{ApiKey(api_key).name}: the handler never asks {check.operation} on {check.resource}"


def test_gate_denies_with_the_resource_error_and_fails_closed():
    asked = []

    def deny(operation, resource, name):
        asked.append((operation, resource, name))
        return False
    assert denial(deny, ApiKey.DESCRIBE_QUORUM, {}) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert denial(deny, ApiKey.SHARE_FETCH, {"group_id": "g1"}) == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert ("READ", "GROUP", "g1") in asked
    assert denial(deny, ApiKey.API_VERSIONS, {}) is None
    assert FAIL_CLOSED and denial(deny, 9999, {}) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert denial(lambda *a: True, ApiKey.DESCRIBE_QUORUM, {}) is None
