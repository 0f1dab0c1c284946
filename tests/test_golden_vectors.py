"""Golden vectors: frames real Kafka clients sent to / received from librdkafka's mock broker.

The vectors and ``manifest.json`` live in ``tests/golden/`` (made by ``tests/golden/record_golden.py``; see
the README there). The expectations checked here come from the recording script, not from a decoder: the
topics it created, the records it asked each client to produce, the broker address it advertised, and the
request-header prefix it parsed to pair responses with requests.

Three groups of tests:

* vector sanity (no kafkalab needed): files match the manifest, frames are well formed, and the independent
  decoder ``kio`` accepts every body it has a schema for;
* kafkalab's codec against each vector: header fields, byte-identical re-encoding, annotated trees that cover
  every byte, and spot checks of values from the manifest;
* kafkalab's decoded bodies against kio's, field by field.

kafkalab is imported inside the tests so this module collects before the codec exists.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden"
MANIFEST: dict[str, Any] = json.loads((GOLDEN / "manifest.json").read_text())
FILES: list[dict[str, Any]] = MANIFEST["files"]

PRODUCE, FETCH, METADATA, FIND_COORDINATOR, API_VERSIONS = 0, 1, 3, 10, 18


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["file"].removesuffix(".bin") for e in entries]


def _params(pred=lambda e: True) -> Any:
    chosen = [e for e in FILES if pred(e)]
    return pytest.mark.parametrize("entry", chosen, ids=_ids(chosen))


def _frame(entry: dict[str, Any]) -> bytes:
    return (GOLDEN / entry["file"]).read_bytes()


def _is_request(e: dict[str, Any]) -> bool:
    return e["direction"] == "request"


def _is_response(e: dict[str, Any]) -> bool:
    return e["direction"] == "response"


def _regular(e: dict[str, Any]) -> bool:
    """Not an irregular frame. The manifest marks with ``quirk`` the frames that are not exactly one
    well-formed body: the mock's UNSUPPORTED_VERSION ApiVersions replies, and frames kio does not consume
    exactly (trailing bytes after the body, or a body that ends early). See tests/golden/README.md."""
    return "quirk" not in e


def _codec():
    from kafkalab import protocol  # lazy: the codec may not exist yet when this module is collected

    return protocol


def _decode(entry: dict[str, Any], frame: bytes | None = None, **kw: Any) -> Any:
    p = _codec()
    frame = _frame(entry) if frame is None else frame
    if _is_request(entry):
        return p.decode_request(frame, **kw)
    return p.decode_response(frame, entry["api_key"], entry["api_version"], **kw)


# ---------------------------------------------------------------------------------------------------------
# Vector sanity (independent of kafkalab)
# ---------------------------------------------------------------------------------------------------------

def test_manifest_lists_every_file_and_corpus_is_small() -> None:
    on_disk = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.bin")}
    listed = [e["file"] for e in FILES]
    assert sorted(listed) == sorted(on_disk)
    assert len(set(listed)) == len(listed)
    assert sum(e["size"] for e in FILES) < 300_000
    clients = {e["client"] for e in FILES}
    assert clients == set(MANIFEST["clients"])


@_params()
def test_vector_frame_and_header_prefix(entry: dict[str, Any]) -> None:
    frame = _frame(entry)
    assert len(frame) == entry["size"]
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    name = Path(entry["file"]).name
    assert name.split("_", 1)[1] == (f"{entry['api_key']:02d}_{entry['api_name']}_v{entry['api_version']}"
                                      f"_{entry['direction']}.bin")
    if _is_request(entry):
        api_key, api_version, corr, cid_len = struct.unpack_from(">hhih", frame, 4)
        assert (api_key, api_version, corr) == (entry["api_key"], entry["api_version"], entry["correlation_id"])
        assert frame[14:14 + cid_len].decode() == entry["client_id"]
    else:
        assert struct.unpack_from(">i", frame, 4)[0] == entry["correlation_id"]
    assert entry["client_id"] == MANIFEST["clients"][entry["client"]]["client_id"]


# ---------------------------------------------------------------------------------------------------------
# kio: an independent decoder (kio.index / kio.serial.entity_reader)
# ---------------------------------------------------------------------------------------------------------

def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = _read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
    return pos


def _kio_schema(entry: dict[str, Any]) -> type | None:
    try:
        from kio.index import load_request_schema, load_response_schema
    except ImportError:  # pragma: no cover - kio is a test dependency
        pytest.skip("kio not installed")
    loader = load_request_schema if _is_request(entry) else load_response_schema
    try:
        return loader(entry["api_key"], entry["api_version"])
    except Exception:  # noqa: BLE001 - kio raises its own UnknownAPIKey / UnknownEntity
        return None


def _body_offset(entry: dict[str, Any], frame: bytes, flexible: bool) -> int:
    """Where the body starts: request header v1/v2, response header v0/v1 (ApiVersions responses: always v0)."""
    if _is_request(entry):
        (cid_len,) = struct.unpack_from(">h", frame, 12)
        pos = 14 + max(cid_len, 0)
        return _skip_tagged_fields(frame, pos) if flexible else pos
    pos = 8
    if flexible and entry["api_key"] != API_VERSIONS:
        pos = _skip_tagged_fields(frame, pos)
    return pos


def _kio_decode(entry: dict[str, Any]) -> Any:
    """kio's entity for the vector's body, or pytest.skip when kio has no schema for it."""
    schema = _kio_schema(entry)
    if schema is None:
        pytest.skip(f"kio has no schema for {entry['api_name']} v{entry['api_version']} {entry['direction']}")
    from kio.serial import entity_reader

    frame = _frame(entry)
    start = _body_offset(entry, frame, bool(getattr(schema, "__flexible__", False)))
    value, size = entity_reader(schema)(frame, start)
    assert start + size == len(frame), f"kio consumed {size} of {len(frame) - start} body bytes"
    return value


@_params(_regular)
def test_kio_accepts_vector(entry: dict[str, Any]) -> None:
    _kio_decode(entry)


def _plain(value: Any) -> Any:
    """kio scalars as plain Python values (enums -> ints, timedeltas -> ms, datetimes -> epoch ms)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def compare_with_kio(ours: Any, theirs: Any, path: str = "body") -> tuple[list[str], int]:
    """Compare kafkalab's decoded value with kio's. Returns (mismatches, number of scalars compared).

    kio entities are frozen dataclasses with snake_case attributes; kio drops the ``_ms`` suffix of
    duration fields (``timeout`` for ``timeout_ms``) and uses timedeltas/datetimes there; arrays are tuples;
    the all-zero UUID reads as None.
    kio leaves RECORDS fields as raw bytes while kafkalab decodes them into batches: those are not compared.
    Bytes fields that kafkalab decodes into a dict (embedded consumer-protocol structures) are checked only
    loosely: the strings kafkalab decoded must appear in kio's bytes.
    Fields that kio has and kafkalab lacks are mismatches; extra kafkalab keys are ignored.
    """
    mismatches: list[str] = []
    compared = 0
    if dataclasses.is_dataclass(theirs) and not isinstance(theirs, type):
        if not isinstance(ours, dict):
            return [f"{path}: kafkalab has {type(ours).__name__}, kio has a struct"], 0
        for f in dataclasses.fields(theirs):
            key = next((k for k in (f.name, f.name + "_ms") if k in ours), None)
            if key is None:
                mismatches.append(f"{path}.{f.name}: missing in kafkalab's body")
                continue
            sub_m, sub_c = compare_with_kio(ours[key], getattr(theirs, f.name), f"{path}.{key}")
            mismatches += sub_m
            compared += sub_c
        return mismatches, compared
    if isinstance(theirs, tuple):
        if not isinstance(ours, (list, tuple)):
            return [f"{path}: kafkalab has {type(ours).__name__}, kio has an array"], 0
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} elements vs kio's {len(theirs)}"], 0
        for i, (a, b) in enumerate(zip(ours, theirs)):
            sub_m, sub_c = compare_with_kio(a, b, f"{path}[{i}]")
            mismatches += sub_m
            compared += sub_c
        return mismatches, compared
    if isinstance(theirs, (bytes, bytearray, memoryview)) and not isinstance(ours, (bytes, bytearray, memoryview)):
        if isinstance(ours, (list, tuple)) or hasattr(ours, "records"):
            return [], 0  # RECORDS: kio keeps raw bytes, kafkalab decodes batches
        if isinstance(ours, dict):
            # An embedded structure kafkalab decodes and kio keeps as bytes (JoinGroup metadata, SyncGroup
            # assignments): every string kafkalab found must be spelled in those bytes.
            strs: set[str] = set()
            _strings_and_blobs(ours, strs, [])
            missing = sorted(x for x in strs if x.encode() not in bytes(theirs))
            return [f"{path}: decoded strings {missing} not in kio's bytes"] if missing else [], len(strs)
    if theirs is None and isinstance(ours, (list, tuple)) and not ours:
        return [], 1  # null RECORDS vs no batches
    if theirs is None and ours == uuid.UUID(int=0):
        return [], 1  # kio reads the all-zero UUID as None
    a, b = ours, _plain(theirs)
    if isinstance(b, uuid.UUID) or isinstance(a, uuid.UUID):
        a, b = str(a), str(b)
    if a != b:
        mismatches.append(f"{path}: kafkalab {a!r} != kio {b!r}")
    return mismatches, 1


