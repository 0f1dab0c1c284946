"""Checks on the message-body enum tables."""
from __future__ import annotations

import re

import pytest

from kafkalab.protocol.schema import enums
from kafkalab.protocol.schema.enums import (
    ACL_OPERATIONS,
    ACL_PATTERN_TYPES,
    ACL_PERMISSION_TYPES,
    ACL_RESOURCE_TYPES,
    ALTER_CONFIG_OP_TYPES,
    CONFIG_RESOURCE_TYPES,
    CONFIG_SOURCES,
    CONFIG_TYPES,
    CONTROL_RECORD_TYPES,
    COORDINATOR_KEY_TYPES,
    ENUMS,
    GROUP_STATES,
    GROUP_TYPES,
    ISOLATION_LEVELS,
    LIST_OFFSETS_TIMESTAMPS,
    QUOTA_ENTITY_TYPES,
    SCRAM_MECHANISMS,
    TRANSACTION_STATES,
    TRANSACTION_STATUSES,
)
from kafkalab.protocol.schema.enum_fields import FIELD_ENUMS, enum_name, field_enum
from kafkalab.protocol.schema.enum_table import EnumTable

NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
SNAKE_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def test_every_public_table_is_registered_once():
    tables = [v for v in vars(enums).values() if isinstance(v, EnumTable)]
    assert len(tables) == len(ENUMS)
    for table in tables:
        assert ENUMS[table.name] is table


@pytest.mark.parametrize("table", list(ENUMS.values()), ids=lambda t: t.name)
def test_table_shape(table):
    assert len(table) > 0
    assert table.about.strip()
    kinds = {type(k) for k in table}
    assert kinds in ({int}, {str}), table.name
    names = list(table.values())
    assert len(names) == len(set(names)), "names must be unique within a table"
    for name in names:
        assert NAME_RE.match(name), name
    for value, name in table.items():
        assert table.by_name[name] == value


def test_tables_are_read_only():
    with pytest.raises(TypeError):
        ISOLATION_LEVELS[5] = "X"  # type: ignore[index]
    with pytest.raises(TypeError):
        ISOLATION_LEVELS._values[5] = "X"  # type: ignore[index]


