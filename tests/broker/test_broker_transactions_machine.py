"""The transaction state machine on every transition, and the coordinator on a real broker state with an
injected clock: fencing, timeouts, markers, pending offsets, the state log and recovery; fetch sessions."""
from __future__ import annotations

import pytest

from kafkalab.broker.config import BrokerConfig
from kafkalab.broker.fetch_sessions import FetchSessions
from kafkalab.broker.state import BrokerState
from kafkalab.broker.storage import Committed
from kafkalab.broker.transactions import Event, TransactionMetadata, TxnState
from kafkalab.broker.transactions.state_log import TOPIC, partition_for
from kafkalab.protocol.payloads import decode_transaction_record
from kafkalab.protocol.records import build_batch, decode_records
from kafkalab.protocol import ErrorCode

S, E = TxnState, Event
OK = 0
BUSY = ErrorCode.CONCURRENT_TRANSACTIONS
BAD = ErrorCode.INVALID_TXN_STATE
FENCED = ErrorCode.PRODUCER_FENCED
MAPPING = ErrorCode.INVALID_PRODUCER_ID_MAPPING
OLD_EPOCH = ErrorCode.INVALID_PRODUCER_EPOCH

# (state, event) -> the state after it (or the error code, nothing changing): Kafka's TransactionState rules
EXPECTED = {
    (S.EMPTY, E.INIT): S.EMPTY, (S.ONGOING, E.INIT): BAD, (S.PREPARE_COMMIT, E.INIT): BUSY,
    (S.PREPARE_ABORT, E.INIT): BUSY, (S.COMPLETE_COMMIT, E.INIT): S.EMPTY, (S.COMPLETE_ABORT, E.INIT): S.EMPTY,
    (S.DEAD, E.INIT): S.EMPTY, (S.PREPARE_EPOCH_FENCE, E.INIT): BUSY,
    (S.EMPTY, E.ADD): S.ONGOING, (S.ONGOING, E.ADD): S.ONGOING, (S.PREPARE_COMMIT, E.ADD): BUSY,
    (S.PREPARE_ABORT, E.ADD): BUSY, (S.COMPLETE_COMMIT, E.ADD): S.ONGOING, (S.COMPLETE_ABORT, E.ADD): S.ONGOING,
    (S.DEAD, E.ADD): BAD, (S.PREPARE_EPOCH_FENCE, E.ADD): BUSY,
    (S.EMPTY, E.COMMIT): BAD, (S.ONGOING, E.COMMIT): S.PREPARE_COMMIT, (S.PREPARE_COMMIT, E.COMMIT): BUSY,
    (S.PREPARE_ABORT, E.COMMIT): BAD, (S.COMPLETE_COMMIT, E.COMMIT): S.COMPLETE_COMMIT,
    (S.COMPLETE_ABORT, E.COMMIT): BAD, (S.DEAD, E.COMMIT): BAD, (S.PREPARE_EPOCH_FENCE, E.COMMIT): BUSY,
    (S.EMPTY, E.ABORT): BAD, (S.ONGOING, E.ABORT): S.PREPARE_ABORT, (S.PREPARE_COMMIT, E.ABORT): BAD,
    (S.PREPARE_ABORT, E.ABORT): BUSY, (S.COMPLETE_COMMIT, E.ABORT): BAD, (S.COMPLETE_ABORT, E.ABORT): S.COMPLETE_ABORT,
    (S.DEAD, E.ABORT): BAD, (S.PREPARE_EPOCH_FENCE, E.ABORT): S.PREPARE_ABORT,
    (S.EMPTY, E.FENCE): BAD, (S.ONGOING, E.FENCE): S.PREPARE_EPOCH_FENCE, (S.PREPARE_COMMIT, E.FENCE): BAD,
    (S.PREPARE_ABORT, E.FENCE): BAD, (S.COMPLETE_COMMIT, E.FENCE): BAD, (S.COMPLETE_ABORT, E.FENCE): BAD,
    (S.DEAD, E.FENCE): BAD, (S.PREPARE_EPOCH_FENCE, E.FENCE): BAD,
    (S.EMPTY, E.COMPLETE): BAD, (S.ONGOING, E.COMPLETE): BAD, (S.PREPARE_COMMIT, E.COMPLETE): S.COMPLETE_COMMIT,
    (S.PREPARE_ABORT, E.COMPLETE): S.COMPLETE_ABORT, (S.COMPLETE_COMMIT, E.COMPLETE): BAD,
    (S.COMPLETE_ABORT, E.COMPLETE): BAD, (S.DEAD, E.COMPLETE): BAD, (S.PREPARE_EPOCH_FENCE, E.COMPLETE): BAD,
}


