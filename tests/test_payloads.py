"""Nested payloads (kafkalab.protocol.payloads): consumer-protocol subscriptions and assignments inside group
messages, and the records of __consumer_offsets / __transaction_state.

Payload bytes come from independent encoders: kafka-python 3.0.12 (``kafka.protocol.consumer.metadata``) and
kio 0.6.5 (``kio.schema.consumer_protocol_*``, which writes bodies without the int16 version, so the tests
prefix it). Whole group frames come from kafka-python's message classes. Internal-topic records are packed
by hand below from Kafka's documented layouts, independently of kafkalab's JSON schema files.
"""
from __future__ import annotations

import io
import json
import struct

import pytest

from kafkalab.protocol import (DecodeError, EncodeError, FieldNode, decode_request, decode_response,
                               encode_request, encode_response)
from kafkalab.protocol.payloads import (ASSIGNMENT, SITES, SUBSCRIPTION, attach_payloads, decode_offsets_record,
                                        decode_payload, decode_transaction_record, detach_payloads,
                                        encode_payload, payload_names, payload_spec, trace_payload)
from kafkalab.protocol.schema.registry import message_spec

kp_metadata = pytest.importorskip("kafka.protocol.consumer.metadata")
kp_group = pytest.importorskip("kafka.protocol.consumer.group")
kp_admin_groups = pytest.importorskip("kafka.protocol.admin.groups")
KpSubscription = kp_metadata.ConsumerProtocolSubscription
KpAssignment = kp_metadata.ConsumerProtocolAssignment

JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 11, 14, 15


# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------

def assert_tiles(root: FieldNode, start: int, end: int) -> None:
    """The leaves under ``root`` cover [start, end) exactly once, in order, and containers span children."""
    pos = start
    for leaf in root.leaves():
        assert leaf.start == pos, f"gap/overlap at {pos}: {leaf.path!r} spans {leaf.start}..{leaf.end}"
        assert leaf.end >= leaf.start
        pos = leaf.end
    assert pos == end, f"leaves stop at {pos}, expected {end}"
    for node in root.walk():
        if node.children:
            assert node.children[0].start == node.start and node.children[-1].end == node.end, node


def kp_subscription(version: int, topics=("orders", "payments"), user_data=b"\x00\x01sticky", owned=(),
                    generation_id=-1, rack_id=None) -> bytes:
    kw = {"topics": list(topics), "user_data": user_data}
    if version >= 1:
        kw["owned_partitions"] = [KpSubscription.TopicPartition(topic=t, partitions=list(p)) for t, p in owned]
    if version >= 2:
        kw["generation_id"] = generation_id
    if version >= 3:
        kw["rack_id"] = rack_id
    return KpSubscription(version=version, **kw).encode()


def kp_assignment(version: int, assigned=(("orders", (0, 2)), ("payments", (1,))), user_data=None) -> bytes:
    parts = [KpAssignment.TopicPartition(topic=t, partitions=list(p)) for t, p in assigned]
    return KpAssignment(version=version, assigned_partitions=parts, user_data=user_data).encode()


def kio_bytes(entity) -> bytes:
    from kio.serial import entity_writer

    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return struct.pack(">h", type(entity).__version__) + buf.getvalue()


def kio_subscription(version: int):
    import importlib

    from kio.static.primitive import i32
    mod = importlib.import_module(f"kio.schema.consumer_protocol_subscription.v{version}.data")
    kw = {"topics": ("orders", "audit"), "user_data": b"\xff\x00ud"}
    if version >= 1:
        kw["owned_partitions"] = (mod.TopicPartition(topic="orders", partitions=(i32(3), i32(1))),)
    if version >= 2:
        kw["generation_id"] = i32(41)
    if version >= 3:
        kw["rack_id"] = "rack-b"
    return mod.ConsumerProtocolSubscription(**kw)


def kio_assignment(version: int):
    import importlib

    from kio.static.primitive import i32
    mod = importlib.import_module(f"kio.schema.consumer_protocol_assignment.v{version}.data")
    parts = (mod.TopicPartition(topic="orders", partitions=(i32(0), i32(5))),
             mod.TopicPartition(topic="audit", partitions=()))
    return mod.ConsumerProtocolAssignment(assigned_partitions=parts, user_data=b"assignor")