def test_acl_tables():
    assert dict(ACL_RESOURCE_TYPES) == {
        0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
        6: "DELEGATION_TOKEN", 7: "USER",
    }
    assert ACL_OPERATIONS[3] == "READ"
    assert ACL_OPERATIONS[4] == "WRITE"
    assert ACL_OPERATIONS[12] == "IDEMPOTENT_WRITE"
    assert ACL_OPERATIONS[14] == "DESCRIBE_TOKENS"
    assert list(ACL_OPERATIONS) == list(range(0, len(ACL_OPERATIONS)))
    assert dict(ACL_PERMISSION_TYPES) == {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
    assert ACL_PATTERN_TYPES[3] == "LITERAL"
    assert ACL_PATTERN_TYPES[4] == "PREFIXED"


def test_config_tables():
    assert dict(CONFIG_RESOURCE_TYPES) == {
        0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP",
    }
    assert CONFIG_SOURCES[1] == "TOPIC_CONFIG"
    assert CONFIG_SOURCES[5] == "DEFAULT_CONFIG"
    assert CONFIG_TYPES[9] == "PASSWORD"
    assert dict(ALTER_CONFIG_OP_TYPES) == {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}


def test_misc_tables():
    assert dict(ISOLATION_LEVELS) == {0: "READ_UNCOMMITTED", 1: "READ_COMMITTED"}
    assert dict(COORDINATOR_KEY_TYPES) == {0: "GROUP", 1: "TRANSACTION", 2: "SHARE"}
    assert LIST_OFFSETS_TIMESTAMPS[-1] == "LATEST"
    assert LIST_OFFSETS_TIMESTAMPS[-2] == "EARLIEST"
    assert LIST_OFFSETS_TIMESTAMPS[-3] == "MAX_TIMESTAMP"
    assert LIST_OFFSETS_TIMESTAMPS[-4] == "EARLIEST_LOCAL"
    assert LIST_OFFSETS_TIMESTAMPS[-5] == "LATEST_TIERED"
    assert all(v < 0 for v in LIST_OFFSETS_TIMESTAMPS)
    assert CONTROL_RECORD_TYPES[0] == "ABORT"
    assert CONTROL_RECORD_TYPES[1] == "COMMIT"
    assert SCRAM_MECHANISMS[1] == "SCRAM_SHA_256"
    assert QUOTA_ENTITY_TYPES["client-id"] == "CLIENT_ID"


def test_transaction_strings_and_ids_name_the_same_states():
    assert set(TRANSACTION_STATES.values()) == set(TRANSACTION_STATUSES.values())
    assert TRANSACTION_STATUSES[2] == "PREPARE_COMMIT"
    assert TRANSACTION_STATES["PrepareCommit"] == "PREPARE_COMMIT"


def test_enum_name():
    assert enum_name(ISOLATION_LEVELS, 1) == "READ_COMMITTED"
    assert enum_name("IsolationLevel", 0) == "READ_UNCOMMITTED"
    assert enum_name(ISOLATION_LEVELS, 7) is None
    assert enum_name(ISOLATION_LEVELS, "1") is None
    assert enum_name(ISOLATION_LEVELS, True) is None
    assert enum_name(ISOLATION_LEVELS, None) is None
    assert enum_name(LIST_OFFSETS_TIMESTAMPS, 1_700_000_000_000) is None
    with pytest.raises(KeyError):
        enum_name("NoSuchEnum", 0)


def test_case_insensitive_string_tables():
    assert enum_name(GROUP_STATES, "Stable") == "STABLE"
    assert enum_name(GROUP_STATES, "STABLE") == "STABLE"
    assert enum_name(GROUP_STATES, "preparingrebalance") == "PREPARING_REBALANCE"
    assert enum_name(GROUP_TYPES, "consumer") == "CONSUMER"
    assert enum_name(GROUP_STATES, "Bogus") is None
    # transaction state strings are matched exactly
    assert enum_name(TRANSACTION_STATES, "Ongoing") == "ONGOING"
    assert enum_name(TRANSACTION_STATES, "ongoing") is None


def test_field_enum_keys_are_well_formed():
    for key, table in FIELD_ENUMS.items():
        assert isinstance(table, EnumTable)
        assert ENUMS[table.name] is table
        field = key[1] if isinstance(key, tuple) else key
        assert SNAKE_RE.match(field), key
        if isinstance(key, tuple):
            assert re.match(r"^[A-Z][A-Za-z]+$", key[0]), key
            # a qualified key must not be shadowed by a plain one for the same field
            assert field not in FIELD_ENUMS, key


def test_field_enum_plain_names():
    assert field_enum("isolation_level") is ISOLATION_LEVELS
    assert field_enum("isolation_level", "FetchRequest") is ISOLATION_LEVELS
    assert field_enum("key_type", "FindCoordinatorRequest") is COORDINATOR_KEY_TYPES
    assert field_enum("permission_type") is ACL_PERMISSION_TYPES
    assert field_enum("resource_pattern_type") is ACL_PATTERN_TYPES
    assert field_enum("config_operation") is ALTER_CONFIG_OP_TYPES
    assert field_enum("operation", "DescribeAclsRequest") is ACL_OPERATIONS
    assert field_enum("topic") is None
    assert field_enum("error_code") is None


def test_field_enum_resource_type_depends_on_the_api():
    assert field_enum("resource_type") is None
    assert field_enum("resource_type", "CreateAclsRequest") is ACL_RESOURCE_TYPES
    assert field_enum("resource_type", "DescribeAclsResponse") is ACL_RESOURCE_TYPES
    assert field_enum("resource_type", "DescribeConfigsRequest") is CONFIG_RESOURCE_TYPES
    assert field_enum("resource_type", "IncrementalAlterConfigs") is CONFIG_RESOURCE_TYPES
    # the same number means different things in the two families
    assert enum_name(field_enum("resource_type", "DeleteAcls"), 4) == "CLUSTER"
    assert enum_name(field_enum("resource_type", "AlterConfigs"), 4) == "BROKER"


def test_field_enum_direction_specific_keys():
    assert field_enum("timestamp", "ListOffsetsRequest") is LIST_OFFSETS_TIMESTAMPS
    assert field_enum("timestamp", "ListOffsetsResponse") is None
    assert field_enum("timestamp") is None
    assert field_enum("mechanism", "SaslHandshakeRequest") is None
    assert field_enum("mechanism", "AlterUserScramCredentialsRequest") is SCRAM_MECHANISMS
    assert field_enum("source", "DescribeConfigsResponse") is CONFIG_SOURCES
    assert field_enum("source") is None


def test_annotation_example():
    table = field_enum("isolation_level", "ListOffsetsRequest")
    assert table is not None
    assert f"isolation_level: 1 ({enum_name(table, 1)})" == "isolation_level: 1 (READ_COMMITTED)"