def test_the_expectations_cover_every_state_and_event():
    assert set(EXPECTED) == {(s, e) for s in TxnState for e in Event}


@pytest.mark.parametrize(("state", "event"), sorted(EXPECTED, key=lambda k: (k[0], k[1].value)))
def test_every_transition(state, event):
    meta = TransactionMetadata("t", 7, 3, 1000, state, {("x", 0)}, start_ms=50, update_ms=60)
    expected = EXPECTED[(state, event)]
    error = meta.apply(event, now_ms=100)
    if isinstance(expected, TxnState):
        assert error == OK and meta.state is expected
        assert meta.update_ms == (60 if expected is state and event in (E.COMMIT, E.ABORT) else 100)
    else:
        assert error == expected and meta.state is state and meta.update_ms == 60
    starts = event is E.ADD and state is not S.ONGOING and expected is S.ONGOING
    assert meta.start_ms == (100 if starts else -1 if expected is S.EMPTY else 50)
    assert meta.partitions == (set() if starts or expected is S.EMPTY else {("x", 0)})


def test_timeout_counts_from_the_start_of_the_transaction():
    meta = TransactionMetadata("t", 1, 0, timeout_ms=1000)
    meta.apply(E.ADD, 5000)
    meta.apply(E.ADD, 5900)
    assert not meta.expired(6000) and meta.expired(6001)
    assert TxnState.PREPARE_EPOCH_FENCE.label == "PrepareEpochFence"


# --- the coordinator on a broker state -------------------------------------------------------------------

@pytest.fixture
def state():
    s = BrokerState(BrokerConfig())
    s.create_topic("t", 2)
    yield s
    s.close()


def _produce(state, pid, epoch, partition=0, values=(b"a", b"b"), seq=0):
    log = state.store.partition("t", partition).log
    batch = build_batch([(None, v) for v in values], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        transactional=True)
    return log.append(batch.raw)


def _markers(state, partition=0):
    log = state.store.partition("t", partition).log
    return [(b.producer_epoch, b.records[0].control.type) for b in decode_records(log.read(0, 1 << 30))
            if b.control]


def test_init_bumps_the_epoch_and_fences_older_instances(state):
    tx = state.transactions
    error, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, now_ms=1)
    assert (error, epoch) == (OK, 0) and pid >= 1000
    assert tx.init_producer_id("app", 60000, -1, -1, 2) == (OK, pid, 1)
    assert tx.lookup("app", pid, 0) == (None, FENCED)
    assert tx.lookup("app", pid + 1, 1) == (None, MAPPING)
    assert tx.init_producer_id("app", 60000, pid, 0, 3)[0] == FENCED          # KIP-360: a stale instance
    assert tx.init_producer_id("app", 60000, pid, 1, 4) == (OK, pid, 2)       # KIP-360: the current one
    assert tx.init_producer_id("app", 60000, pid, 1, 5) == (OK, pid, 2)       # its retry: no second bump
    assert tx.init_producer_id("app", 0, -1, -1, 6)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert tx.init_producer_id("", 60000, -1, -1, 5)[0] == ErrorCode.INVALID_REQUEST


def test_commit_writes_markers_and_moves_the_last_stable_offset(state):
    tx = state.transactions
    _, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    assert tx.verify(pid, epoch, "t", 0) == BAD                             # not added yet (KIP-890)
    assert tx.add_partitions(meta, {("t", 0), ("t", 1)}, 2) == OK and meta.state is S.ONGOING
    assert tx.verify(pid, epoch, "t", 0) == OK and tx.verify(pid, epoch - 1, "t", 0) == OLD_EPOCH
    _produce(state, pid, epoch)
    log = state.store.partition("t", 0).log
    assert (log.last_stable_offset, log.high_watermark) == (0, 2)
    assert tx.end_txn(meta, True, 3) == OK and meta.state is S.COMPLETE_COMMIT
    assert (log.last_stable_offset, log.high_watermark) == (3, 3) and not log.aborted
    assert _markers(state, 0) == _markers(state, 1) == [(epoch, 1)]
    assert tx.end_txn(meta, True, 4) == OK and _markers(state, 0) == [(epoch, 1)]      # a retry: no new marker
    assert tx.end_txn(meta, False, 5) == BAD