def kio_plain(value):
    """A kio entity as plain Python data (tuples -> lists, i32 -> int)."""
    import dataclasses

    if dataclasses.is_dataclass(value):
        return {f.name: kio_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [kio_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (bytes, str)):
        return value
    if isinstance(value, int):
        return int(value)
    return value


def join_group_request_frame(version: int, protocols, protocol_type="consumer") -> bytes:
    """A whole JoinGroup request frame built by kafka-python."""
    P = kp_group.JoinGroupRequest.JoinGroupRequestProtocol
    kw = {"group_id": "lab-group", "session_timeout_ms": 10000, "member_id": "", "protocol_type": protocol_type,
          "protocols": [P(name=name, metadata=meta) for name, meta in protocols]}
    if version >= 1:
        kw["rebalance_timeout_ms"] = 30000
    if version >= 5:
        kw["group_instance_id"] = None
    if version >= 8:
        kw["reason"] = "lab"
    request = kp_group.JoinGroupRequest(version=version, **kw)
    request.with_header(correlation_id=17, client_id="kafkalab-test")
    return request.encode(header=True, framed=True)


def join_group_response_frame(version: int, members, protocol_type="consumer") -> bytes:
    M = kp_group.JoinGroupResponse.JoinGroupResponseMember
    kw = {"error_code": 0, "generation_id": 4, "protocol_name": "range", "leader": "m-1", "member_id": "m-1",
          "members": [M(member_id=mid, metadata=meta) for mid, meta in members]}
    if version >= 2:
        kw["throttle_time_ms"] = 0
    if version >= 5:
        for m in kw["members"]:
            m.group_instance_id = None
    if version >= 7:
        kw["protocol_type"] = protocol_type
    if version >= 9:
        kw["skip_assignment"] = False
    response = kp_group.JoinGroupResponse(version=version, **kw)
    response.with_header(correlation_id=18)
    return response.encode(header=True, framed=True)


def sync_group_request_frame(version: int, assignments, protocol_type="consumer") -> bytes:
    A = kp_group.SyncGroupRequest.SyncGroupRequestAssignment
    kw = {"group_id": "lab-group", "generation_id": 4, "member_id": "m-1",
          "assignments": [A(member_id=mid, assignment=data) for mid, data in assignments]}
    if version >= 3:
        kw["group_instance_id"] = None
    if version >= 5:
        kw["protocol_type"] = protocol_type
        kw["protocol_name"] = "range"
    request = kp_group.SyncGroupRequest(version=version, **kw)
    request.with_header(correlation_id=19, client_id="kafkalab-test")
    return request.encode(header=True, framed=True)


def sync_group_response_frame(version: int, assignment: bytes, protocol_type="consumer", error_code=0) -> bytes:
    kw = {"error_code": error_code, "assignment": assignment}
    if version >= 1:
        kw["throttle_time_ms"] = 0
    if version >= 5:
        kw["protocol_type"] = protocol_type
        kw["protocol_name"] = "range"
    response = kp_group.SyncGroupResponse(version=version, **kw)
    response.with_header(correlation_id=20)
    return response.encode(header=True, framed=True)


def roundtrip_request(frame: bytes):
    """Plain and annotated decodes agree; the body re-encodes to the same frame; the tree tiles the frame."""
    plain = decode_request(frame)
    annotated = decode_request(frame, annotate=True)
    assert not annotated.diagnostics
    assert annotated.body == plain.body
    assert encode_request(plain.api_key, plain.api_version, plain.body, correlation_id=plain.correlation_id,
                          client_id=plain.client_id) == frame
    assert_tiles(annotated.tree, 0, len(frame))
    return plain, annotated


def roundtrip_response(frame: bytes, api_key: int, version: int):
    plain = decode_response(frame, api_key, version)
    annotated = decode_response(frame, api_key, version, annotate=True)
    assert not annotated.diagnostics
    assert annotated.body == plain.body
    assert encode_response(api_key, version, plain.body, correlation_id=plain.correlation_id) == frame
    assert_tiles(annotated.tree, 0, len(frame))
    return plain, annotated


# ---------------------------------------------------------------------------------------------------------
# loading and the table
# ---------------------------------------------------------------------------------------------------------

def test_payload_specs_load_once() -> None:
    assert set(payload_names()) == {
        "consumer_protocol_subscription", "consumer_protocol_assignment", "offset_commit_key",
        "offset_commit_value", "group_metadata_key", "group_metadata_value", "transaction_log_key",
        "transaction_log_value",
        *(f"consumer_group_{kind}_{part}" for kind in (
            "metadata", "partition_metadata", "member_metadata", "target_assignment_metadata",
            "target_assignment_member", "current_member_assignment") for part in ("key", "value")),
        "user_scram_credential_record", "remove_user_scram_credential_record", "access_control_entry_record",
        "remove_access_control_entry_record", "client_quota_record"}
    spec = payload_spec(SUBSCRIPTION)
    assert spec.kind == "payload" and spec.name == "ConsumerProtocolSubscription" and spec.versions == (0, 3)
    assert payload_spec(SUBSCRIPTION) is spec
    with pytest.raises(Exception, match="unknown payload"):
        payload_spec("no_such_payload")


def _field(fields, name):
    return next((f for f in fields if f.name == name), None)


def _resolve(spec_fields, dotted: str):
    fields, field = spec_fields, None
    for step in dotted.split("."):
        field = _field(fields, step.removesuffix("[]"))
        assert field is not None, f"{dotted}: no field {step}"
        if step.endswith("[]"):
            assert field.type == "array" and field.items == "struct", dotted
        fields = field.fields
    return field


@pytest.mark.parametrize("site", SITES, ids=lambda s: f"{s.owner}:{s.path}")
def test_sites_match_the_schemas(site) -> None:
    """Every table entry names a bytes field, and its protocol-type field exists from ``type_since``."""
    if isinstance(site.owner, tuple):
        api_key, kind = site.owner
        spec = message_spec(api_key, kind, message_spec(api_key, kind, 0).versions[1])
    else:
        spec = payload_spec(site.owner)
    assert _resolve(spec.fields, site.path).type == "bytes"
    assert site.payload in payload_names()
    if site.type_field:
        assert site.path.startswith(site.type_field.rsplit(".", 1)[0] + ".") or "." not in site.type_field
        type_field = _resolve(spec.fields, site.type_field)
        assert type_field.type == "string" and type_field.versions[0] == site.type_since


# ---------------------------------------------------------------------------------------------------------
# one payload: kafka-python and kio bytes
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(4))
@pytest.mark.parametrize("user_data", [None, b"", b"\x00\x01sticky"])
def test_kafka_python_subscription(version: int, user_data) -> None:
    owned = (("orders", (0, 3)), ("payments", ()))
    data = kp_subscription(version, user_data=user_data, owned=owned, generation_id=7, rack_id="eu-1a")
    got = decode_payload(SUBSCRIPTION, data)
    expect = {"version": version, "topics": ["orders", "payments"], "user_data": user_data}
    if version >= 1:
        expect["owned_partitions"] = [{"topic": "orders", "partitions": [0, 3]},
                                      {"topic": "payments", "partitions": []}]
    if version >= 2:
        expect["generation_id"] = 7
    if version >= 3:
        expect["rack_id"] = "eu-1a"
    assert got == expect
    assert encode_payload(SUBSCRIPTION, got) == data
    # and kafka-python reads what kafkalab writes
    back = KpSubscription.decode(encode_payload(SUBSCRIPTION, got))
    assert list(back.topics) == ["orders", "payments"]


