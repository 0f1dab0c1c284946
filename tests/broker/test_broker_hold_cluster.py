"""Step-through holds driven from Python while a real client waits, and a three-node cluster in one process
whose leaders move under real producers and consumers without losing an acknowledged record."""
from __future__ import annotations

import copy
import threading
import time

import confluent_kafka as ck
import pytest
from broker_helpers import RawClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab.broker import Broker
from kafkalab.protocol import ApiKey, ErrorCode

TIMEOUT = 30


def _producer(broker, **kw):
    return KafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000, retries=10,
                         retry_backoff_ms=50, **kw)


@pytest.fixture
def broker():
    with Broker(topics={"t": 1}) as b:
        yield b


def test_hold_shows_request_and_response_then_release_with_an_edited_body(broker):
    hold = broker.hold(api="Produce")
    producer = _producer(broker)
    future = producer.send("t", b"held", partition=0)
    hold.wait(TIMEOUT)
    assert not future.is_done                      # the client is waiting for the held answer
    assert hold.request.api_name == "Produce" and hold.request.tree is not None
    partition = hold.response["responses"][0]["partition_responses"][0]
    assert partition["error_code"] == 0 and partition["base_offset"] == 0
    edited = copy.deepcopy(hold.response)
    with pytest.raises(ValueError, match="does not encode"):
        hold.release({"responses": "not a list"})                # refused; the exchange stays held
    edited["responses"][0]["partition_responses"][0]["base_offset"] = 4242
    time.sleep(0.3)
    hold.release(edited)
    assert future.get(TIMEOUT).offset == 4242      # the client believed the edited answer
    producer.close()
    answer = [f for f in broker.journal if f.api_key == ApiKey.PRODUCE and f.kind == "response"][0]
    assert answer.latency_ms >= 300
    assert any(d.startswith("held ") and d.endswith("response edited") for d in answer.diagnostics)
    with pytest.raises(RuntimeError, match="already decided"):
        hold.release()


def test_hold_of_a_fetch_released_unchanged_while_other_connections_carry_on(broker):
    producer = _producer(broker)
    producer.send("t", b"v", partition=0).get(TIMEOUT)
    hold = broker.hold(api=ApiKey.FETCH, topic="t")
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             fetch_max_wait_ms=100, request_timeout_ms=10000)
    consumer.assign([TopicPartition("t", 0)])
    consumer.seek(TopicPartition("t", 0), 0)
    got: list[bytes] = []
    worker = threading.Thread(target=lambda: got.extend(
        r.value for batch in consumer.poll(timeout_ms=TIMEOUT * 1000).values() for r in batch))
    worker.start()
    hold.wait(TIMEOUT)
    producer.send("t", b"meanwhile", partition=0).get(TIMEOUT)     # another connection is not held up
    assert got == [] and repr(hold).endswith("held>")
    hold.release()
    worker.join(TIMEOUT)
    consumer.close()
    producer.close()
    assert got == [b"v"]                            # the answer built before "meanwhile" was appended


def test_hold_drop_closes_the_connection_and_the_client_retries(broker):
    hold = broker.hold(api="Metadata")
    client = RawClient(broker.bootstrap_servers)
    try:
        client.send(ApiKey.METADATA, 1, {"topics": None})
        hold.wait(TIMEOUT)
        hold.drop()
        assert client.is_closed()
    finally:
        client.close()
    request = [f for f in broker.journal if f.api_key == ApiKey.METADATA][0]
    assert request.response_frame is None and any("dropped" in d for d in request.diagnostics)
    producer = _producer(broker)                    # the broker carries on
    assert producer.send("t", b"after", partition=0).get(TIMEOUT).offset == 0
    producer.close()


def test_three_nodes_spread_leaders_and_refuse_requests_to_non_leaders():
    with Broker(topics={"t": 3}, nodes=3) as broker:
        leaders = broker.leaders("t")
        assert sorted(leaders.values()) == [1, 2, 3]
        addresses = broker.node_addresses
        clients = {node: RawClient(f"{host}:{port}") for node, (host, port) in addresses.items()}
        try:
            meta = clients[2].call(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                         "include_topic_authorized_operations": False})
            assert {b["node_id"]: b["port"] for b in meta["brokers"]} == {n: p for n, (_, p) in addresses.items()}
            assert {p["partition_index"]: p["leader_id"] for p in meta["topics"][0]["partitions"]} == leaders
            body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}
            for node, client in clients.items():
                code = client.call(ApiKey.LIST_OFFSETS, 5, body)["topics"][0]["partitions"][0]["error_code"]
                assert code == (0 if node == leaders[0] else ErrorCode.NOT_LEADER_OR_FOLLOWER)
            new, epoch = broker.move_leader("t", 0, node=[n for n in addresses if n != leaders[0]][0])
            assert epoch == 1 and broker.leaders("t")[0] == new
            assert clients[new].call(ApiKey.LIST_OFFSETS, 5, body)["topics"][0]["partitions"][0]["error_code"] == 0
            meta = clients[1].call(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                         "include_topic_authorized_operations": False})
            moved = meta["topics"][0]["partitions"][0]
            assert (moved["leader_id"], moved["leader_epoch"]) == (new, 1)
        finally:
            for client in clients.values():
                client.close()


