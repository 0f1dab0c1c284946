"""Conformance on the external captures in ../shared/captures/external (real brokers and clients), checked
against INVENTORY.md / inventory.json (tshark 4.4's counts). Skips where ../shared is absent."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kafkalab.capture import read_capture

EXTERNAL = Path(__file__).resolve().parents[2].parent / "shared" / "captures" / "external"
pytestmark = pytest.mark.skipif(not (EXTERNAL / "inventory.json").exists(),
                                reason=f"external captures not available ({EXTERNAL} is absent outside the "
                                       "lab workspace; they are not copied into the project)")
INVENTORY = json.loads((EXTERNAL / "inventory.json").read_text()) if (EXTERNAL / "inventory.json").exists() else {}
PORTS = [36333, 1643]


@pytest.mark.parametrize("name", sorted(INVENTORY))
def test_pdu_counts_requests_and_topics_match_the_inventory(name):
    expected = INVENTORY[name]
    cap = read_capture(EXTERNAL / name, ports=PORTS)
    assert len(cap) == expected["pdus"]
    assert len({f.stream for f in cap}) == expected["streams"]
    requests = Counter(f"{f.api_name}({f.api_key}) v{f.api_version}" for f in cap if f.kind == "request")
    assert requests == Counter(expected["req"])
    assert set().union(*(f.topics for f in cap)) == set(expected["topics"])
    assert Counter(f.client_id for f in cap if f.kind == "request" and f.client_id) == Counter(expected["clients"])


def test_deepflow_same_host_produce_v9_is_paired():
    cap = read_capture(EXTERNAL / "deepflow/00-produce-v9.pcap", ports=PORTS)
    assert cap[2].request_frame == 1 and cap[2].correlation_id == 47


def test_ndpi_responses_without_requests_are_inferred_and_marked():
    cap = read_capture(EXTERNAL / "nDPI/kafka.pcapng")
    orphans = [f for f in cap if f.kind == "response" and f.request_frame is None]
    assert len(orphans) == 3
    assert all(f.inferred and any("inferred" in d for d in f.diagnostics) for f in orphans)
    assert [f.api_name for f in orphans] == ["Metadata", "ApiVersions", "Metadata"]


def test_go_sniffer_sll_with_short_recorded_lengths():
    cap = read_capture(EXTERNAL / "go-sniffer/kafka.pcap")
    assert [f.api_name for f in cap] == ["Metadata", "Metadata", "Produce", "Produce"]
    assert cap.records["value"].map(len).gt(0).all()