@_params(_regular)
def test_body_matches_kio(entry: dict[str, Any]) -> None:
    theirs = _kio_decode(entry)
    ours = _decode(entry).body
    mismatches, compared = compare_with_kio(ours, theirs)
    assert not mismatches, "\n".join(mismatches)
    assert compared > 0 or not dataclasses.fields(theirs)


# ---------------------------------------------------------------------------------------------------------
# kafkalab's codec against the vectors
# ---------------------------------------------------------------------------------------------------------

@_params(lambda e: _is_request(e) and _regular(e))
def test_request_header(entry: dict[str, Any]) -> None:
    req = _decode(entry)
    assert req.api_key == entry["api_key"]
    assert req.api_name == entry["api_name"]
    assert req.api_version == entry["api_version"]
    assert req.correlation_id == entry["correlation_id"]
    assert req.client_id == entry["client_id"]
    assert isinstance(req.body, dict)


@_params(lambda e: _is_response(e) and _regular(e))
def test_response_header(entry: dict[str, Any]) -> None:
    resp = _decode(entry)
    assert resp.correlation_id == entry["correlation_id"]
    assert isinstance(resp.body, dict)


@_params(lambda e: _is_request(e) and _regular(e))
def test_request_reencodes_byte_identically(entry: dict[str, Any]) -> None:
    p = _codec()
    frame = _frame(entry)
    req = p.decode_request(frame)
    out = p.encode_request(entry["api_key"], entry["api_version"], req.body,
                           correlation_id=entry["correlation_id"], client_id=entry["client_id"])
    assert out == frame
    by_name = p.encode_request(entry["api_name"], entry["api_version"], req.body,
                               correlation_id=entry["correlation_id"], client_id=entry["client_id"])
    assert by_name == frame


