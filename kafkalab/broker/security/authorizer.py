"""ACL authorization, sans-IO: ACL bindings, Kafka's matching rules, and the one question handlers ask.

Owns: the ACL store (CreateAcls adds, DescribeAcls/DeleteAcls filter), :meth:`Authorizer.allowed` - may
``principal`` from ``host`` do ``operation`` on (``resource_type``, ``name``)? - and the authorized-operations
bit fields of Metadata, DescribeGroups and DescribeCluster. Must not know: requests, handlers, sockets.
Handlers reach it through ``ctx.allowed(operation, resource_type, name)`` (see handlers/base.py), so a new
handler needs one line per resource it touches.

Kafka's rules (StandardAuthorizer), each in one place below:
- super users may do anything; a resource no ACL matches is open to all if ``allow_everyone_if_no_acl_found``
  (``allow.everyone.if.no.acl.found``), else closed;
- an ACL matches a resource when LITERAL and equal (or the name is ``*``), or PREFIXED and a prefix of it; it
  matches a request when its principal is the request's or ``User:*`` and its host the client's or ``*``;
- DENY wins over ALLOW; ALL covers every operation; DESCRIBE is implied by READ, WRITE, DELETE or ALTER, and
  DESCRIBE_CONFIGS by ALTER_CONFIGS.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkalab.protocol.schema.enums import (ACL_OPERATIONS, ACL_PATTERN_TYPES, ACL_PERMISSION_TYPES,
                                            ACL_RESOURCE_TYPES)

OP = ACL_OPERATIONS.by_name                 # OP["READ"] == 3
RESOURCE = ACL_RESOURCE_TYPES.by_name       # RESOURCE["TOPIC"] == 2
PATTERN = ACL_PATTERN_TYPES.by_name
PERMISSION = ACL_PERMISSION_TYPES.by_name
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
OMITTED_OPERATIONS = -2147483648            # INT32_MIN: "authorized operations not requested"

IMPLIED = {OP["DESCRIBE"]: {OP["READ"], OP["WRITE"], OP["DELETE"], OP["ALTER"]},
           OP["DESCRIBE_CONFIGS"]: {OP["ALTER_CONFIGS"]}}
# The operations each resource type knows (what the bit fields may report).
OPERATIONS = {
    RESOURCE["TOPIC"]: ("READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    RESOURCE["GROUP"]: ("READ", "DELETE", "DESCRIBE"),
    RESOURCE["CLUSTER"]: ("CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                          "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"),
    RESOURCE["TRANSACTIONAL_ID"]: ("WRITE", "DESCRIBE"),
}


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def covers(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PATTERN["LITERAL"]:
            return self.resource_name in (name, WILDCARD)
        return self.pattern_type == PATTERN["PREFIXED"] and name.startswith(self.resource_name)

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, "User:*") and self.host in (host, WILDCARD)


@dataclass(frozen=True)
class AclFilter:
    """A DescribeAcls/DeleteAcls filter: ANY (or None for names) matches everything; MATCH patterns match
    every binding that would cover the named resource."""
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != RESOURCE["ANY"] and acl.resource_type != self.resource_type:
            return False
        if self.pattern_type == PATTERN["MATCH"]:
            if self.resource_name is not None and not acl.covers(acl.resource_type, self.resource_name):
                return False
        elif self.pattern_type != PATTERN["ANY"] and (acl.pattern_type != self.pattern_type or (
                self.resource_name is not None and acl.resource_name != self.resource_name)):
            return False
        elif self.pattern_type == PATTERN["ANY"] and self.resource_name is not None \
                and acl.resource_name != self.resource_name:
            return False
        return ((self.principal is None or acl.principal == self.principal)
                and (self.host is None or acl.host == self.host)
                and self.operation in (OP["ANY"], acl.operation)
                and self.permission_type in (PERMISSION["ANY"], acl.permission_type))


def binding_problem(acl: AclBinding) -> str | None:
    """Why CreateAcls refuses a binding (Kafka's validation), or None."""
    if acl.resource_type not in OPERATIONS and acl.resource_type not in (RESOURCE["DELEGATION_TOKEN"],
                                                                          RESOURCE["USER"]):
        return "Invalid resource type"
    if acl.pattern_type not in (PATTERN["LITERAL"], PATTERN["PREFIXED"]):
        return "Invalid pattern type: ACLs are LITERAL or PREFIXED"
    if acl.operation in (OP["ANY"], OP["UNKNOWN"]) or acl.operation not in ACL_OPERATIONS:
        return "Invalid operation"
    if acl.permission_type not in (PERMISSION["ALLOW"], PERMISSION["DENY"]):
        return "Invalid permission type"
    if not acl.principal.startswith("User:") or not acl.resource_name:
        return "Invalid principal or resource name"
    if acl.resource_type == RESOURCE["CLUSTER"] and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    return None


class Authorizer:
    def __init__(self, super_users=(), allow_everyone_if_no_acl_found: bool = True) -> None:
        self.super_users = set(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.acls: list[AclBinding] = []
        self.listener = None            # told of every ACL added or removed (SecurityLog: they survive a restart)

    def allowed(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        """THE question every handler asks."""
        if principal in self.super_users:
            return True
        matching = [a for a in self.acls if a.covers(resource_type, name)]
        if not matching:
            return self.allow_everyone_if_no_acl_found
        mine = [a for a in matching if a.applies_to(principal, host)]
        if any(a.permission_type == PERMISSION["DENY"] and a.operation in (operation, OP["ALL"]) for a in mine):
            return False
        granted = {operation, OP["ALL"], *IMPLIED.get(operation, ())}
        return any(a.permission_type == PERMISSION["ALLOW"] and a.operation in granted for a in mine)

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The bit field of the operations allowed on a resource (bit n = AclOperation n)."""
        return sum(1 << OP[op] for op in OPERATIONS[resource_type]
                   if self.allowed(principal, host, OP[op], resource_type, name))

    def add(self, acl: AclBinding) -> str | None:
        problem = binding_problem(acl)
        if problem is None and acl not in self.acls:
            self.acls.append(acl)
            if self.listener is not None:
                self.listener.acl_added(acl)
        return problem

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [a for a in self.acls if acl_filter.matches(a)]

    def delete(self, acl_filter: AclFilter) -> list[AclBinding]:
        gone = self.describe(acl_filter)
        self.acls = [a for a in self.acls if a not in gone]
        for acl in gone if self.listener is not None else ():
            self.listener.acl_removed(acl)
        return gone