@pytest.mark.parametrize("version", range(4))
@pytest.mark.parametrize("user_data", [None, b"lead"])
def test_kafka_python_assignment(version: int, user_data) -> None:
    data = kp_assignment(version, user_data=user_data)
    got = decode_payload(ASSIGNMENT, data)
    assert got == {"version": version, "assigned_partitions": [{"topic": "orders", "partitions": [0, 2]},
                                                               {"topic": "payments", "partitions": [1]}],
                   "user_data": user_data}
    assert encode_payload(ASSIGNMENT, got) == data


@pytest.mark.parametrize("version", range(4))
def test_kio_subscription(version: int) -> None:
    entity = kio_subscription(version)
    data = kio_bytes(entity)
    got = decode_payload(SUBSCRIPTION, data)
    assert got == {"version": version, **kio_plain(entity)}
    assert encode_payload(SUBSCRIPTION, got) == data
    from kio.serial import entity_reader
    value, size = entity_reader(type(entity))(encode_payload(SUBSCRIPTION, got), 2)
    assert value == entity


@pytest.mark.parametrize("version", range(4))
def test_kio_assignment(version: int) -> None:
    entity = kio_assignment(version)
    data = kio_bytes(entity)
    got = decode_payload(ASSIGNMENT, data)
    assert got == {"version": version, **kio_plain(entity)}
    assert encode_payload(ASSIGNMENT, got) == data


