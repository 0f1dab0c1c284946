"""The message browser's model and widget on a live broker, fed and consumed by kafka-python: topics and
offsets, records rendered as JSON/text/hex, seeking by offset and time, DeleteRecords moving the log start,
consumer groups with members, assignments and lag as the coordinator knows them, following, the snapshot."""
from __future__ import annotations

import json
import time

import pytest

from kafkalab import Broker, browse
from kafkalab.notebook import browse_model

kafka = pytest.importorskip("kafka")


@pytest.fixture(scope="module")
def broker():
    with Broker(topics={"orders": 2, "empty": 1}, initial_rebalance_delay_ms=0) as b:
        producer = kafka.KafkaProducer(bootstrap_servers=b.bootstrap_servers)
        for i in range(6):
            producer.send("orders", key=f"k{i}".encode(), value=json.dumps({"n": i}).encode(), partition=0,
                          headers=[("trace", b"\x00\xff"), ("kind", b"order")], timestamp_ms=1_700_000_000_000 + i)
        producer.send("orders", value=b"plain text", partition=0, timestamp_ms=1_700_000_000_010)
        producer.send("orders", value=b"\x00\x01\x02", partition=1)
        producer.flush()
        producer.close()
        yield b


def test_render_picks_json_text_or_hex_and_says_when_a_mode_does_not_fit() -> None:
    assert browse_model.render(b'{"a": [1, 2]}')["as"] == "json"
    assert browse_model.render(b"hello world") == {"as": "text", "text": "hello world"}
    assert browse_model.render(b"\xff\x00") == {"as": "hex", "text": "ff 00"}
    assert browse_model.render(None) == {"as": "null", "text": "null"}
    assert browse_model.render(b"hello", "json") == {"as": "hex", "text": "68 65 6c 6c 6f", "note": "not JSON"}
    assert browse_model.render(b'{"a":1}', "text") == {"as": "text", "text": '{"a":1}'}
    with pytest.raises(ValueError, match="unknown rendering"):
        browse_model.render(b"x", "yaml")


def test_topics_partitions_and_records_come_from_the_log(broker) -> None:
    view = browse(broker)
    users = [t for t in view.topics if not t["internal"]]
    assert [t["topic"] for t in users] == ["empty", "orders"] and view.topic == "empty"     # the first one
    assert {t["topic"]: t["records"] for t in users} == {"empty": 0, "orders": 8}
    view.show("orders")
    assert [(p["log_start_offset"], p["high_watermark"], p["last_stable_offset"]) for p in view.partitions] == \
        [(0, 7, 7), (0, 1, 1)]
    first, last = view.records[0], view.records[-1]
    assert [r["offset"] for r in view.records] == list(range(7))
    assert first["key"] == {"as": "text", "text": "k0"} and json.loads(first["value"]["text"]) == {"n": 0}
    assert first["headers"] == [{"key": "trace", "value": {"as": "hex", "text": "00 ff"}},
                                {"key": "kind", "value": {"as": "text", "text": "order"}}]
    assert first["timestamp"] == 1_700_000_000_000
    assert last["key"]["as"] == "null" and last["value"] == {"as": "text", "text": "plain text"}
    view.show("orders", 1)
    assert [r["value"] for r in view.records] == [{"as": "hex", "text": "00 01 02"}]
    view.mode = "hex"
    assert view.records[0]["value"]["text"] == "00 01 02"
    with pytest.raises(KeyError, match="partitions 0..1"):
        view.show("orders", 5)


def test_seek_by_offset_and_time_and_past_the_end(broker) -> None:
    view = browse(broker, topic="orders", limit=2)
    view.seek(4)
    assert [r["offset"] for r in view.records] == [4, 5]
    assert view.seek_time(1_700_000_000_003) == 3 and [r["offset"] for r in view.records] == [3, 4]
    assert view.seek_time(1_700_000_000_010) == 6
    assert view.seek_time(1_800_000_000_000) == 7 and view.records == []
    assert view.notice == "no records at offset 7 and after"
    view._on_message(view, {"type": "seek", "offset": 1}, [])          # what the browser's button sends
    assert [r["offset"] for r in view.records] == [1, 2] and view.notice == ""
    view._on_message(view, {"type": "show", "topic": "nope"}, [])
    assert "no topic 'nope'" in view.notice


def test_deleted_records_move_the_log_start_and_the_page() -> None:
    with Broker(topics={"t": 1}) as b:
        producer = kafka.KafkaProducer(bootstrap_servers=b.bootstrap_servers)
        for i in range(5):
            producer.send("t", value=b"v%d" % i, partition=0)
        producer.flush()
        producer.close()
        admin = kafka.KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        try:
            admin.delete_records({kafka.TopicPartition("t", 0): 3})
        finally:
            admin.close()
        view = browse(b, topic="t")
        assert view.partitions[0]["log_start_offset"] == 3
        assert [r["offset"] for r in view.records] == [3, 4]
        view.seek(0)
        assert [r["value"]["text"] for r in view.records] == ["v3", "v4"]