def test_abort_indexes_the_aborted_range(state):
    tx = state.transactions
    _, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    tx.add_partitions(meta, {("t", 0)}, 2)
    _produce(state, pid, epoch)
    assert tx.end_txn(meta, False, 3) == OK and meta.state is S.COMPLETE_ABORT
    log = state.store.partition("t", 0).log
    assert [tuple(a) for a in log.aborted] == [(pid, 0, 2)]
    assert log.aborted_between(0, 3) and not log.aborted_between(3, 10)
    assert _markers(state, 1) == []                                         # only the transaction's partitions


def test_timeout_fences_and_aborts(state):
    tx = state.transactions
    _, pid, epoch = tx.init_producer_id("app", 1000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    tx.add_partitions(meta, {("t", 0)}, 10_000)
    _produce(state, pid, epoch)
    assert tx.expire(11_000) == [] and meta.state is S.ONGOING
    assert tx.expire(11_001) == ["app"]
    assert (meta.state, meta.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert _markers(state) == [(epoch + 1, 0)]
    assert tx.lookup("app", pid, epoch) == (None, FENCED)
    partition = state.store.partition("t", 0)
    assert partition.producers.check(pid, epoch, 2, 2) == OLD_EPOCH            # the zombie's next batch
    assert tx.init_producer_id("app", 1000, pid, epoch, 11_002) == (OK, pid, epoch + 1)   # KIP-360 recovery


def test_reinit_aborts_the_open_transaction_of_the_previous_instance(state):
    tx = state.transactions
    _, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    tx.add_partitions(meta, {("t", 1)}, 2)
    _produce(state, pid, epoch, partition=1)
    assert tx.init_producer_id("app", 60000, -1, -1, 3) == (OK, pid, epoch + 2)
    assert _markers(state, 1) == [(epoch + 1, 0)] and state.store.partition("t", 1).log.last_stable_offset == 3
    assert meta.state is S.EMPTY


def test_exhausted_epochs_rotate_the_producer_id(state):
    tx = state.transactions
    _, pid, _ = tx.init_producer_id("app", 60000, -1, -1, 1)
    tx.txns["app"].producer_epoch = 32766           # Short.MAX_VALUE - 1: exhausted
    error, new_pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 2)
    assert (error, epoch) == (OK, 0) and new_pid != pid and tx.txns["app"].previous_producer_id == pid
    assert tx.verify(pid, 32766, "t", 0) == MAPPING


@pytest.mark.parametrize("commit", [True, False])
def test_pending_offsets_become_visible_only_on_commit(state, commit):
    tx = state.transactions
    _, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    assert tx.stage_offsets(meta, "g", {("t", 0): Committed(5)}, 2) == BAD     # AddOffsetsToTxn first
    assert tx.add_offsets(meta, "g", 2) == OK
    assert ("__consumer_offsets", 0) in meta.partitions                      # as Kafka: its markers close them
    assert tx.stage_offsets(meta, "g", {("t", 0): Committed(5), ("t", 1): Committed(7)}, 2) == OK
    assert state.store.fetch_committed("g", "t", 0) is None
    tx.end_txn(meta, commit, 3)
    assert state.store.fetch_committed("g", "t", 1) == (Committed(7) if commit else None)


def test_state_records_are_kafkas_and_recovery_resumes(tmp_path):
    first = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    first.create_topic("t", 1)
    tx = first.transactions
    _, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    tx.add_partitions(meta, {("t", 0)}, 2)
    _produce(first, pid, epoch)
    meta.apply(E.COMMIT, 3)                    # the coordinator "dies" between PrepareCommit and the markers
    tx.log.write(meta, 3)
    log = first.store.partition(TOPIC, partition_for("app")).log
    records = [decode_transaction_record(r.key, r.value) for b in decode_records(log.read(0, 1 << 30))
               for r in b.records]
    assert [r["value"]["transaction_status"] for r in records] == [0, 1, 2]
    assert records[-1]["value"]["transaction_partitions"] == [{"topic": "t", "partition_ids": [0]}]
    first.close()
    second = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    second.recover(now_ms=4)
    meta = second.transactions.txns["app"]
    assert (meta.state, meta.producer_id, meta.producer_epoch) == (S.COMPLETE_COMMIT, pid, epoch)
    assert second.store.partition("t", 0).log.last_stable_offset == 3 and _markers(second) == [(epoch, 1)]
    assert second.next_producer_id > pid
    second.close()


@pytest.mark.parametrize("commit", [True, False])
def test_staged_offsets_survive_a_crash_between_prepare_and_markers(tmp_path, commit):
    """TxnOffsetCommit writes the offsets as the producer's transactional records in __consumer_offsets; the
    coordinator "dies" after Prepare*: recovery finishes the transaction, committing the offsets or not."""
    first = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    first.create_topic("t", 2)
    tx = first.transactions
    _, pid, epoch = tx.init_producer_id("app", 60000, -1, -1, 1)
    meta, _ = tx.lookup("app", pid, epoch)
    tx.add_offsets(meta, "g", 2)
    tx.stage_offsets(meta, "g", {("t", 1): Committed(7, metadata="", commit_timestamp=2)}, 2)
    first.store.commit("g", "t", 0, Committed(3, metadata="", commit_timestamp=2))        # a plain commit beside it
    meta.apply(E.COMMIT if commit else E.ABORT, 3)
    tx.log.write(meta, 3)
    first.close()
    second = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    second.recover(now_ms=4)
    assert second.store.fetch_committed("g", "t", 1) == (Committed(7, metadata="", commit_timestamp=2) if commit else None)
    assert second.store.fetch_committed("g", "t", 0) == Committed(3, metadata="", commit_timestamp=2)
    assert second.transactions.txns["app"].state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    second.close()
    third = BrokerState(BrokerConfig(data_dir=str(tmp_path)))       # the markers now close the records
    third.recover(now_ms=5)
    assert third.store.fetch_committed("g", "t", 1) == (Committed(7, metadata="", commit_timestamp=2) if commit else None)
    assert third.store.open_txn_offsets == {}
    third.close()


def test_an_open_transaction_survives_a_restart_until_its_timeout(tmp_path):
    first = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    first.create_topic("t", 1)
    _, pid, epoch = first.transactions.init_producer_id("app", 1000, -1, -1, 1)
    first.transactions.add_partitions(first.transactions.txns["app"], {("t", 0)}, 100)
    _produce(first, pid, epoch)
    first.close()
    second = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    second.recover(now_ms=500)
    log = second.store.partition("t", 0).log
    assert log.open_txns == {pid: 0} and log.last_stable_offset == 0
    second.tick(1101)
    assert second.transactions.txns["app"].state is S.COMPLETE_ABORT and log.last_stable_offset == 3
    assert [tuple(a) for a in log.aborted] == [(pid, 0, 2)]
    second.close()


# --- fetch sessions ----------------------------------------------------------------------------------------

def test_fetch_session_rules():
    sessions = FetchSessions(capacity=2)
    error, session, incremental = sessions.resolve(0, 0)
    assert (error, incremental) == (OK, False) and session.session_id > 0 and session.next_epoch == 1
    assert sessions.resolve(session.session_id, 2)[0] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert sessions.resolve(session.session_id, 1) == (OK, session, True)
    assert sessions.resolve(12345, 1)[0] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert sessions.resolve(session.session_id, -1) == (OK, None, False)
    assert session.session_id not in sessions.sessions
    ids = [sessions.resolve(0, 0)[1].session_id for _ in range(3)]
    assert list(sessions.sessions) == ids[1:]                             # the oldest went
    session = sessions.sessions[ids[-1]]
    session.update([{"topic": "t", "partitions": [{"partition": 0}, {"partition": 1}]}], [], lambda t: t["topic"])
    session.update([], [{"topic": "t", "partitions": [0]}], lambda t: t["topic"])
    assert list(session.partitions) == [("t", 1)]
    result = {"high_watermark": 5, "last_stable_offset": 5, "log_start_offset": 0, "records": b"", "error_code": 0}
    assert session.changed(("t", 1), result) and not session.changed(("t", 1), result)
    assert session.changed(("t", 1), {**result, "high_watermark": 6})
    assert session.changed(("t", 1), {**result, "high_watermark": 6, "records": b"x"})


def test_recovery_skips_state_records_that_do_not_decode(tmp_path):
    first = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    first.transactions.init_producer_id("good", 60000, -1, -1, 1)
    log = first.store.partition(TOPIC, partition_for("good")).log
    good_value = decode_records(log.read(0, 1 << 30))[0].records[0].value
    bad_status = bytearray(good_value)
    bad_status[2 + 8 + 2 + 4] = 99                      # transaction_status: no such state
    garbage = [(b"\x00\x00\x00\x03bad", bytes(bad_status)), (b"\x00\x07", b"?"), (b"\x00", None)]
    for key, value in garbage:
        log.append(build_batch([(key, value)], base_timestamp=2).raw)
    first.close()
    second = BrokerState(BrokerConfig(data_dir=str(tmp_path)))
    second.recover(now_ms=3)
    assert list(second.transactions.txns) == ["good"]
    second.close()