@pytest.mark.parametrize("name,data", [
    (SUBSCRIPTION, kp_subscription(3, owned=(("orders", (1,)),), rack_id="r")),
    (ASSIGNMENT, kp_assignment(1, user_data=b"x")),
])
def test_trace_payload_tiles_and_offsets(name: str, data: bytes) -> None:
    parent = FieldNode("p", "p", "bytes", 100, 100 + len(data))
    trace_payload(name, data, parent, 100, "p")
    assert_tiles(parent, 100, 100 + len(data))
    first = parent.children[0]
    assert (first.path, first.name, first.wire_type, first.start, first.end) == ("p.version", "version", "int16",
                                                                                 100, 102)
    assert all(node.path.startswith("p.") for node in parent.walk() if node is not parent)
    root = FieldNode("", "x", "payload", 0, len(data))
    trace_payload(name, data, root, 0, "")
    assert root.children[0].path == "version"
    assert_tiles(root, 0, len(data))


def test_trace_payload_rejects_bad_bytes_without_touching_parent() -> None:
    parent = FieldNode("p", "p", "bytes", 0, 5)
    with pytest.raises(DecodeError):
        trace_payload(SUBSCRIPTION, b"\x00\x00\x00\x00\x00", parent, 0, "p")
    assert parent.children == []


def test_decode_errors() -> None:
    good = kp_subscription(1)
    with pytest.raises(DecodeError, match="trailing"):
        decode_payload(SUBSCRIPTION, good + b"\x00")
    with pytest.raises(DecodeError):
        decode_payload(SUBSCRIPTION, good[:-1])
    with pytest.raises(DecodeError):
        decode_payload(SUBSCRIPTION, b"\x00")
    with pytest.raises(DecodeError, match="not supported"):
        decode_payload(SUBSCRIPTION, b"\xff\xff" + good[2:])
    with pytest.raises(DecodeError, match="not supported"):   # only consumer payloads read newer versions
        decode_payload("offset_commit_value", struct.pack(">hq", 5, 1))
    with pytest.raises(EncodeError):
        encode_payload(SUBSCRIPTION, {"topics": []})
    with pytest.raises(EncodeError):
        encode_payload(SUBSCRIPTION, {"version": 0, "topics": [], "no_such_field": 1})


def test_newer_version_read_with_newest_layout() -> None:
    """Kafka reads a subscription newer than v3 with the v3 layout and ignores what follows."""
    v3 = kp_subscription(3, owned=(("orders", (0,)),), generation_id=2, rack_id="r1")
    future = struct.pack(">h", 7) + v3[2:] + b"\x00\x00\x00\x2a"
    got = decode_payload(SUBSCRIPTION, future)
    assert got["version"] == 7 and got["rack_id"] == "r1" and got["generation_id"] == 2
    # the tail is not lost in a trace: one leaf covers it
    root = FieldNode("", "x", "payload", 0, len(future))
    trace_payload(SUBSCRIPTION, future, root, 0, "")
    assert_tiles(root, 0, len(future))
    assert root.children[-1].name == "_ignored" and root.children[-1].value == b"\x00\x00\x00\x2a"
    # in a message it stays bytes: the decoded dict would not re-encode the tail
    frame = join_group_request_frame(5, [("range", future)])
    plain, _ = roundtrip_request(frame)
    assert plain.body["protocols"][0]["metadata"] == future
    # a newer version with nothing extra round-trips and is substituted
    exact = struct.pack(">h", 4) + v3[2:]
    assert encode_payload(SUBSCRIPTION, decode_payload(SUBSCRIPTION, exact)) == exact
    plain, _ = roundtrip_request(join_group_request_frame(5, [("range", exact)]))
    assert plain.body["protocols"][0]["metadata"]["version"] == 4


# ---------------------------------------------------------------------------------------------------------
# in messages
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(10))
def test_join_group_request_frame_roundtrip(version: int) -> None:
    kp_meta = kp_subscription(1, owned=(("orders", (0,)),))
    kio_meta = kio_bytes(kio_subscription(3))
    frame = join_group_request_frame(version, [("cooperative-sticky", kp_meta), ("range", kio_meta)])
    plain, annotated = roundtrip_request(frame)
    protocols = plain.body["protocols"]
    assert protocols[0]["metadata"] == decode_payload(SUBSCRIPTION, kp_meta)
    assert protocols[1]["metadata"] == {"version": 3, **kio_plain(kio_subscription(3))}
    for i, meta in enumerate((kp_meta, kio_meta)):
        node = annotated.tree.find(f"protocols[{i}].metadata")
        assert node.wire_type == ("compact_bytes" if version >= 6 else "bytes")
        assert node.end - node.start == len(meta) + (1 if version >= 6 else 4)
        assert [c.name for c in node.children][:3] == ["length", "version", "topics"]
        assert node.children[0].value == len(meta)
        assert node.children[1].start == node.end - len(meta)
        assert node.find(f"protocols[{i}].metadata.topics[0]").value == ("orders")
    json.dumps(plain.to_dict())  # still plain data


