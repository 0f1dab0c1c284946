"""The captures shipped in captures/ (real clients, a real broker, tcpdump on loopback) against the values
recorded next to them: what the clients sent and were told, and for the derived captures the frame map
taken from the clean byte streams (captures/README.md says how each was made). Then tshark: for every frame
it decodes without a malformed or unsupported-version report, the fields agree with kafkalab's."""
from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from kafkalab.capture import read_capture
from kafkalab.dissect.facts import body_layout, walk

from tests.tools import require_tool

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
EXPECTED = {path.stem: json.loads(path.read_text()) for path in sorted(CAPTURES.glob("*.json"))}
ROUNDTRIPS = sorted(name for name in EXPECTED if name.startswith("produce-consume-"))
DERIVED = ["midstream", "lossy"]


def load(name: str):
    expected = EXPECTED[name]
    return expected, read_capture(CAPTURES / expected["capture"], ports=[expected["port"]])


def _record_key(topic, partition, offset, key, value) -> tuple:
    return (topic, int(partition), int(offset), None if key is None else key, value)


def test_every_capture_is_small_documented_and_has_expected_values():
    readme = (CAPTURES / "README.md").read_text()
    pcaps = sorted(CAPTURES.glob("*.pcap"))
    assert {p.stem for p in pcaps} == set(EXPECTED)
    assert set(ROUNDTRIPS) == {f"produce-consume-{c}" for c in ("none", "gzip", "snappy", "lz4", "zstd")}
    for pcap in pcaps:
        assert pcap.stat().st_size < 300 * 1024, pcap.name
        assert pcap.name in readme, f"{pcap.name} is not described in captures/README.md"


@pytest.mark.parametrize("name", ROUNDTRIPS)
def test_produced_and_consumed_records_are_what_the_clients_saw(name):
    expected, cap = load(name)
    records = cap.records
    produced = records[records["kind"] == "request"]
    got = Counter(_record_key(r.topic, r.partition, r.offset, None if r.key is None else r.key.hex(), r.value.hex())
                  for r in produced.itertuples())
    assert got == Counter(_record_key(p["topic"], p["partition"], p["offset"], p["key"], p["value"])
                          for p in expected["produced"])
    headers = {(r.key.hex(), tuple((h["key"], h["value"].hex()) for h in r.headers)) for r in produced.itertuples()}
    assert headers == {(p["key"], tuple(tuple(h) for h in p["headers"])) for p in expected["produced"]}
    timestamps = {r.key.hex(): int(r.timestamp.timestamp() * 1000) for r in produced.itertuples()}
    assert timestamps == {p["key"]: p["timestamp"] for p in expected["produced"]}
    assert set(produced["codec"]) == {expected["codec"]}
    fetched = records[records["kind"] == "response"]
    got_fetched = {_record_key(r.topic, r.partition, r.offset, r.key.hex(), r.value.hex())
                   for r in fetched.itertuples()}
    assert {_record_key(c["topic"], c["partition"], c["offset"], c["key"], c["value"])
            for c in expected["consumed"]} <= got_fetched
    assert set(expected["client_ids"]) <= {f.client_id for f in cap if f.kind == "request"}
    assert (cap.connections["gaps"] == 0).all() and not cap.connections["midstream"].any()
    assert not [d for f in cap for d in f.diagnostics if "gap" in d or "resynchronised" in d]
    produce_requests = [f for f in cap if f.kind == "request" and f.api_name == "Produce"]
    assert produce_requests and all(f.response_frame is not None for f in produce_requests)
    assert all(f.error_code == 0 for f in cap if f.api_name == "Produce")


def _topic_errors(frame) -> dict[str, int]:
    """topic name -> error code in a CreateTopics/DeleteTopics/CreatePartitions response."""
    out = {}
    for entry in frame.body.get("topics") or frame.body.get("responses") or frame.body.get("results") or []:
        out[entry.get("name")] = entry.get("error_code")
    return out


def test_admin_capture_matches_the_admin_clients_outcomes():
    expected, cap = load("admin")
    outcomes = {(o["operation"], o["target"]): o for o in expected["outcomes"]}
    responses = {name: [f for f in cap if f.kind == "response" and f.api_name == name]
                 for name in ("CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeConfigs", "Metadata")}
    created = {}
    for frame in responses["CreateTopics"]:
        created.update(_topic_errors(frame))
    for topic in ("admin-a", "admin-b", "existing"):
        outcome = outcomes[("create_topics", topic)]
        assert created[topic] == (0 if outcome["ok"] else outcome["error_code"]), topic
    deleted = {}
    for frame in responses["DeleteTopics"]:
        deleted.update(_topic_errors(frame))
    for topic in ("admin-b", "missing-topic"):
        outcome = outcomes[("delete_topics", topic)]
        assert deleted[topic] == (0 if outcome["ok"] else outcome["error_code"]), topic
    partitions = {}
    for frame in responses["CreatePartitions"]:
        partitions.update(_topic_errors(frame))
    assert partitions == {"admin-a": 0} and outcomes[("create_partitions", "admin-a")]["ok"]
    described = {}
    for frame in responses["DescribeConfigs"]:
        for result in frame.body["results"]:
            described.update({c["name"]: c["value"] for c in result["configs"]})
    expected_configs = outcomes[("describe_configs", "ConfigResource(ResourceType.TOPIC,admin-b)")]["result"]
    assert described == {name: entry["value"] for name, entry in expected_configs.items()}
    layouts = [{t["name"]: len(t["partitions"]) for t in f.body["topics"]} for f in responses["Metadata"]]
    assert expected["topics_after_create"] in layouts
    assert any(sorted(layout) == expected["topics_after_delete"] for layout in layouts)
    assert {f.client_id for f in cap if f.kind == "request"} == set(expected["client_ids"])


