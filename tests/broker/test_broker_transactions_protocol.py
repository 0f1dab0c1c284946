"""Transaction APIs and fetch sessions on the wire: the codec's requests against the broker (every version's
shape and error), kafka-python's transaction admin calls, and the journal showing fetch sessions."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KTP
from kafka.admin import AbortTransactionSpec, KafkaAdminClient

from kafkalab.protocol.records import build_batch, encode_records
from kafkalab.protocol import ErrorCode

CODE = {name: ErrorCode[name] for name in (
    "NONE", "UNKNOWN_TOPIC_OR_PARTITION", "OPERATION_NOT_ATTEMPTED", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED",
    "INVALID_TXN_STATE", "INVALID_RECORD", "INVALID_PRODUCER_ID_MAPPING", "TRANSACTIONAL_ID_NOT_FOUND",
    "FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH", "UNSTABLE_OFFSET_COMMIT")}
TIMEOUT = 20


def _init(client, transactional_id, version=4):
    body = client.call("InitProducerId", version, {"transactional_id": transactional_id,
                                                   "transaction_timeout_ms": 60000, "producer_id": -1,
                                                   "producer_epoch": -1})
    assert body["error_code"] == CODE["NONE"]
    return body["producer_id"], body["producer_epoch"]


def _add(client, version, transactional_id, pid, epoch, topics):
    body = client.call("AddPartitionsToTxn", version, {
        "v3_and_below_transactional_id": transactional_id, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": t, "partitions": ps}
                                                                     for t, ps in topics.items()]})
    return {(t["name"], p["partition_index"]): p["partition_error_code"]
            for t in body["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}


def _produce(client, pid, epoch, partition, values, seq=0, **batch):
    records = encode_records([build_batch([(None, v) for v in values], producer_id=pid, producer_epoch=epoch,
                                          base_sequence=seq, transactional=True, **batch)])
    body = client.call("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": partition, "records": records}]}]})
    return body["responses"][0]["partition_responses"][0]


def test_find_coordinator_for_transactional_ids(broker, raw):
    client = raw()
    single = client.call("FindCoordinator", 3, {"key": "app", "key_type": 1})
    assert single["error_code"] == 0 and single["port"] == broker.port
    batched = client.call("FindCoordinator", 4, {"key_type": 1, "coordinator_keys": ["a", "b"]})
    assert [(c["key"], c["error_code"], c["port"]) for c in batched["coordinators"]] == [
        ("a", 0, broker.port), ("b", 0, broker.port)]
    _init(client, "app")                       # the state log's topic appears, as an internal topic
    topics = client.call("Metadata", 9, {"topics": None, "allow_auto_topic_creation": False})["topics"]
    assert {(t["name"], t["is_internal"], len(t["partitions"])) for t in topics} == {
        ("t", False, 2), ("__transaction_state", True, 50)}
    records = encode_records([build_batch([(b"key", b"forged state")])])
    body = client.call("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "__transaction_state", "partition_data": [{"index": 0, "records": records}]}]})
    assert body["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_add_partitions_errors_by_version(broker, raw):
    client = raw()
    pid, epoch = _init(client, "app")
    assert _add(client, 3, "app", pid, epoch, {"t": [0], "nope": [0]}) == {
        ("t", 0): CODE["OPERATION_NOT_ATTEMPTED"], ("nope", 0): CODE["UNKNOWN_TOPIC_OR_PARTITION"]}
    assert _add(client, 1, "app", pid, epoch - 1, {"t": [0]}) == {("t", 0): CODE["INVALID_PRODUCER_EPOCH"]}
    assert _add(client, 2, "app", pid, epoch - 1, {"t": [0]}) == {("t", 0): CODE["PRODUCER_FENCED"]}
    assert _add(client, 3, "app", pid + 1, epoch, {"t": [0]}) == {("t", 0): CODE["INVALID_PRODUCER_ID_MAPPING"]}
    assert _add(client, 3, "app", pid, epoch, {"t": [0]}) == {("t", 0): CODE["NONE"]}
    stale = client.call("InitProducerId", 3, {"transactional_id": "app", "transaction_timeout_ms": 60000,
                                              "producer_id": pid, "producer_epoch": epoch - 1})
    assert stale["error_code"] == CODE["INVALID_PRODUCER_EPOCH"]


def test_add_partitions_v4_batches_transactions_and_verifies(broker, raw):
    client = raw()
    ids = {name: _init(client, name) for name in ("one", "two")}
    _add(client, 3, "one", *ids["one"], {"t": [0]})

    def verify(version=4):
        body = client.call("AddPartitionsToTxn", version, {"transactions": [
            {"transactional_id": name, "producer_id": pid, "producer_epoch": epoch, "verify_only": True,
             "topics": [{"name": "t", "partitions": [0, 1]}]} for name, (pid, epoch) in ids.items()]})
        assert body["error_code"] == 0
        return {(r["transactional_id"], p["partition_index"]): p["partition_error_code"]
                for r in body["results_by_transaction"] for t in r["topic_results"] for p in t["results_by_partition"]}
    bad = CODE["INVALID_TXN_STATE"]
    assert verify() == {("one", 0): 0, ("one", 1): bad, ("two", 0): bad, ("two", 1): bad}
    body = client.call("AddPartitionsToTxn", 5, {"transactions": [
        {"transactional_id": "two", "producer_id": ids["two"][0], "producer_epoch": ids["two"][1],
         "verify_only": False, "topics": [{"name": "t", "partitions": [1]}]}]})
    assert body["results_by_transaction"][0]["topic_results"][0]["results_by_partition"][0]["partition_error_code"] == 0
    assert verify(5) == {("one", 0): 0, ("one", 1): bad, ("two", 0): bad, ("two", 1): 0}


def test_transactional_produce_is_verified(broker, raw):
    client = raw()
    pid, epoch = _init(client, "app")
    assert _produce(client, pid, epoch, 0, [b"early"])["error_code"] == CODE["INVALID_TXN_STATE"]
    _add(client, 3, "app", pid, epoch, {"t": [0]})
    assert _produce(client, pid, epoch, 0, [b"late"])["error_code"] == CODE["NONE"]
    assert _produce(client, pid, epoch - 1, 0, [b"old"], seq=1)["error_code"] == CODE["INVALID_PRODUCER_EPOCH"]
    marker = encode_records([build_batch(["abort"], control=True, transactional=True, producer_id=pid,
                                         producer_epoch=epoch)])
    body = client.call("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": marker}]}]})
    assert body["responses"][0]["partition_responses"][0]["error_code"] == CODE["INVALID_RECORD"]
    end = client.call("EndTxn", 5, {"transactional_id": "app", "producer_id": pid, "producer_epoch": epoch,
                                    "committed": False})
    assert (end["error_code"], end["producer_id"], end["producer_epoch"]) == (0, pid, epoch)


def test_read_committed_fetch_lists_the_aborted_transactions(broker, raw):
    client = raw()
    pid, epoch = _init(client, "app")
    for n, commit in enumerate((False, True, False)):
        _add(client, 3, "app", pid, epoch, {"t": [0]})
        _produce(client, pid, epoch, 0, [b"%d-a" % n, b"%d-b" % n], seq=2 * n)
        client.call("EndTxn", 3, {"transactional_id": "app", "producer_id": pid, "producer_epoch": epoch,
                                  "committed": commit})

    def fetch(isolation, offset):
        body = client.call("Fetch", 11, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                         "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
                                         "topics": [{"topic": "t", "partitions": [
                                             {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}],
                                         "forgotten_topics_data": [], "rack_id": ""})
        return body["responses"][0]["partitions"][0]
    committed = fetch(1, 0)
    assert (committed["high_watermark"], committed["last_stable_offset"]) == (9, 9)
    assert committed["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0},
                                                 {"producer_id": pid, "first_offset": 6}]
    assert fetch(1, 3)["aborted_transactions"] == [{"producer_id": pid, "first_offset": 6}]
    assert fetch(0, 0)["aborted_transactions"] is None
    assert [b.control for b in committed["records"]] == [False, True] * 3


def test_kafka_python_admin_describes_lists_and_aborts(broker):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "hanging"})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce("t", b"open", partition=1)
    producer.flush(TIMEOUT)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        listed = [t for txns in admin.list_transactions().values() for t in txns]
        assert [(t.transactional_id, str(t.state.value)) for t in listed] == [("hanging", "Ongoing")]
        assert admin.list_transactions(state_filters=["CompleteCommit"]) in ({}, {1: []})
        described = admin.describe_transactions(["hanging"])["hanging"]
        assert (described.state.value, described.topic_partitions) == ("Ongoing", {KTP("t", 1)})
        assert described.transaction_start_time_ms > 0 and described.producer_epoch == 0
        producers = admin.describe_producers([KTP("t", 1)])[KTP("t", 1)]
        active = producers.active_producers[0]
        assert (active.producer_id, active.current_transaction_start_offset) == (described.producer_id, 0)
        admin.abort_transaction(AbortTransactionSpec(KTP("t", 1), described.producer_id, described.producer_epoch, -1))
    finally:
        admin.close()
    log = broker._on_loop(lambda: broker.state.store.partition("t", 1).log)
    assert log.last_stable_offset == 2 and [a.first_offset for a in log.aborted] == [0]


# --- fetch sessions --------------------------------------------------------------------------------------------

def _session_fetch(client, session_id, epoch, partitions, forgotten=()):
    body = client.call("Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                     "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
                                     "topics": [{"topic": "t", "partitions": [
                                         {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20,
                                          "current_leader_epoch": -1, "last_fetched_epoch": -1,
                                          "log_start_offset": -1} for p, o in partitions]}] if partitions else [],
                                     "forgotten_topics_data": [{"topic": "t", "partitions": list(forgotten)}]
                                     if forgotten else [], "rack_id": ""})
    return body["error_code"], body["session_id"], sorted(
        (p["partition_index"], p["high_watermark"]) for t in body["responses"] for p in t["partitions"])


def test_incremental_fetch_answers_only_what_changed(broker, raw):
    client = raw()
    error, session, parts = _session_fetch(client, 0, 0, [(0, 0), (1, 0)])
    assert (error, parts) == (0, [(0, 0), (1, 0)]) and session > 0
    assert _session_fetch(client, session, 1, []) == (0, session, [])         # nothing changed
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce("t", b"x", partition=1)
    producer.flush(TIMEOUT)
    assert _session_fetch(client, session, 2, []) == (0, session, [(1, 1)])
    assert _session_fetch(client, session, 3, [(1, 1)], forgotten=[0]) == (0, session, [])
    assert _session_fetch(client, session, 3, [])[0] == CODE["INVALID_FETCH_SESSION_EPOCH"]
    assert _session_fetch(client, session + 99, 1, [])[0] == CODE["FETCH_SESSION_ID_NOT_FOUND"]
    assert _session_fetch(client, session, -1, [(0, 0)]) == (0, 0, [(0, 0)])  # closed: a sessionless answer
    assert _session_fetch(client, session, 4, [])[0] == CODE["FETCH_SESSION_ID_NOT_FOUND"]


def test_kafka_python_fetches_incrementally_and_the_journal_shows_it(broker):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(6):
        producer.produce("t", b"v%d" % i, partition=i % 2)
    producer.flush(TIMEOUT)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             fetch_max_wait_ms=50)
    consumer.assign([KTP("t", 0), KTP("t", 1)])
    consumer.seek_to_beginning()
    got, end = [], time.time() + TIMEOUT

    def fetches():
        return [f for f in broker.journal if f.api_name == "Fetch" and f.kind == "request"
                and f.client_id.startswith("kafka-python")]
    while (len(got) < 6 or len(fetches()) < 8) and time.time() < end:
        for records in consumer.poll(100).values():
            got += records
    consumer.close()
    assert len(got) == 6
    requests = [(f.body["session_id"], f.body["session_epoch"]) for f in fetches()]
    assert requests[0] == (0, 0)
    session = requests[1][0]
    assert session > 0 and [e for s, e in requests[1:6]] == [1, 2, 3, 4, 5] and {s for s, _ in requests[1:]} == {session}
    answers = [f.body["session_id"] for f in broker.journal if f.api_name == "Fetch" and f.kind == "response"]
    assert session in answers


@pytest.mark.parametrize("version", [4, 7])
def test_sessionless_fetch_versions_still_work(broker, raw, version):
    body = raw().call("Fetch", version, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1000,
                                         "isolation_level": 1, "session_id": 0, "session_epoch": -1,
                                         "topics": [{"topic": "t", "partitions": [
                                             {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}]}],
                                         "forgotten_topics_data": []})
    assert body["responses"][0]["partitions"][0]["error_code"] == 0
    assert body.get("session_id", 0) == 0


@pytest.mark.parametrize("version", [7, 8])
def test_offset_fetch_require_stable_sees_pending_transactional_offsets(broker, raw, version):
    client = raw()
    pid, epoch = _init(client, "app")
    assert client.call("AddOffsetsToTxn", 3, {"transactional_id": "app", "producer_id": pid, "producer_epoch": epoch,
                                               "group_id": "g"})["error_code"] == 0
    committed = client.call("TxnOffsetCommit", 3, {
        "transactional_id": "app", "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 42,
                                                 "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    assert committed["topics"][0]["partitions"][0]["error_code"] == 0

    def fetch(stable):
        topics = [{"name": "t", "partition_indexes": [0, 1]}]
        if version >= 8:
            body = client.call("OffsetFetch", version, {"groups": [{"group_id": "g", "topics": topics}],
                                                        "require_stable": stable})["groups"][0]
        else:
            body = client.call("OffsetFetch", version, {"group_id": "g", "topics": topics, "require_stable": stable})
        return [(p["partition_index"], p["committed_offset"], p["error_code"]) for p in body["topics"][0]["partitions"]]
    assert fetch(True) == [(0, -1, 0), (1, -1, CODE["UNSTABLE_OFFSET_COMMIT"])]
    assert fetch(False) == [(0, -1, 0), (1, -1, 0)]
    client.call("EndTxn", 3, {"transactional_id": "app", "producer_id": pid, "producer_epoch": epoch, "committed": True})
    assert fetch(True) == [(0, -1, 0), (1, 42, 0)]


def test_txn_offset_commit_checks_the_member_and_generation_it_names(broker, raw):
    from test_broker_group_apis import stable_member
    member, generation = stable_member(raw, "members")
    client = raw()
    pid, epoch = _init(client, "ctp")
    assert client.call("AddOffsetsToTxn", 3, {"transactional_id": "ctp", "producer_id": pid,
                                               "producer_epoch": epoch, "group_id": "members"})["error_code"] == 0

    def commit(member_id=None, generation_id=None, version=3):
        named = {} if member_id is None else {"generation_id": generation_id, "member_id": member_id,
                                               "group_instance_id": None}
        body = client.call("TxnOffsetCommit", version, {
            "transactional_id": "ctp", "group_id": "members", "producer_id": pid, "producer_epoch": epoch, **named,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                     "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
        return body["topics"][0]["partitions"][0]["error_code"]
    assert commit(member, generation + 1) == ErrorCode.ILLEGAL_GENERATION
    assert commit("someone-else", generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(member, generation) == CODE["NONE"]
    assert commit("", -1) == CODE["NONE"]                     # no member named: a manually assigned consumer
    assert commit(version=2) == CODE["NONE"]                    # before v3 the request names nobody