def test_groups_show_members_assignments_and_lag_from_the_coordinator(broker) -> None:
    consumer = kafka.KafkaConsumer("orders", bootstrap_servers=broker.bootstrap_servers, group_id="billing",
                                   auto_offset_reset="earliest", enable_auto_commit=False,
                                   session_timeout_ms=30_000, heartbeat_interval_ms=1_000)
    try:
        deadline, seen = time.monotonic() + 60, 0
        while seen < 3 and time.monotonic() < deadline:
            seen += sum(len(v) for v in consumer.poll(timeout_ms=500).values())
        assert seen >= 3
        consumer.commit({kafka.TopicPartition("orders", 0): kafka.OffsetAndMetadata(3, "", -1)})
        view = browse(broker)
        (offsets_log,) = [t for t in view.topics if t["internal"]]
        assert offsets_log["topic"] == "__consumer_offsets" and offsets_log["records"] >= 2     # group + commit
        groups = {g["group_id"]: g for g in view.groups}
        billing = groups["billing"]
        assert billing["state"] == "Stable" and billing["kind"] == "classic" and billing["protocol"]
        assert len(billing["members"]) == 1
        assert sorted(billing["members"][0]["assignment"]) == ["orders-0", "orders-1"]
        assert billing["offsets"] == [{"topic": "orders", "partition": 0, "committed": 3, "high_watermark": 7,
                                       "lag": 4}]
    finally:
        consumer.close()
    after = {g["group_id"]: g for g in browse(broker).groups}["billing"]
    assert after["members"] == [] and after["offsets"][0]["lag"] == 4       # commits outlive the members


def test_follow_moves_the_page_to_new_records_and_the_snapshot_shows_them() -> None:
    with Broker(topics={"live": 1}) as b:
        view = browse(b, topic="live", limit=3)
        assert view.records == []
        view.follow(0.1)
        try:
            producer = kafka.KafkaProducer(bootstrap_servers=b.bootstrap_servers)
            for i in range(5):
                producer.send("live", value=b"m%d" % i)
            producer.flush()
            producer.close()
            deadline = time.monotonic() + 30
            while [r["offset"] for r in view.records] != [2, 3, 4] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [r["value"]["text"] for r in view.records] == ["m2", "m3", "m4"] and view.following
        finally:
            view.unfollow()
        assert not view.following
        html = view.snapshot_html()
        assert "kafkalab browser · 1 topics" in html and "m4" in html and "m1" not in html
        assert ">live-0 records<" in html


def test_a_saved_notebook_gets_the_snapshot_beside_the_widget_view(broker) -> None:
    view = browse(broker, topic="orders", limit=3)
    data, _ = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html = data["text/html"]
    assert html.startswith('<div class="kl-browse-snapshot"') and ">orders-0 records<" in html
    assert "k2" in html and "k3" not in html and "plain text" not in html           # the page shown, no more


def test_kip848_and_classic_groups_of_librdkafka_consumers(broker) -> None:
    """librdkafka consumers with ``group.protocol=consumer`` (KIP-848: the broker assigns) and ``classic``:
    both groups shown with members, assignments and lag; a second KIP-848 member gets a share and a newer
    epoch."""
    ck = pytest.importorskip("confluent_kafka")

    def consumer(group: str, protocol: str):
        config = {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "group.protocol": protocol,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": f"rd-{protocol}"}
        made = ck.Consumer(config)
        made.subscribe(["orders"])
        return made

    def poll_until(consumers, done, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "timed out"
            for c in consumers:
                c.poll(0.2)

    def groups():
        return {g["group_id"]: g for g in browse(broker).groups}

    kip848, classic = consumer("rd-kip848", "consumer"), consumer("rd-classic", "classic")
    second = None
    try:
        poll_until([kip848, classic], lambda: all(len(c.assignment()) == 2 for c in (kip848, classic)))
        for c in (kip848, classic):
            c.commit(offsets=[ck.TopicPartition("orders", 0, 5)], asynchronous=False)
        shown = groups()
        new, old = shown["rd-kip848"], shown["rd-classic"]
        assert (new["kind"], new["state"], old["kind"], old["state"]) == ("consumer", "Stable", "classic", "Stable")
        assert new["protocol"] in ("uniform", "range") and new["epoch"] >= 1 and old["protocol"]
        for group, client in ((new, "rd-consumer"), (old, "rd-classic")):
            (member,) = group["members"]
            assert member["client_id"] == client and sorted(member["assignment"]) == ["orders-0", "orders-1"]
            assert group["offsets"] == [{"topic": "orders", "partition": 0, "committed": 5, "high_watermark": 7,
                                         "lag": 2}]
        assert new["members"][0]["epoch"] == new["epoch"] and new["members"][0]["subscribed"] == ["orders"]

        second = consumer("rd-kip848", "consumer")              # the broker moves one partition over
        poll_until([kip848, second], lambda: len(kip848.assignment()) == 1 and len(second.assignment()) == 1)
        poll_until([kip848, second], lambda: sorted(
            p for m in groups()["rd-kip848"]["members"] for p in m["assignment"]) == ["orders-0", "orders-1"]
            and all(len(m["assignment"]) == 1 for m in groups()["rd-kip848"]["members"]))
        now = groups()["rd-kip848"]
        assert len(now["members"]) == 2 and now["epoch"] > new["epoch"]
    finally:
        for c in (kip848, classic, second):
            if c is not None:
                c.close()
