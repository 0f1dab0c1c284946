"""Which message fields carry which enum table, and the look-ups the dissector and notebooks use.

Owns: :data:`FIELD_ENUMS` (a field name, or a (message or API, field) pair where a name means different
things in different APIs), :func:`field_enum` and :func:`enum_name`. Kept apart from the tables in
:mod:`.enums` because it is a map over the message schemas, not Kafka's value facts: a new API adds rows
here without touching the tables.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from .enum_table import EnumTable
from .enums import (ACL_OPERATIONS, ACL_PATTERN_TYPES, ACL_PERMISSION_TYPES, ACL_RESOURCE_TYPES,
                    ALTER_CONFIG_OP_TYPES, CONFIG_RESOURCE_TYPES, CONFIG_SOURCES, CONFIG_TYPES,
                    COORDINATOR_KEY_TYPES, ELECTION_TYPES, ENDPOINT_TYPES, ENUMS, FEATURE_UPGRADE_TYPES,
                    GROUP_STATES, GROUP_TYPES, ISOLATION_LEVELS, LEADER_RECOVERY_STATES, LIST_OFFSETS_TIMESTAMPS,
                    QUOTA_ENTITY_TYPES, QUOTA_MATCH_TYPES, SCRAM_MECHANISMS, SHARE_ACKNOWLEDGE_TYPES,
                    SHARE_DELIVERY_STATES, TRANSACTION_STATES, TRANSACTION_STATUSES)

__all__ = ["FIELD_ENUMS", "field_enum", "enum_name"]


#: Which message fields hold which enum.
#:
#: A plain ``"field_name"`` key means the field has that meaning wherever the name occurs. A
#: ``(message, field_name)`` key restricts it: ``message`` is either an API name ("DescribeConfigs", both
#: directions) or a full message name ("ListOffsetsRequest", that direction only). Names that mean
#: different things in different APIs have only qualified keys: ``resource_type`` (ACL numbering in the
#: *Acls APIs, config numbering in the config APIs), ``timestamp``, ``source`` and ``mechanism`` (an int8
#: in the SCRAM APIs but a string in SaslHandshake). Array fields (``acknowledge_types``,
#: ``states_filter``, ...) name the enum of their elements.
FIELD_ENUMS: Mapping[str | tuple[str, str], EnumTable] = MappingProxyType({
    # ACL APIs
    ("CreateAcls", "resource_type"): ACL_RESOURCE_TYPES,
    ("DescribeAcls", "resource_type"): ACL_RESOURCE_TYPES,
    ("DeleteAcls", "resource_type"): ACL_RESOURCE_TYPES,
    "resource_type_filter": ACL_RESOURCE_TYPES,
    "operation": ACL_OPERATIONS,
    "permission_type": ACL_PERMISSION_TYPES,
    "pattern_type": ACL_PATTERN_TYPES,
    "pattern_type_filter": ACL_PATTERN_TYPES,
    "resource_pattern_type": ACL_PATTERN_TYPES,
    # config APIs
    ("DescribeConfigs", "resource_type"): CONFIG_RESOURCE_TYPES,
    ("AlterConfigs", "resource_type"): CONFIG_RESOURCE_TYPES,
    ("IncrementalAlterConfigs", "resource_type"): CONFIG_RESOURCE_TYPES,
    ("ListConfigResources", "resource_type"): CONFIG_RESOURCE_TYPES,
    ("ListConfigResources", "resource_types"): CONFIG_RESOURCE_TYPES,
    ("DescribeConfigs", "source"): CONFIG_SOURCES,
    "config_source": CONFIG_SOURCES,
    "config_type": CONFIG_TYPES,
    "config_operation": ALTER_CONFIG_OP_TYPES,
    # fetching and offsets
    "isolation_level": ISOLATION_LEVELS,
    ("ListOffsetsRequest", "timestamp"): LIST_OFFSETS_TIMESTAMPS,
    # coordinators, groups, transactions
    "key_type": COORDINATOR_KEY_TYPES,
    "group_state": GROUP_STATES,
    "states_filter": GROUP_STATES,
    "group_type": GROUP_TYPES,
    "types_filter": GROUP_TYPES,
    "transaction_state": TRANSACTION_STATES,
    "state_filters": TRANSACTION_STATES,
    "transaction_status": TRANSACTION_STATUSES,
    # share groups
    "acknowledge_types": SHARE_ACKNOWLEDGE_TYPES,
    "delivery_state": SHARE_DELIVERY_STATES,
    # admin odds and ends
    "entity_type": QUOTA_ENTITY_TYPES,
    "match_type": QUOTA_MATCH_TYPES,
    ("DescribeUserScramCredentials", "mechanism"): SCRAM_MECHANISMS,
    ("AlterUserScramCredentials", "mechanism"): SCRAM_MECHANISMS,
    "election_type": ELECTION_TYPES,
    "upgrade_type": FEATURE_UPGRADE_TYPES,
    "endpoint_type": ENDPOINT_TYPES,
    "leader_recovery_state": LEADER_RECOVERY_STATES,
})

_DIRECTION_SUFFIXES = ("Request", "Response")


def field_enum(field: str, message: str | None = None) -> EnumTable | None:
    """The enum table for ``field`` (snake_case) of ``message``, or ``None``.

    ``message`` may be a full message name ("DescribeConfigsResponse") or an API name
    ("DescribeConfigs"); qualified entries win over plain ones. Without ``message`` only the plain
    entries are consulted.
    """
    if message:
        table = FIELD_ENUMS.get((message, field))
        if table is not None:
            return table
        for suffix in _DIRECTION_SUFFIXES:
            if message.endswith(suffix) and len(message) > len(suffix):
                table = FIELD_ENUMS.get((message[: -len(suffix)], field))
                if table is not None:
                    return table
    return FIELD_ENUMS.get(field)


def enum_name(enum: EnumTable | str, value: object) -> str | None:
    """The name ``enum`` gives ``value``, or ``None`` if it defines none.

    ``enum`` is a table or a table's name from :data:`ENUMS` (an unknown name raises ``KeyError``).
    """
    table = ENUMS[enum] if isinstance(enum, str) else enum
    return table.label(value)