@_params(lambda e: _is_response(e) and _regular(e))
def test_response_reencodes_byte_identically(entry: dict[str, Any]) -> None:
    p = _codec()
    frame = _frame(entry)
    resp = p.decode_response(frame, entry["api_key"], entry["api_version"])
    out = p.encode_response(entry["api_key"], entry["api_version"], resp.body, correlation_id=entry["correlation_id"])
    assert out == frame


def _assert_leaves_cover(tree: Any, frame: bytes) -> None:
    leaves = list(tree.leaves())
    assert leaves, "annotated tree has no leaves"
    pos = 0
    for leaf in leaves:
        assert leaf.start == pos, f"gap/overlap at {pos}: leaf {leaf.path!r} spans {leaf.start}..{leaf.end}"
        assert leaf.end > leaf.start or leaf.end == leaf.start == pos, leaf
        pos = leaf.end
    assert pos == len(frame), f"leaves stop at {pos} of {len(frame)} bytes"
    assert not [n.path for n in tree.walk() if n.malformed], "real client frames must not be flagged malformed"


@_params(lambda e: _is_request(e) and _regular(e))
def test_request_tree_leaves_cover_every_byte(entry: dict[str, Any]) -> None:
    frame = _frame(entry)
    _assert_leaves_cover(_decode(entry, annotate=True).tree, frame)


