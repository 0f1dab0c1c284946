"""librdkafka's share consumer (KIP-932, preview C API through ctypes) against the broker: queue semantics
with a real client, implicit and explicit acknowledgement, redelivery of released records."""
from __future__ import annotations

import pytest
from share_consumer import ACCEPT, REJECT, RELEASE, ShareConsumer, broker_with_jobs

from kafkalab.protocol import ApiKey


@pytest.fixture
def broker():
    with broker_with_jobs(5) as b:
        yield b


def _spso(broker) -> int:
    return broker.state.share_groups.group("q").partitions[("jobs", 0)].spso


def _ack_types(broker) -> list[list[int]]:
    return [b["acknowledge_types"] for f in broker.journal if f.kind == "request"
            and f.api_key in (ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE)
            for t in f.body["topics"] for p in t["partitions"] for b in p["acknowledgement_batches"]]


def test_implicit_acknowledgement_accepts_what_was_delivered(broker):
    consumer = ShareConsumer(broker.bootstrap_servers, "q", "jobs")
    try:
        got = consumer.poll_until(5)
        assert [(v, o, n) for v, o, n in got] == [(b"job-%d" % i, i, 1) for i in range(5)]
        consumer.poll(1500)                   # the next poll carries the implicit ACCEPTs
    finally:
        consumer.close()
    assert _spso(broker) == 5 and _ack_types(broker)[0] == [ACCEPT]
    described = [f for f in broker.journal if f.api_key == ApiKey.SHARE_GROUP_HEARTBEAT and f.kind == "request"]
    assert described[0].body["subscribed_topic_names"] == ["jobs"] and described[-1].body["member_epoch"] == -1


def test_explicit_release_is_redelivered_and_reject_is_not(broker):
    consumer = ShareConsumer(broker.bootstrap_servers, "q", "jobs", explicit=True)
    try:
        got = consumer.poll_until(5)
        assert [o for _, o, _ in got] == [0, 1, 2, 3, 4]
        for _, offset, _ in got:
            consumer.acknowledge(offset, {1: RELEASE, 2: REJECT}.get(offset, ACCEPT))
        again = consumer.poll_until(1)
        assert again == [(b"job-1", 1, 2)]                  # released: back, second delivery
        consumer.acknowledge(1, ACCEPT)
        assert consumer.poll(1500) == []                    # the rejected job-2 never comes back
    finally:
        consumer.close()
    assert _spso(broker) == 5
    sent = [t for types in _ack_types(broker) for t in types]
    assert RELEASE in sent and REJECT in sent