def test_join_group_request_other_protocol_type_stays_bytes() -> None:
    meta = kp_subscription(0)   # decodes fine, but the group is not a consumer group
    frame = join_group_request_frame(7, [("connect-v1", meta)], protocol_type="connect")
    plain, annotated = roundtrip_request(frame)
    assert plain.body["protocols"][0]["metadata"] == meta
    assert annotated.tree.find("protocols[0].metadata").is_leaf


@pytest.mark.parametrize("corrupt", [
    b"\x00\x00\x00\x00\x00\x09ab",                      # topic count 0, then junk (trailing bytes)
    b"\x00\x01\x00\x00\x00\x05",                          # array count larger than the bytes left
    b"\x7f\xff" + b"\x00" * 10,                          # version from the future, v3 layout does not fit
    b"\xff\xfe\x00\x00\x00\x00\xff\xff\xff\xff",          # negative version
    b"\x00",                                              # too short for a version
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",     # valid v0 plus one trailing byte
])
def test_corrupt_payload_stays_bytes(corrupt: bytes) -> None:
    frame = join_group_request_frame(6, [("range", corrupt), ("roundrobin", kp_subscription(0))])
    plain, annotated = roundtrip_request(frame)
    assert plain.body["protocols"][0]["metadata"] == corrupt
    assert isinstance(plain.body["protocols"][1]["metadata"], dict)
    assert annotated.tree.find("protocols[0].metadata").is_leaf
    assert not any(node.malformed for node in annotated.tree.walk())


@pytest.mark.parametrize("version", [0, 5, 6, 7, 9])
def test_join_group_response(version: int) -> None:
    members = [("m-1", kp_subscription(2, generation_id=3)), ("m-2", kio_bytes(kio_subscription(0)))]
    plain, annotated = roundtrip_response(join_group_response_frame(version, members), JOIN_GROUP, version)
    assert [m["metadata"]["version"] for m in plain.body["members"]] == [2, 0]
    assert not annotated.tree.find("members[1].metadata").is_leaf


def test_join_group_response_type_from_v7_decides() -> None:
    meta = kp_subscription(0)
    plain, _ = roundtrip_response(join_group_response_frame(7, [("m", meta)], "connect"), JOIN_GROUP, 7)
    assert plain.body["members"][0]["metadata"] == meta
    # before v7 the type is not on the wire: bytes that round-trip exactly are decoded, others are not
    plain, _ = roundtrip_response(join_group_response_frame(6, [("m", meta), ("n", b"\x00\x03junk")]),
                                  JOIN_GROUP, 6)
    assert plain.body["members"][0]["metadata"]["version"] == 0
    assert plain.body["members"][1]["metadata"] == b"\x00\x03junk"


@pytest.mark.parametrize("version", range(6))
def test_sync_group_request(version: int) -> None:
    kp = kp_assignment(0)
    kio = kio_bytes(kio_assignment(3))
    plain, annotated = roundtrip_request(sync_group_request_frame(version, [("m-1", kp), ("m-2", kio), ("m-3", b"")]))
    assignments = plain.body["assignments"]
    assert assignments[0]["assignment"] == decode_payload(ASSIGNMENT, kp)
    assert assignments[1]["assignment"] == {"version": 3, **kio_plain(kio_assignment(3))}
    assert assignments[2]["assignment"] == b""           # empty bytes are "no payload"
    assert annotated.tree.find("assignments[0].assignment.assigned_partitions[1].topic").value == "payments"


@pytest.mark.parametrize("version", range(6))
def test_sync_group_response(version: int) -> None:
    data = kp_assignment(3, user_data=b"ud")
    plain, annotated = roundtrip_response(sync_group_response_frame(version, data), SYNC_GROUP, version)
    assert plain.body["assignment"] == decode_payload(ASSIGNMENT, data)
    node = annotated.tree.find("assignment")
    assert node.value == plain.body["assignment"] and node.children[1].name == "version"
    # an error response carries no assignment
    plain, _ = roundtrip_response(sync_group_response_frame(version, b"", error_code=27), SYNC_GROUP, version)
    assert plain.body["assignment"] == b""


def test_sync_group_v5_other_protocol_type_stays_bytes() -> None:
    data = kp_assignment(0)
    plain, _ = roundtrip_response(sync_group_response_frame(5, data, protocol_type="connect"), SYNC_GROUP, 5)
    assert plain.body["assignment"] == data
    plain, _ = roundtrip_request(sync_group_request_frame(5, [("m", data)], protocol_type="connect"))
    assert plain.body["assignments"][0]["assignment"] == data