@pytest.mark.parametrize("name", DERIVED)
def test_damaged_captures_lose_only_what_was_cut_and_say_so(name):
    expected, cap = load(name)
    frames = expected["frames"]
    by_hash = {f["sha256"]: f for f in frames}
    found = {hashlib.sha256(f.raw).hexdigest(): f for f in cap}
    assert set(found) <= set(by_hash), "a frame kafkalab reports is not one the clients exchanged"
    for entry in frames:
        if not entry["lost"]:
            assert entry["sha256"] in found, entry           # everything that survived is recovered
    for direction in ("request", "response"):
        ordered = [f for f in frames if f["direction"] == direction and f["client"] == frames[-1]["client"]]
        for before, after in zip(ordered, ordered[1:]):
            if before["lost"] and not after["lost"]:
                notes = found[after["sha256"]].diagnostics
                assert any(n.startswith(("gap before frame", "resynchronised", "capture started mid-connection"))
                           for n in notes), (after, notes)
    for entry in frames:
        if entry["lost"] or entry["sha256"] not in found:
            continue
        frame = found[entry["sha256"]]
        if entry["direction"] == "request":
            assert frame.api_key == entry["api_key"] and frame.correlation_id == entry["correlation_id"]
        partner = next((f for f in frames if f["direction"] != entry["direction"] and f["client"] == entry["client"]
                        and f["correlation_id"] == entry["correlation_id"]), None)
        if partner is not None and not partner["lost"] and entry["direction"] == "response":
            assert frame.request_frame == found[partner["sha256"]].frame          # paired
        if partner is not None and partner["lost"] and entry["direction"] == "response":
            assert frame.request_frame is None and (frame.inferred or frame.api_key == -1)
            assert any("request not captured" in d for d in frame.diagnostics)
    kept = {k for f in frames if f["direction"] == "request" and not f["lost"] for k in f["keys"]}
    produced = cap.records[cap.records["kind"] == "request"]
    assert {r.key.hex() for r in produced.itertuples()} == kept
    truth = {p["key"]: p for p in expected["produced"]}
    for r in produced.itertuples():
        p = truth[r.key.hex()]
        if p["value"] is not None:
            assert r.value.hex() == p["value"]
        else:
            assert hashlib.sha256(r.value).hexdigest() == p["value_sha256"]
        if r.offset is not None and not isinstance(r.offset, type(produced["offset"].dtype.na_value)):
            assert int(r.offset) == p["offset"]
    if name == "midstream":
        assert cap.connections["midstream"].any()
    else:
        drops = sum(op["op"] == "drop" for op in expected["operations"])
        assert cap.connections["gaps"].sum() >= drops


# ---------------------------------------------------------------- tshark

def _pairs(value):
    return value if isinstance(value, list) and (not value or isinstance(value[0], tuple)) else None


def _collect(node, names: set[str], out: dict) -> None:
    for key, value in node:
        pairs = _pairs(value)
        if pairs is not None:
            _collect(pairs, names, out)
        elif key in names:
            out.setdefault(key, []).append(value)


def _own_experts(pdu) -> list[str]:
    """Expert messages attached to the PDU itself (not to nested items such as advertised version ranges)."""
    messages = []
    for key, value in pdu:
        if key == "_ws.expert" and _pairs(value) is not None:
            messages += [v for k, v in value if k == "_ws.expert.message"]
        elif key == "_ws.malformed":
            messages.append("malformed")
    return messages