@_params(lambda e: _is_response(e) and _regular(e))
def test_response_tree_leaves_cover_every_byte(entry: dict[str, Any]) -> None:
    frame = _frame(entry)
    try:
        decoded = _decode(entry, annotate=True)
    except TypeError as e:  # the contract only names annotate= for decode_request
        pytest.skip(f"decode_response(annotate=True) unsupported: {e}")
    _assert_leaves_cover(decoded.tree, frame)


# ---------------------------------------------------------------------------------------------------------
# Spot checks of values the recording script chose
# ---------------------------------------------------------------------------------------------------------

def _strings_and_blobs(value: Any, strs: set[str], blobs: list[bytes]) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _strings_and_blobs(v, strs, blobs)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings_and_blobs(v, strs, blobs)
    elif isinstance(value, str):
        strs.add(value)
    elif isinstance(value, (bytes, bytearray)):
        blobs.append(bytes(value))


@_params(lambda e: e["topics_mentioned"] and _regular(e))
def test_topic_names_decode(entry: dict[str, Any]) -> None:
    """Every script-chosen topic name present in the frame is a decoded string (or inside a bytes field,
    e.g. JoinGroup subscription metadata or ConsumerGroupHeartbeat assignments)."""
    strs: set[str] = set()
    blobs: list[bytes] = []
    _strings_and_blobs(_decode(entry).body, strs, blobs)
    for t in entry["topics_mentioned"]:
        assert t in strs or any(t.encode() in b for b in blobs), f"topic {t!r} not decoded"