@pytest.mark.parametrize("version", range(7))
def test_describe_groups_response(version: int) -> None:
    D = kp_admin_groups.DescribeGroupsResponse
    G, M = D.DescribedGroup, D.DescribedGroup.DescribedGroupMember
    sub, asg = kp_subscription(1, owned=(("orders", (0,)),)), kp_assignment(1)

    def member(mid):
        m = M(member_id=mid, client_id="c", client_host="/10.0.0.1", member_metadata=sub, member_assignment=asg)
        if version >= 4:
            m.group_instance_id = None
        return m

    def group(gid, ptype):
        g = G(error_code=0, group_id=gid, group_state="Stable", protocol_type=ptype, protocol_data="range",
              members=[member("m-1"), member("m-2")])
        if version >= 3:
            g.authorized_operations = None   # kafka-python: None is "not requested" (INT32_MIN)
        if version >= 6:
            g.error_message = None
        return g

    kw = {"groups": [group("consumers", "consumer"), group("workers", "connect")]}
    if version >= 1:
        kw["throttle_time_ms"] = 0
    response = D(version=version, **kw)
    response.with_header(correlation_id=21)
    frame = response.encode(header=True, framed=True)
    plain, annotated = roundtrip_response(frame, DESCRIBE_GROUPS, version)
    consumers, workers = plain.body["groups"]
    for m in consumers["members"]:
        assert m["member_metadata"] == decode_payload(SUBSCRIPTION, sub)
        assert m["member_assignment"] == decode_payload(ASSIGNMENT, asg)
    for m in workers["members"]:
        assert (m["member_metadata"], m["member_assignment"]) == (sub, asg)
    assert not annotated.tree.find("groups[0].members[1].member_assignment").is_leaf
    assert annotated.tree.find("groups[1].members[1].member_assignment").is_leaf


# ---------------------------------------------------------------------------------------------------------
# attach / detach directly
# ---------------------------------------------------------------------------------------------------------

def test_detach_copies_only_what_changes() -> None:
    meta = kp_subscription(0)
    body = decode_request(join_group_request_frame(5, [("a", meta), ("b", b"opaque")])).body
    protocols = body["protocols"]
    out = detach_payloads(JOIN_GROUP, "request", body)
    assert out is not body and out["protocols"] is not protocols
    assert out["protocols"][0]["metadata"] == meta
    assert out["protocols"][1] is protocols[1]                 # unchanged item shared
    assert isinstance(body["protocols"][0]["metadata"], dict)  # input untouched
    assert detach_payloads(JOIN_GROUP, "request", out) is out  # nothing left to change
    assert detach_payloads(JOIN_GROUP, "request", None) is None
    produce = {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": {"version": 0}}]}]}
    assert detach_payloads(0, "request", produce) is produce


def test_encode_from_hand_built_dicts() -> None:
    """A body may be written with payload dicts from scratch: encode_request turns them into bytes."""
    body = {"group_id": "g", "generation_id": 1, "member_id": "m", "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": "m", "assignment": {"version": 0, "assigned_partitions": [
                {"topic": "orders", "partitions": [0, 1]}], "user_data": None}}]}
    frame = encode_request("SyncGroup", 5, body, correlation_id=1, client_id="c")
    raw = decode_request(frame)
    assert raw.body["assignments"][0]["assignment"]["assigned_partitions"][0]["partitions"] == [0, 1]
    wire = frame[-len(kp_assignment(0, assigned=(("orders", (0, 1)),), user_data=None)) - 2:-2]
    assert wire == kp_assignment(0, assigned=(("orders", (0, 1)),), user_data=None)


def test_attach_payloads_ignores_other_apis_and_missing_bodies() -> None:
    class Fake:
        api_key, kind, api_version, tree = 0, "request", 9, None
        body = {"topic_data": []}

    fake = Fake()
    attach_payloads(fake)
    assert fake.body == {"topic_data": []}
    fake.api_key, fake.body = JOIN_GROUP, None
    attach_payloads(fake)
    assert fake.body is None


# ---------------------------------------------------------------------------------------------------------
# __consumer_offsets and __transaction_state, packed by hand from the documented layouts
# ---------------------------------------------------------------------------------------------------------

def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def s(v): return b"\xff\xff" if v is None else i16(len(v.encode())) + v.encode()
def b(v): return i32(len(v)) + v


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def cs(v): return b"\x00" if v is None else uvarint(len(v.encode()) + 1) + v.encode()
def cb(v): return uvarint(len(v) + 1) + v


