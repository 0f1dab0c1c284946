"""KIP-848 consumer-group records of ``__consumer_offsets`` (key versions 3-8): each kind decoded from bytes
built by hand after Kafka's layouts, every field checked, re-encoded byte for byte, and traced so the tree
covers the bytes exactly; tombstones; what the broker writes reads back through the same decoder."""
from __future__ import annotations

import struct
import uuid

import pytest

from kafkalab.protocol import FieldNode
from kafkalab.protocol.payloads import OFFSETS_RECORD_KINDS, decode_offsets_record, encode_payload, trace_payload

from test_payloads import assert_tiles, cs, i16, i32, s, uvarint

TOPIC_A, TOPIC_B = uuid.UUID(int=0xA1), uuid.UUID(int=0xB2)


def carr(items: list[bytes]) -> bytes:
    """A compact array: its length + 1, then the items."""
    return uvarint(len(items) + 1) + b"".join(items)


def topic_partitions(topic_id: uuid.UUID, partitions) -> bytes:
    return topic_id.bytes + carr([i32(p) for p in partitions]) + uvarint(0)


NO_TAGS = uvarint(0)
CLASSIC = (i32(45000) + carr([cs("range") + uvarint(3) + b"\x00\x01" + NO_TAGS]) + NO_TAGS)

# key version -> (key bytes, value bytes, the decoded key, the decoded value)
RECORDS = {
    3: (i16(3) + s("g"), i16(0) + i32(7) + NO_TAGS, {"group_id": "g"}, {"epoch": 7}),
    4: (i16(4) + s("g"),
        i16(0) + carr([TOPIC_A.bytes + cs("orders") + i32(2) + carr([i32(0) + carr([cs("r1"), cs("r2")]) + NO_TAGS])
                       + NO_TAGS]) + NO_TAGS,
        {"group_id": "g"},
        {"topics": [{"topic_id": TOPIC_A, "topic_name": "orders", "num_partitions": 2,
                     "partition_metadata": [{"partition": 0, "racks": ["r1", "r2"]}]}]}),
    5: (i16(5) + s("g") + s("m-1"),
        i16(0) + cs(None) + cs("rack-a") + cs("client-1") + cs("/10.0.0.9") + carr([cs("orders"), cs("audit")])
        + cs(None) + i32(300000) + cs("uniform") + uvarint(1) + uvarint(0) + uvarint(1 + len(CLASSIC)) + b"\x01"
        + CLASSIC,
        {"group_id": "g", "member_id": "m-1"},
        {"instance_id": None, "rack_id": "rack-a", "client_id": "client-1", "client_host": "/10.0.0.9",
         "subscribed_topic_names": ["orders", "audit"], "subscribed_topic_regex": None,
         "rebalance_timeout_ms": 300000, "server_assignor": "uniform",
         "classic_member_metadata": {"session_timeout_ms": 45000,
                                     "supported_protocols": [{"name": "range", "metadata": b"\x00\x01"}]}}),
    6: (i16(6) + s("g"), i16(0) + i32(7) + NO_TAGS, {"group_id": "g"}, {"assignment_epoch": 7}),
    7: (i16(7) + s("g") + s("m-1"), i16(0) + carr([topic_partitions(TOPIC_A, [0, 1])]) + NO_TAGS,
        {"group_id": "g", "member_id": "m-1"},
        {"topic_partitions": [{"topic_id": TOPIC_A, "partitions": [0, 1]}]}),
    8: (i16(8) + s("g") + s("m-1"),
        i16(0) + i32(7) + i32(6) + struct.pack(">b", 1) + carr([topic_partitions(TOPIC_A, [0])])
        + carr([topic_partitions(TOPIC_B, [3])]) + NO_TAGS,
        {"group_id": "g", "member_id": "m-1"},
        {"member_epoch": 7, "previous_member_epoch": 6, "state": 1,
         "assigned_partitions": [{"topic_id": TOPIC_A, "partitions": [0]}],
         "partitions_pending_revocation": [{"topic_id": TOPIC_B, "partitions": [3]}]}),
}


@pytest.mark.parametrize("key_version", sorted(RECORDS))
def test_consumer_group_record_round_trip(key_version: int) -> None:
    key, value, want_key, want_value = RECORDS[key_version]
    kind, key_schema, value_schema = OFFSETS_RECORD_KINDS[key_version]
    got = decode_offsets_record(key, value)
    assert got["key_type"] == kind and kind.startswith("consumer_group_")
    assert got["key"] == {"version": key_version, **want_key}
    assert got["value"] == {"version": 0, **want_value}
    assert encode_payload(key_schema, got["key"]) == key
    assert encode_payload(value_schema, got["value"]) == value
    root = FieldNode("", "value", "payload", 0, len(value))
    trace_payload(value_schema, value, root, 0, "")
    assert_tiles(root, 0, len(value))
    tomb = decode_offsets_record(key, None)
    assert tomb["key_type"] == kind and tomb["value"] is None


def test_member_without_classic_metadata_writes_no_tag() -> None:
    _, _, _, value = RECORDS[5]
    plain = {"version": 0, **value, "classic_member_metadata": None}
    data = encode_payload("consumer_group_member_metadata_value", plain)
    assert data.endswith(i32(300000) + cs("uniform") + NO_TAGS)
    assert decode_offsets_record(RECORDS[5][0], data)["value"] == plain


def test_each_kind_has_its_own_key_version() -> None:
    kinds = {v: OFFSETS_RECORD_KINDS[v][0] for v in range(3, 9)}
    assert kinds == {3: "consumer_group_metadata", 4: "consumer_group_partition_metadata",
                     5: "consumer_group_member_metadata", 6: "consumer_group_target_assignment_metadata",
                     7: "consumer_group_target_assignment_member", 8: "consumer_group_current_member_assignment"}


def test_what_the_broker_writes_reads_back() -> None:
    from kafkalab.broker.storage.offsets import consumer_group_record
    for key_version, (key, value, want_key, want_value) in RECORDS.items():
        written = consumer_group_record(key_version, "g", want_key.get("member_id"), want_value)
        assert written == (key, value)
        assert consumer_group_record(key_version, "g", want_key.get("member_id"), None) == (key, None)
