"""KRaft metadata records kafkalab writes for users, ACLs and quotas: each type decoded from bytes built by hand
after Kafka's frame (uvarint frame version, type, version) and layouts, re-encoded byte for byte; bad frames
are clear errors."""
from __future__ import annotations

import struct
import uuid

import pytest

from kafkalab.protocol import DecodeError, EncodeError
from kafkalab.protocol.metadata_records import METADATA_RECORD_TYPES, decode_metadata_record, encode_metadata_record

from test_payloads import cb, cs, i32, uvarint

ACL_ID = uuid.UUID(int=0x1234)
NO_TAGS = uvarint(0)


def frame(record_type: int, version: int = 0) -> bytes:
    return uvarint(1) + uvarint(record_type) + uvarint(version)


RECORDS = {
    "user_scram_credential_record": (
        frame(11) + cs("carol") + b"\x01" + cb(b"salt") + cb(b"S" * 32) + cb(b"K" * 32) + i32(4096) + NO_TAGS,
        {"name": "carol", "mechanism": 1, "salt": b"salt", "stored_key": b"S" * 32, "server_key": b"K" * 32,
         "iterations": 4096}),
    "remove_user_scram_credential_record": (
        frame(22) + cs("carol") + b"\x02" + NO_TAGS, {"name": "carol", "mechanism": 2}),
    "access_control_entry_record": (
        frame(18) + ACL_ID.bytes + b"\x02" + cs("orders") + b"\x03" + cs("User:carol") + cs("*") + b"\x04\x02"
        + NO_TAGS,
        {"id": ACL_ID, "resource_type": 2, "resource_name": "orders", "pattern_type": 3, "principal": "User:carol",
         "host": "*", "operation": 4, "permission_type": 2}),
    "remove_access_control_entry_record": (frame(19) + ACL_ID.bytes + NO_TAGS, {"id": ACL_ID}),
    "client_quota_record": (
        frame(14) + uvarint(3) + cs("user") + cs("carol") + NO_TAGS + cs("client-id") + cs(None) + NO_TAGS
        + cs("producer_byte_rate") + struct.pack(">d", 1024.0) + b"\x00" + NO_TAGS,
        {"entity": [{"entity_type": "user", "entity_name": "carol"}, {"entity_type": "client-id", "entity_name": None}],
         "key": "producer_byte_rate", "value": 1024.0, "remove": False}),
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_metadata_record_round_trip(name: str) -> None:
    data, fields = RECORDS[name]
    record_type = next(t for t, n in METADATA_RECORD_TYPES.items() if n == name)
    got = decode_metadata_record(data)
    assert got == {"type": name, "record_type": record_type, "version": 0, **fields}
    assert encode_metadata_record(name, got) == data
    assert encode_metadata_record(name, fields) == data


def test_every_type_is_covered() -> None:
    assert set(METADATA_RECORD_TYPES.values()) == set(RECORDS)


@pytest.mark.parametrize("data, problem", [
    (b"", "frame"),
    (uvarint(0) + uvarint(11) + uvarint(0), "frame version 0"),
    (frame(3), "type 3 is not described"),
    (frame(11, 5), "version 5"),
    (RECORDS["remove_access_control_entry_record"][0] + b"\x00", "trailing"),
    (RECORDS["remove_access_control_entry_record"][0][:-3], ""),
])
def test_bad_metadata_records_are_clear_errors(data: bytes, problem: str) -> None:
    with pytest.raises(DecodeError, match=problem):
        decode_metadata_record(data)


def test_encode_rejects_unknown_records() -> None:
    with pytest.raises(EncodeError, match="unknown metadata record"):
        encode_metadata_record("topic_record", {})
