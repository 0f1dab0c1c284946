"""What CreateAcls (30), DescribeAcls (29) and DeleteAcls (31) share: bindings and filters from request
fields, bindings to response fields. v0 has no pattern type: it means LITERAL (KIP-290)."""
from __future__ import annotations

from ..security.authorizer import PATTERN, AclBinding, AclFilter


def acl_filter(item: dict) -> AclFilter:
    return AclFilter(item["resource_type_filter"], item.get("resource_name_filter"),
                     item.get("pattern_type_filter", PATTERN["LITERAL"]), item.get("principal_filter"),
                     item.get("host_filter"), item["operation"], item["permission_type"])


def acl_binding(item: dict) -> AclBinding:
    return AclBinding(item["resource_type"], item["resource_name"],
                      item.get("resource_pattern_type", PATTERN["LITERAL"]), item["principal"], item["host"],
                      item["operation"], item["permission_type"])


def acl_fields(acl: AclBinding) -> dict:
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
            "permission_type": acl.permission_type}