def _expected_records(recs: list[dict[str, Any]]) -> list[tuple[Any, Any, tuple]]:
    def b(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    return [(b(r["key"]), b(r["value"]), tuple((k, b(v)) for k, v in r["headers"])) for r in recs]


def _decoded_records(batches: Any) -> list[tuple[Any, Any, tuple]]:
    out = []
    for batch in batches or []:
        for r in batch.records:
            out.append((r.key, r.value, tuple((k, v) for k, v in r.headers)))
    return out


@_params(lambda e: e["api_key"] == PRODUCE and _is_request(e) and _regular(e))
def test_produce_request_records(entry: dict[str, Any]) -> None:
    produced = MANIFEST["clients"][entry["client"]]["produced"]
    assert entry["produced_topics"], "every Produce vector carries records the script chose"
    body = _decode(entry).body
    by_name = {t["name"]: t for t in body["topic_data"]}
    assert set(by_name) == set(entry["produced_topics"])
    for name in entry["produced_topics"]:
        parts = {p["index"]: p for p in by_name[name]["partition_data"]}
        assert set(parts) == {produced[name]["partition"]}
        assert _decoded_records(parts[0]["records"]) == _expected_records(produced[name]["records"])
    assert body["acks"] in (-1, 1)
    assert body["timeout_ms"] > 0


@_params(lambda e: e["api_key"] == FETCH and _is_response(e) and _regular(e))
def test_fetch_response_records(entry: dict[str, Any]) -> None:
    """Records of each fetched partition are a contiguous run of what the client produced to that topic."""
    body = _decode(entry).body
    produced = MANIFEST["clients"][entry["client"]]["produced"]
    fetchable = {t: _expected_records(p["records"]) for t, p in produced.items()}
    seen_values = set()
    for topic_resp in body["responses"]:
        name = topic_resp.get("topic")  # Fetch v13+ identifies topics by topic_id only
        candidates = [fetchable[name]] if name else list(fetchable.values())
        for part in topic_resp["partitions"]:
            got = _decoded_records(part["records"])
            if not got:
                continue
            assert part["partition_index"] == 0
            assert any(_is_contiguous_run(got, exp) for exp in candidates), f"unexpected records {got!r}"
            seen_values.update(v for _, v, _ in got)
    for v in entry["values_present_literally"]:
        assert v.encode() in seen_values


def _is_contiguous_run(got: list, expected: list) -> bool:
    return any(expected[i:i + len(got)] == got for i in range(len(expected) - len(got) + 1))


def _brokers_of(entry: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    if entry["api_key"] == METADATA:
        return body["brokers"]
    if entry["api_version"] >= 4:  # FindCoordinator v4+: batched coordinators
        return body["coordinators"]
    return [body]


@_params(lambda e: e["api_key"] in (METADATA, FIND_COORDINATOR) and _is_response(e) and _regular(e))
def test_advertised_broker(entry: dict[str, Any]) -> None:
    """The mock advertises the recording proxy, as the script told it to."""
    adv = MANIFEST["advertised_broker"]
    brokers = _brokers_of(entry, _decode(entry).body)
    assert [(b["node_id"], b["host"], b["port"]) for b in brokers] == [(adv["node_id"], adv["host"], adv["port"])]


@_params(lambda e: e["api_key"] == METADATA and _is_response(e) and _regular(e))
def test_metadata_topics(entry: dict[str, Any]) -> None:
    body = _decode(entry).body
    known = MANIFEST["topics"]
    for t in body["topics"]:
        if t["name"] in known:
            assert t["error_code"] == 0
            assert [p["partition_index"] for p in t["partitions"]] == list(range(known[t["name"]]["partitions"]))
            assert all(p["leader_id"] == MANIFEST["advertised_broker"]["node_id"] for p in t["partitions"])


@_params(lambda e: e["api_key"] == API_VERSIONS and _is_response(e))
def test_api_versions_response(entry: dict[str, Any]) -> None:
    if not _regular(entry):
        # The mock's UNSUPPORTED_VERSION reply: a decoder may reject the body; if it decodes, error_code is 35.
        from kafkalab.protocol.errors import DecodeError

        try:
            resp = _decode(entry)
        except DecodeError:
            return
        assert resp.correlation_id == entry["correlation_id"]
        assert resp.body["error_code"] == 35
        return
    body = _decode(entry).body
    assert body["error_code"] == entry["error_code"] == 0
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    # Every (api, version) some client used successfully against this mock is inside the advertised range.
    used = {(e["api_key"], e["api_version"]) for e in FILES if _is_response(e) and _regular(e)}
    for api_key, version in used:
        assert api_key in ranges, f"mock served api {api_key} but does not advertise it"
        lo, hi = ranges[api_key]
        assert lo <= version <= hi or api_key == API_VERSIONS


@_params(lambda e: e["api_key"] == API_VERSIONS and _is_request(e) and e["api_version"] >= 3 and _regular(e))
def test_api_versions_request_names_client_software(entry: dict[str, Any]) -> None:
    body = _decode(entry).body
    assert body["client_software_name"]
    assert body["client_software_version"]


# ---------------------------------------------------------------------------------------------------------
# Irregular frames (manifest "quirk"): real bytes that are not exactly one well-formed body
# ---------------------------------------------------------------------------------------------------------

@_params(lambda e: not _regular(e))
def test_irregular_frame_plain_decode_fails_cleanly_or_decodes(entry: dict[str, Any]) -> None:
    """The plain path either decodes (a tolerant reading) or raises DecodeError -- never anything else."""
    from kafkalab.protocol.errors import DecodeError

    try:
        decoded = _decode(entry)
    except DecodeError:
        return
    assert decoded.correlation_id == entry["correlation_id"]


@_params(lambda e: not _regular(e))
def test_irregular_frame_tree_still_covers_every_byte(entry: dict[str, Any]) -> None:
    """The traced path never raises on peer bytes; its leaves still cover the whole frame."""
    frame = _frame(entry)
    try:
        decoded = _decode(entry, annotate=True)
    except TypeError as e:
        if _is_request(entry):
            raise
        pytest.skip(f"decode_response(annotate=True) unsupported: {e}")
    leaves = list(decoded.tree.leaves())
    pos = 0
    for leaf in leaves:
        assert leaf.start == pos, f"gap/overlap at {pos}: leaf {leaf.path!r} spans {leaf.start}..{leaf.end}"
        pos = leaf.end
    assert pos == len(frame)