def tshark_pdus(path: Path, port: int) -> list[dict]:
    command = [require_tool("tshark"), "-r", str(path), "-n", "-d", f"tcp.port=={port},kafka", "-Y", "kafka", "-T", "json",
               "-J", "kafka tcp"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = {"kafka.api_key", "kafka.request.version", "kafka.response.version", "kafka.request_key",
             "kafka.correlation_id", "kafka.client_id",
             "kafka.topic_name", "kafka.partition_id", "kafka.error", "kafka.message_key", "kafka.message_value",
             "_ws.malformed"}
    pdus = []
    for packet in json.loads(done.stdout, object_pairs_hook=lambda pairs: pairs):
        layers = dict(dict(packet)["_source"])["layers"]
        stream = next(int(v) for k, v in dict(layers)["tcp"] if k == "tcp.stream")
        malformed_packet = any(k == "_ws.malformed" for k, _ in layers)
        for key, value in layers:
            if key != "kafka":
                continue
            fields: dict[str, list] = {}
            _collect(value, names, fields)
            pdus.append({"stream": stream, "fields": fields, "experts": _own_experts(value),
                         "malformed": malformed_packet or "_ws.malformed" in fields})
    return pdus


def _hex(colons: str) -> str:
    return colons.replace(":", "")


def _our_errors(frame) -> set[int]:
    layout = body_layout(frame.api_key, frame.kind, frame.api_version)
    return {v for slot, v, _ in walk(layout, frame.body) if slot.name.endswith("error_code") and v}


def _our_partitions(frame) -> set[int]:
    from kafkalab.dissect.facts import topic_partitions

    layout = body_layout(frame.api_key, frame.kind, frame.api_version)
    return {p for parts in topic_partitions(layout, frame.body).values() for p in parts}


def _our_records(frame) -> tuple[list, list]:
    keys, values = [], []
    layout = body_layout(frame.api_key, frame.kind, frame.api_version)
    for slot, value, _ in walk(layout, frame.body):
        if slot.kind == "records" and isinstance(value, list):
            for batch in value:
                for record in getattr(batch, "records", ()):
                    keys.append(record.key.hex() if record.key else None)
                    values.append(record.value.hex() if record.value else None)
    return keys, values


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_tshark_agrees_on_every_frame_it_decodes(name):
    expected, cap = load(name)
    ours: dict[tuple, list] = {}
    for frame in cap:
        ours.setdefault((frame.stream, frame.correlation_id, frame.kind), []).append(frame)
    compared = unsupported = 0
    for pdu in tshark_pdus(CAPTURES / expected["capture"], expected["port"]):
        fields = pdu["fields"]
        if pdu["malformed"] or any("nsupported" in m or "does not end" in m for m in pdu["experts"]):
            unsupported += 1
            continue
        if "kafka.api_key" not in fields or "kafka.correlation_id" not in fields:
            unsupported += 1
            continue                                  # e.g. a response tshark could not pair
        kind = "request" if "kafka.request_key" in fields else "response"
        version = fields.get("kafka.request.version") or fields.get("kafka.response.version")
        if not version:
            continue
        api_key, version = int(fields["kafka.api_key"][0]), int(version[0])
        candidates = ours.get((pdu["stream"], int(fields["kafka.correlation_id"][0]), kind), [])
        match = [f for f in candidates if (f.api_key, f.api_version) == (api_key, version)]
        assert match, (name, pdu, candidates)
        frame = match[0]
        if kind == "request" and fields.get("kafka.client_id", ["[ Null ]"])[0] != "[ Null ]":
            assert frame.client_id == fields["kafka.client_id"][0]
        assert set(fields.get("kafka.topic_name", [])) <= set(frame.topics), (frame, fields)
        assert {int(p) for p in fields.get("kafka.partition_id", [])} <= _our_partitions(frame) | \
            {int(p) for p in fields.get("kafka.partition_id", []) if int(p) < 0}, (frame, fields)
        assert {int(e) for e in fields.get("kafka.error", []) if int(e)} == _our_errors(frame), (frame, fields)
        if "kafka.message_value" in fields:
            keys, values = _our_records(frame)
            assert sorted(_hex(v) for v in fields["kafka.message_value"]) == sorted(v or "" for v in values)
            assert sorted(_hex(k) for k in fields.get("kafka.message_key", [])) == \
                sorted(k for k in keys if k is not None)
        compared += 1
    if compared == 0 and name == "midstream":
        # Where Wireshark gives up: it never finds a request start in a capture that begins mid-frame, so
        # it shows the responses as undecoded ("Request Missing"). kafkalab resynchronises and decodes them.
        assert unsupported >= 5 and all(f.api_key == 0 and f.body is not None for f in cap) and len(cap) >= 10
        return
    assert compared >= 5, f"tshark decoded only {compared} frames of {name}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_found_without_naming_the_port(name):
    """Every shipped capture's broker listened on a random port. Without ``ports=`` kafkalab still finds the
    Kafka in it: a request answered by its response where the handshake was captured, and, in the capture
    that starts mid-connection (no handshake: either side's first bytes may be the middle of a frame), by
    waiting until one side's bytes hold a whole request that decodes, which names that side the client."""
    _, named = load(name)
    found = read_capture(CAPTURES / EXPECTED[name]["capture"])
    pd.testing.assert_frame_equal(found.frames, named.frames)