def offset_key(version: int, group: str, topic: str, partition: int) -> bytes:
    return i16(version) + s(group) + s(topic) + i32(partition)


@pytest.mark.parametrize("key_version", [0, 1])
def test_offset_commit_records(key_version: int) -> None:
    key = offset_key(key_version, "billing", "orders", 7)
    values = {
        0: i16(0) + i64(1234) + s("meta") + i64(1700000000000),
        1: i16(1) + i64(1234) + s("meta") + i64(1700000000000) + i64(1700000600000),
        2: i16(2) + i64(1234) + s("meta") + i64(1700000000000),
        3: i16(3) + i64(1234) + i32(5) + s("meta") + i64(1700000000000),
        4: i16(4) + i64(1234) + i32(5) + cs("meta") + i64(1700000000000) + uvarint(0),
    }
    for version, value in values.items():
        got = decode_offsets_record(key, value)
        assert got["key_type"] == "offset_commit"
        assert got["key"] == {"version": key_version, "group": "billing", "topic": "orders", "partition": 7}
        v = got["value"]
        assert (v["version"], v["offset"], v["metadata"], v["commit_timestamp"]) == (version, 1234, "meta",
                                                                                     1700000000000)
        assert v.get("leader_epoch", -1) == (5 if version >= 3 else -1)
        assert v.get("expire_timestamp", -1) == (1700000600000 if version == 1 else -1)
        assert encode_payload("offset_commit_value", v) == value
    tomb = decode_offsets_record(key, None)
    assert tomb["value"] is None and tomb["key"]["topic"] == "orders"


def test_offset_commit_value_v4_keeps_unknown_tags() -> None:
    value = i16(4) + i64(9) + i32(-1) + cs("") + i64(1) + uvarint(1) + uvarint(0) + uvarint(16) + b"\x01" * 16
    got = decode_offsets_record(offset_key(1, "g", "t", 0), value)["value"]
    assert got["offset"] == 9 and got["_unknown_tagged_fields"] == {0: b"\x01" * 16}
    assert encode_payload("offset_commit_value", got) == value


def group_member(version: int, member_id: str, subscription: bytes, assignment: bytes, flexible=False) -> bytes:
    st = cs if flexible else s
    by = cb if flexible else b
    out = st(member_id)
    if version >= 3:
        out += st(None)                      # group_instance_id
    out += st("client-1") + st("/10.0.0.9")
    if version >= 1:
        out += i32(300000)                   # rebalance_timeout
    out += i32(45000) + by(subscription) + by(assignment)
    return out + (uvarint(0) if flexible else b"")


@pytest.mark.parametrize("version", range(5))
def test_group_metadata_records(version: int) -> None:
    key = i16(2) + s("billing")
    flexible = version >= 4
    st = cs if flexible else s
    sub, asg = kp_subscription(1, owned=(("orders", (0,)),)), kio_bytes(kio_assignment(2))
    members = [group_member(version, "m-1", sub, asg, flexible), group_member(version, "m-2", b"", b"", flexible)]
    value = i16(version) + st("consumer") + i32(12) + st("range") + st("m-1")
    if version >= 2:
        value += i64(1700000000123)
    value += (uvarint(len(members) + 1) if flexible else i32(len(members))) + b"".join(members)
    value += uvarint(0) if flexible else b""
    got = decode_offsets_record(key, value)
    assert got["key_type"] == "group_metadata" and got["key"] == {"version": 2, "group": "billing"}
    v = got["value"]
    assert (v["version"], v["protocol_type"], v["generation"], v["protocol"], v["leader"]) == (
        version, "consumer", 12, "range", "m-1")
    assert v.get("current_state_timestamp", -1) == (1700000000123 if version >= 2 else -1)
    first, second = v["members"]
    assert (first["member_id"], first["client_id"], first["client_host"], first["session_timeout"]) == (
        "m-1", "client-1", "/10.0.0.9", 45000)
    assert first.get("rebalance_timeout", -1) == (300000 if version >= 1 else -1)
    # the consumer payloads inside are decoded too, and everything re-encodes
    assert first["subscription"] == decode_payload(SUBSCRIPTION, sub)
    assert first["assignment"] == {"version": 2, **kio_plain(kio_assignment(2))}
    assert second["subscription"] == b"" and second["assignment"] == b""
    assert encode_payload("group_metadata_value", v) == value
    root = FieldNode("", "value", "payload", 0, len(value))
    trace_payload("group_metadata_value", value, root, 0, "")
    assert_tiles(root, 0, len(value))
    assert root.find("members[0].subscription.owned_partitions[0].topic").value == "orders"
    shifted = FieldNode("value", "value", "bytes", 10, 10 + len(value))
    trace_payload("group_metadata_value", value, shifted, 10, "value")
    assert_tiles(shifted, 10, 10 + len(value))
    topic = shifted.find("value.members[0].subscription.owned_partitions[0].topic")
    assert topic.value == "orders" and value[topic.start - 10:topic.end - 10] == s("orders")
    assert decode_offsets_record(key, None)["value"] is None


