"""Structural checks on the nested payload schemas (kafkalab/protocol/schema/payloads/*.json)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kafkalab.protocol.schema as schema_pkg

PAYLOAD_DIR = Path(next(iter(schema_pkg.__path__))) / "payloads"

EXPECTED_FILES = {
    "consumer_protocol_subscription.json": "ConsumerProtocolSubscription",
    "consumer_protocol_assignment.json": "ConsumerProtocolAssignment",
    "offset_commit_key.json": "OffsetCommitKey",
    "offset_commit_value.json": "OffsetCommitValue",
    "group_metadata_key.json": "GroupMetadataKey",
    "group_metadata_value.json": "GroupMetadataValue",
    "transaction_log_key.json": "TransactionLogKey",
    "transaction_log_value.json": "TransactionLogValue",
    **{f"consumer_group_{kind}_{part}.json": "ConsumerGroup" + "".join(w.title() for w in kind.split("_")) + part.title()
       for kind in ("metadata", "partition_metadata", "member_metadata", "target_assignment_metadata",
                    "target_assignment_member", "current_member_assignment") for part in ("key", "value")},
    "user_scram_credential_record.json": "UserScramCredentialRecord",
    "remove_user_scram_credential_record.json": "RemoveUserScramCredentialRecord",
    "access_control_entry_record.json": "AccessControlEntryRecord",
    "remove_access_control_entry_record.json": "RemoveAccessControlEntryRecord",
    "client_quota_record.json": "ClientQuotaRecord",
}

PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid", "string",
              "bytes", "records"}
TYPES = PRIMITIVES | {"struct", "array"}
NULLABLE_TYPES = {"string", "bytes", "records", "array", "struct"}
TOP_KEYS = {"name", "versions", "flexible", "fields"}
FIELD_KEYS = {"name", "type", "items", "versions", "nullable", "tag", "tagged", "default", "fields"}
ZERO_VALUES = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0,
               "bool": False, "string": "", "uuid": "00000000-0000-0000-0000-000000000000"}
SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]*$")

SCHEMA_FILES = sorted(PAYLOAD_DIR.glob("*.json"))


def load(name: str) -> dict:
    return json.loads((PAYLOAD_DIR / name).read_text(encoding="utf-8"))


def is_range(value) -> bool:
    return (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
            and 0 <= value[0] <= value[1])


def within(inner, outer) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def check_fields(fields, parent_range, flexible, where, problems):
    if not isinstance(fields, list) or not fields:
        problems.append(f"{where}: fields must be a non-empty list")
        return
    names, tags = set(), set()
    for f in fields:
        name = f.get("name", "?")
        at = f"{where}.{name}"
        unknown = set(f) - FIELD_KEYS
        if unknown:
            problems.append(f"{at}: unknown keys {sorted(unknown)}")
        if not isinstance(name, str) or not SNAKE.match(name):
            problems.append(f"{at}: name is not snake_case")
        if name in names:
            problems.append(f"{at}: duplicate name")
        names.add(name)

        ftype = f.get("type")
        if ftype not in TYPES:
            problems.append(f"{at}: unknown type {ftype!r}")
        vers = f.get("versions")
        if not is_range(vers):
            problems.append(f"{at}: versions {vers!r} is not a [low, high] range")
            continue
        if not within(vers, parent_range):
            problems.append(f"{at}: versions {vers} outside parent {parent_range}")

        if "nullable" in f:
            if not is_range(f["nullable"]) or not within(f["nullable"], vers):
                problems.append(f"{at}: nullable {f['nullable']!r} not within versions {vers}")
            if ftype not in NULLABLE_TYPES:
                problems.append(f"{at}: type {ftype} cannot be nullable")

        if ("tag" in f) != ("tagged" in f):
            problems.append(f"{at}: tag and tagged go together")
        if "tagged" in f:
            if type(f["tag"]) is not int or f["tag"] < 0:
                problems.append(f"{at}: tag must be a non-negative int")
            elif f["tag"] in tags:
                problems.append(f"{at}: duplicate tag {f['tag']}")
            tags.add(f.get("tag"))
            tagged = f["tagged"]
            if not is_range(tagged) or not within(tagged, vers):
                problems.append(f"{at}: tagged {tagged!r} not within versions {vers}")
            elif flexible is None or tagged[0] < flexible:
                problems.append(f"{at}: tagged before the first flexible version {flexible}")

        if "default" in f:
            default = f["default"]
            if default is None:
                if "nullable" not in f:
                    problems.append(f"{at}: null default on a non-nullable field")
            elif ftype in ZERO_VALUES and default == ZERO_VALUES[ftype] and type(default) is type(ZERO_VALUES[ftype]):
                problems.append(f"{at}: default equals the type's zero value and should be omitted")
            elif ftype in ("array", "struct") and default == []:
                problems.append(f"{at}: empty-array default should be omitted")

        if ftype == "array":
            items = f.get("items")
            if items == "struct":
                check_fields(f.get("fields"), vers, flexible, at, problems)
            elif items in PRIMITIVES:
                if "fields" in f:
                    problems.append(f"{at}: array of {items} must not have fields")
            else:
                problems.append(f"{at}: array items {items!r} is neither a primitive nor struct")
        elif ftype == "struct":
            check_fields(f.get("fields"), vers, flexible, at, problems)
        else:
            if "items" in f or "fields" in f:
                problems.append(f"{at}: only arrays and structs have items/fields")


def test_expected_files_present():
    assert {p.name for p in SCHEMA_FILES} == set(EXPECTED_FILES)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_schema_structure(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc) == TOP_KEYS
    assert CAMEL.match(doc["name"])
    assert doc["name"] == EXPECTED_FILES[path.name]
    assert is_range(doc["versions"])
    flexible = doc["flexible"]
    assert flexible is None or (type(flexible) is int and doc["versions"][0] <= flexible <= doc["versions"][1])
    problems: list[str] = []
    check_fields(doc["fields"], doc["versions"], flexible, doc["name"], problems)
    assert not problems, "\n".join(problems)


def test_readme_mentions_every_file():
    readme = (PAYLOAD_DIR / "README.md").read_text(encoding="utf-8")
    for name in EXPECTED_FILES:
        assert name in readme, name


def field_names(doc) -> list[str]:
    return [f["name"] for f in doc["fields"]]


def by_name(fields) -> dict:
    return {f["name"]: f for f in fields}


def test_consumer_protocol_subscription():
    doc = load("consumer_protocol_subscription.json")
    assert doc["versions"] == [0, 3] and doc["flexible"] is None
    assert field_names(doc) == ["topics", "user_data", "owned_partitions", "generation_id", "rack_id"]
    f = by_name(doc["fields"])
    assert f["topics"]["items"] == "string"
    assert f["user_data"]["nullable"] == [0, 3]
    assert f["owned_partitions"]["versions"] == [1, 3]
    assert [x["name"] for x in f["owned_partitions"]["fields"]] == ["topic", "partitions"]
    assert f["generation_id"] == {"name": "generation_id", "type": "int32", "versions": [2, 3], "default": -1}
    assert f["rack_id"]["versions"] == [3, 3] and f["rack_id"]["nullable"] == [3, 3]


def test_consumer_protocol_assignment():
    doc = load("consumer_protocol_assignment.json")
    assert doc["versions"] == [0, 3] and doc["flexible"] is None
    assert field_names(doc) == ["assigned_partitions", "user_data"]


def test_offsets_topic_keys():
    offset_key = load("offset_commit_key.json")
    group_key = load("group_metadata_key.json")
    assert offset_key["versions"] == [0, 1]
    assert field_names(offset_key) == ["group", "topic", "partition"]
    assert group_key["versions"] == [2, 2]
    assert field_names(group_key) == ["group"]
    # the key version alone tells the two kinds apart
    assert offset_key["versions"][1] < group_key["versions"][0]


def test_offset_commit_value():
    doc = load("offset_commit_value.json")
    assert doc["versions"] == [0, 4] and doc["flexible"] == 4
    assert field_names(doc) == ["offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp"]
    f = by_name(doc["fields"])
    assert f["leader_epoch"]["versions"] == [3, 4]
    assert f["expire_timestamp"]["versions"] == [1, 1]


def test_group_metadata_value():
    doc = load("group_metadata_value.json")
    assert doc["versions"] == [0, 4] and doc["flexible"] == 4
    assert field_names(doc) == ["protocol_type", "generation", "protocol", "leader", "current_state_timestamp",
                                "members"]
    f = by_name(doc["fields"])
    assert f["protocol"]["nullable"] == [0, 4] and f["leader"]["nullable"] == [0, 4]
    members = [x["name"] for x in f["members"]["fields"]]
    assert members == ["member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout",
                       "session_timeout", "subscription", "assignment"]


def test_transaction_log():
    key = load("transaction_log_key.json")
    assert key["versions"] == [0, 0] and field_names(key) == ["transactional_id"]
    doc = load("transaction_log_value.json")
    assert doc["versions"] == [0, 1] and doc["flexible"] == 1
    f = by_name(doc["fields"])
    tagged = {name: fld["tag"] for name, fld in f.items() if "tagged" in fld}
    assert tagged == {"previous_producer_id": 0, "next_producer_id": 1, "client_transaction_version": 2}
    assert f["transaction_status"]["type"] == "int8"
    assert f["transaction_partitions"]["nullable"] == [0, 1]
    assert [x["name"] for x in f["transaction_partitions"]["fields"]] == ["topic", "partition_ids"]
    positional = [n for n, fld in f.items() if "tagged" not in fld]
    assert positional == ["producer_id", "producer_epoch", "transaction_timeout_ms", "transaction_status",
                          "transaction_partitions", "transaction_last_update_timestamp_ms",
                          "transaction_start_timestamp_ms"]


def test_checker_catches_mistakes():
    problems: list[str] = []
    bad = [
        {"name": "BadName", "type": "int32", "versions": [0, 1]},
        {"name": "late", "type": "int32", "versions": [0, 9]},
        {"name": "arr", "type": "array", "items": "struct", "versions": [1, 2],
         "fields": [{"name": "inner", "type": "string", "versions": [0, 2]}]},
        {"name": "zero", "type": "int32", "versions": [0, 2], "default": 0},
        {"name": "tg", "type": "int64", "versions": [0, 2], "tag": 0, "tagged": [0, 2]},
    ]
    check_fields(bad, [0, 2], 1, "X", problems)
    text = "\n".join(problems)
    assert "X.BadName: name is not snake_case" in text
    assert "X.late: versions [0, 9] outside parent [0, 2]" in text
    assert "X.arr.inner: versions [0, 2] outside parent [1, 2]" in text
    assert "X.zero: default equals" in text
    assert "X.tg: tagged before the first flexible version" in text


@pytest.mark.parametrize("kind, key_version", [("metadata", 3), ("partition_metadata", 4), ("member_metadata", 5),
                                               ("target_assignment_metadata", 6), ("target_assignment_member", 7),
                                               ("current_member_assignment", 8)])
def test_consumer_group_record_schemas(kind: str, key_version: int) -> None:
    """KIP-848 records: the key's only version is the record type; values are v0, flexible from v0."""
    key, value = load(f"consumer_group_{kind}_key.json"), load(f"consumer_group_{kind}_value.json")
    assert key["versions"] == [key_version, key_version] and key["flexible"] is None
    per_member = kind in ("member_metadata", "target_assignment_member", "current_member_assignment")
    assert field_names(key) == (["group_id", "member_id"] if per_member else ["group_id"])
    assert value["versions"] == [0, 0] and value["flexible"] == 0


def test_current_member_assignment_value() -> None:
    doc = load("consumer_group_current_member_assignment_value.json")
    assert field_names(doc) == ["member_epoch", "previous_member_epoch", "state", "assigned_partitions",
                                "partitions_pending_revocation"]
    for name in ("assigned_partitions", "partitions_pending_revocation"):
        assert [f["name"] for f in by_name(doc["fields"])[name]["fields"]] == ["topic_id", "partitions"]


def test_member_metadata_value() -> None:
    doc = load("consumer_group_member_metadata_value.json")
    assert field_names(doc) == ["instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                                "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor",
                                "classic_member_metadata"]
    classic = by_name(doc["fields"])["classic_member_metadata"]
    assert (classic["tag"], classic["tagged"], classic["nullable"]) == (0, [0, 0], [0, 0])