def test_a_refused_fetch_names_the_new_leader_and_carries_an_empty_record_set():
    with Broker(topics={"t": 1}, nodes=3) as broker:
        old = broker.leaders("t")[0]
        addresses = broker.node_addresses
        client = RawClient("%s:%d" % addresses[old])
        try:
            meta = client.call(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                     "include_topic_authorized_operations": False})
            topic_id = meta["topics"][0]["topic_id"]
            new, epoch = broker.move_leader("t", 0)
            for version, topic in ((12, {"topic": "t"}), (16, {"topic_id": topic_id})):
                body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 10**6, "topics": [
                    {**topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 10**6}]}]}
                answer = client.call(ApiKey.FETCH, version, body, records="raw")
                part = answer["responses"][0]["partitions"][0]
                assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
                assert part["records"] == b""                   # empty, as Kafka sends: a null set breaks librdkafka
                assert part["current_leader"] == {"leader_id": new, "leader_epoch": epoch}
                if version >= 16:                               # KIP-951: where the new leader listens
                    assert [(e["node_id"], e["port"]) for e in answer["node_endpoints"]] == [(new, addresses[new][1])]
        finally:
            client.close()


def test_a_consumer_fetching_from_a_leader_that_moves_follows_it_at_once():
    with Broker(topics={"t": 1}, nodes=3) as broker:
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                                "topic.metadata.refresh.interval.ms": 600000})
        consumer.assign([ck.TopicPartition("t", 0, ck.OFFSET_BEGINNING)])
        try:
            consumer.poll(1.0)                                  # fetching (nothing yet) from the first leader
            broker.move_leader("t", 0)
            time.sleep(0.3)                                     # its next fetches reach the old leader
            producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
            producer.produce("t", b"after the move", partition=0)
            assert producer.flush(TIMEOUT) == 0
            got, deadline = [], time.time() + 10
            while not got and time.time() < deadline:
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
            assert got == [b"after the move"]
        finally:
            consumer.close()
        refused = [f for f in broker.journal if f.api_key == ApiKey.FETCH and f.kind == "response"
                   and f.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER]
        assert refused                                          # it did meet the moved leader


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_cluster_survives_leader_changes_with_no_acknowledged_record_lost(client):
    with Broker(topics={"t": 3}, nodes=3) as broker:
        acked: set[bytes] = set()
        values = [b"r%03d" % i for i in range(150)]
        if client == "kafka-python":
            producer = _producer(broker, acks="all", max_in_flight_requests_per_connection=1)
            for i, value in enumerate(values):
                producer.send("t", value, partition=i % 3).add_callback(lambda _m, v=value: acked.add(v))
                if i in (50, 100):
                    producer.flush(TIMEOUT)
                    for p in range(3):
                        broker.move_leader("t", p)
            producer.flush(TIMEOUT)
            producer.close()
        else:
            producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "acks": "all",
                                    "enable.idempotence": True, "topic.metadata.refresh.interval.ms": 1000})
            for i, value in enumerate(values):
                producer.produce("t", value, partition=i % 3,
                                 on_delivery=lambda err, msg: err is None and acked.add(msg.value()))
                if i in (50, 100):
                    assert producer.flush(TIMEOUT) == 0
                    for p in range(3):
                        broker.move_leader("t", p)
            assert producer.flush(TIMEOUT) == 0
        assert acked == set(values)
        refused = [f for f in broker.journal if f.api_key == ApiKey.PRODUCE and f.kind == "response"
                   and f.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER]
        assert refused                               # the producer did meet a moved leader
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        consumer.assign([ck.TopicPartition("t", p, ck.OFFSET_BEGINNING) for p in range(3)])
        got, deadline, moved = set(), time.time() + TIMEOUT, False
        while not acked <= got and time.time() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.add(msg.value())
            if len(got) >= 75 and not moved:
                broker.move_leader("t", 0)          # the consumer follows a leader change too (once)
                moved = True
        consumer.close()
        assert acked <= got


def test_hold_drop_of_a_real_producers_request_is_retried_on_a_new_connection(broker):
    hold = broker.hold(api="Produce")
    producer = _producer(broker)
    future = producer.send("t", b"dropped-once", partition=0)
    hold.wait(TIMEOUT)
    hold.drop()
    meta = future.get(TIMEOUT)                       # kafka-python reconnects and sends the batch again
    producer.close()
    requests = [f for f in broker.journal if f.api_key == ApiKey.PRODUCE and f.kind == "request"]
    assert len(requests) == 2 and requests[0].stream != requests[1].stream
    assert any("dropped" in d for d in requests[0].diagnostics) and requests[0].response_frame is None
    # the dropped attempt had been appended; kafka-python's idempotent retry is recognised as a duplicate
    assert meta.offset == 0 and broker.state.store.topic("t").partitions[0].log.next_offset == 1


def test_hold_skips_produce_requests_that_get_no_answer(broker):
    hold = broker.hold(api="Produce")
    quiet = _producer(broker, acks=0)
    quiet.send("t", b"fire-and-forget", partition=0)
    quiet.flush(TIMEOUT)
    quiet.close()
    assert not hold.caught                           # acks=0 has no response to hold: the next one is caught
    producer = _producer(broker)
    future = producer.send("t", b"answered", partition=0)
    hold.wait(TIMEOUT).release()
    assert future.get(TIMEOUT).offset == 1
    producer.close()