def test_group_metadata_other_protocol_type_keeps_bytes() -> None:
    sub = kp_subscription(0)
    value = i16(0) + s("connect") + i32(1) + s("default") + s("m") + i32(1) + group_member(0, "m", sub, b"")
    got = decode_offsets_record(i16(2) + s("workers"), value)["value"]
    assert got["members"][0]["subscription"] == sub


def test_offsets_record_errors() -> None:
    with pytest.raises(DecodeError, match="key version 9"):        # share groups: not described
        decode_offsets_record(i16(9) + s("g"), None)
    with pytest.raises(DecodeError):
        decode_offsets_record(b"\x00", None)
    with pytest.raises(DecodeError, match="trailing"):
        decode_offsets_record(offset_key(1, "g", "t", 0) + b"\x00", None)
    with pytest.raises(DecodeError):
        decode_offsets_record(offset_key(1, "g", "t", 0), i16(0) + i64(1))
    with pytest.raises(DecodeError, match="not supported"):
        decode_offsets_record(offset_key(1, "g", "t", 0), i16(9) + i64(1) + s("") + i64(1))


def transaction_value_v0(partitions) -> bytes:
    out = i16(0) + i64(4001) + i16(3) + i32(60000) + struct.pack(">b", 2)
    if partitions is None:
        out += i32(-1)
    else:
        out += i32(len(partitions))
        for topic, ids in partitions:
            out += s(topic) + i32(len(ids)) + b"".join(i32(p) for p in ids)
    return out + i64(1700000000500) + i64(1700000000000)


@pytest.mark.parametrize("partitions", [None, [], [("orders", [0, 1]), ("audit", [])]])
def test_transaction_records_v0(partitions) -> None:
    key = i16(0) + s("tx-1")
    value = transaction_value_v0(partitions)
    got = decode_transaction_record(key, value)
    assert got["key_type"] == "transaction_log" and got["key"] == {"version": 0, "transactional_id": "tx-1"}
    v = got["value"]
    assert (v["producer_id"], v["producer_epoch"], v["transaction_timeout_ms"], v["transaction_status"]) == (
        4001, 3, 60000, 2)
    assert (v["transaction_last_update_timestamp_ms"], v["transaction_start_timestamp_ms"]) == (
        1700000000500, 1700000000000)
    expect = None if partitions is None else [{"topic": t, "partition_ids": ids} for t, ids in partitions]
    assert v["transaction_partitions"] == expect
    assert encode_payload("transaction_log_value", v) == value
    assert decode_transaction_record(key, None) == {"key_type": "transaction_log", "key": got["key"], "value": None}


def test_transaction_record_v1_tagged_fields() -> None:
    tags = (uvarint(3)
            + uvarint(0) + uvarint(8) + i64(3999)        # previous_producer_id
            + uvarint(1) + uvarint(8) + i64(4002)        # next_producer_id
            + uvarint(2) + uvarint(2) + i16(2))          # client_transaction_version
    value = (i16(1) + i64(4001) + i16(0) + i32(15000) + struct.pack(">b", 4)
             + uvarint(2) + cs("orders") + uvarint(2) + i32(3) + uvarint(0)
             + i64(5) + i64(4) + tags)
    v = decode_transaction_record(i16(0) + s("tx-2"), value)["value"]
    assert v["transaction_partitions"] == [{"topic": "orders", "partition_ids": [3]}]
    assert (v["previous_producer_id"], v["next_producer_id"], v["client_transaction_version"]) == (3999, 4002, 2)
    assert encode_payload("transaction_log_value", v) == value
    plain = i16(1) + value[2:len(value) - len(tags)] + uvarint(0)
    v = decode_transaction_record(i16(0) + s("tx-2"), plain)["value"]
    assert (v["previous_producer_id"], v["next_producer_id"], v["client_transaction_version"]) == (-1, -1, 0)


def test_transaction_record_errors() -> None:
    with pytest.raises(DecodeError, match="key version 1"):
        decode_transaction_record(i16(1) + s("tx"), None)
    with pytest.raises(DecodeError):
        decode_transaction_record(i16(0) + s("tx"), transaction_value_v0([])[:-1])
