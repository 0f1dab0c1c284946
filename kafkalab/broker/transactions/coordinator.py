"""The transaction coordinator: every transactional id's metadata, the checks requests pass, and the effects
of each state change (state records, markers, offsets).

Owns: the table of transactional ids (and producer id -> transactional id), producer-id and epoch checks
(INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED; handlers turn PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for
the request versions that predate it), writing the commit/abort markers to every partition of a transaction,
turning a transaction's pending group offsets into committed ones when it commits, the timeout, and recovery
from ``__transaction_state``. The state rules themselves live in :mod:`.machine`. Must not know: the wire
format of requests, sockets, clocks (``now_ms`` comes with every call).

Markers are written synchronously, inside the EndTxn (or fence, or timeout) that decides them, so the
Prepare* states last only between two records of the state log; a restart that finds one finishes it.
Group offsets are not written to ``__consumer_offsets`` partitions by markers: they wait in the transaction
(TxnOffsetCommit) and go to the store's committed offsets when the transaction commits.
"""
from __future__ import annotations

import logging

from kafkalab.protocol import ErrorCode
from kafkalab.protocol.records import ControlRecord, build_batch

from ..storage import Committed
from .machine import MAX_EPOCH, Event, TransactionMetadata, TxnState
from .state_log import TransactionStateLog

log = logging.getLogger("kafkalab.broker")

MAX_TIMEOUT_MS = 900_000            # transaction.max.timeout.ms
COMMIT, ABORT = 1, 0                # control record types


class TransactionCoordinator:
    def __init__(self, state) -> None:
        self.state = state
        self.txns: dict[str, TransactionMetadata] = {}
        self.by_pid: dict[int, str] = {}
        self.log = TransactionStateLog(state)

    # --- checks ---------------------------------------------------------------------------------------------

    def lookup(self, transactional_id: str, producer_id: int, epoch: int) -> tuple[TransactionMetadata | None, int]:
        """The metadata a request names, or the error for a wrong producer id or epoch."""
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return None, ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != epoch:
            return None, ErrorCode.PRODUCER_FENCED
        return meta, ErrorCode.NONE

    def verify(self, producer_id: int, epoch: int, topic: str, partition: int) -> int:
        """KIP-890 verification of a transactional Produce batch: the partition must be in the producer's
        ongoing transaction, with the current epoch."""
        meta = self.txns.get(self.by_pid.get(producer_id, ""))
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if meta.state is not TxnState.ONGOING or (topic, partition) not in meta.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    # --- requests -------------------------------------------------------------------------------------------

    def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int, epoch: int,
                         now_ms: int) -> tuple[int, int, int]:
        """(error, producer id, epoch). A known id gets its epoch bumped (an open transaction is fenced and
        aborted first); a producer presenting an older id or epoch than the current one is fenced."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        if not 0 < timeout_ms <= MAX_TIMEOUT_MS:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        meta = self.txns.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(transactional_id, self._new_pid(), -1, timeout_ms)
            self.txns[transactional_id] = meta
            self.by_pid[meta.producer_id] = transactional_id
        retry = producer_id >= 0 and self._is_retry(meta, producer_id, epoch)
        if producer_id >= 0 and not retry and (producer_id, epoch) != (meta.producer_id, meta.producer_epoch):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if meta.state is TxnState.ONGOING:
            self._fence_and_abort(meta, now_ms)
        error = meta.apply(Event.INIT, now_ms)
        if error:
            return error, -1, -1
        meta.timeout_ms = timeout_ms
        if not retry:
            self._next_epoch(meta)
        if producer_id < 0:
            meta.last_epoch = -1        # a new instance: no retry can name the epoch it replaced
        self.log.write(meta, now_ms)
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    @staticmethod
    def _is_retry(meta: TransactionMetadata, producer_id: int, epoch: int) -> bool:
        """KIP-360: a producer presenting the epoch before the last bump (the coordinator's own fence after a
        timeout, or a bump whose answer it never got), or the producer id before the last rotation, gets the
        current id and epoch instead of being fenced."""
        return ((producer_id, epoch) == (meta.producer_id, meta.last_epoch) and epoch >= 0) or \
            (producer_id == meta.previous_producer_id >= 0 and epoch >= MAX_EPOCH - 1)

    def add_partitions(self, meta: TransactionMetadata, partitions: set[tuple[str, int]], now_ms: int) -> int:
        """Partitions (that exist: the handler checks) join the transaction, which starts if it had not."""
        previous = meta.state
        error = meta.apply(Event.ADD, now_ms)
        if error:
            return error
        fresh = partitions - meta.partitions
        if fresh or previous is not TxnState.ONGOING:
            meta.partitions |= fresh
            self.log.write(meta, now_ms)
        return ErrorCode.NONE

    def add_offsets(self, meta: TransactionMetadata, group_id: str, now_ms: int) -> int:
        """AddOffsetsToTxn: as in Kafka, the group's ``__consumer_offsets`` partition joins the transaction, so
        its markers close the offsets TxnOffsetCommit writes there."""
        error = meta.apply(Event.ADD, now_ms)
        if not error:
            meta.groups.add(group_id)
            meta.partitions.add(self.state.store.offsets_partition())
            self.log.write(meta, now_ms)
        return error

    def stage_offsets(self, meta: TransactionMetadata, group_id: str, offsets: dict[tuple[str, int], Committed],
                      now_ms: int) -> int:
        """TxnOffsetCommit: the offsets wait in the transaction until it ends, and are written at once as the
        producer's transactional records in ``__consumer_offsets`` (so a crash before the markers loses none)."""
        if meta.state is not TxnState.ONGOING or group_id not in meta.groups:
            return ErrorCode.INVALID_TXN_STATE
        staged = {(group_id, topic, partition): committed for (topic, partition), committed in offsets.items()}
        self.state.store.stage_txn_offsets(meta.producer_id, meta.producer_epoch, staged, now_ms)
        meta.pending_offsets.update(staged)
        return ErrorCode.NONE

    def pending_offsets(self, group_id: str) -> set[tuple[str, int]]:
        """(topic, partition) of the group's offsets that open transactions are committing (KIP-447)."""
        return {(topic, partition) for meta in self.txns.values() if group_id in meta.groups
                for (group, topic, partition) in meta.pending_offsets if group == group_id}

    def end_txn(self, meta: TransactionMetadata, commit: bool, now_ms: int) -> int:
        previous = meta.state
        error = meta.apply(Event.COMMIT if commit else Event.ABORT, now_ms)
        if error or meta.state is previous:
            return error
        self.log.write(meta, now_ms)
        self._complete(meta, now_ms)
        return ErrorCode.NONE

    # --- the coordinator's own moves ------------------------------------------------------------------------

    def expire(self, now_ms: int) -> list[str]:
        """Fence and abort every transaction open longer than its timeout; returns their ids."""
        expired = [meta for meta in self.txns.values() if meta.expired(now_ms)]
        for meta in expired:
            log.info("transaction %r timed out after %d ms: aborting", meta.transactional_id, meta.timeout_ms)
            self._fence_and_abort(meta, now_ms)
        return [meta.transactional_id for meta in expired]

    def _fence_and_abort(self, meta: TransactionMetadata, now_ms: int) -> None:
        meta.apply(Event.FENCE, now_ms)
        meta.bump_epoch()
        self.log.write(meta, now_ms)
        meta.apply(Event.ABORT, now_ms)
        self.log.write(meta, now_ms)
        self._complete(meta, now_ms)

    def _complete(self, meta: TransactionMetadata, now_ms: int) -> None:
        """Write the markers of a Prepare* transaction, commit its offsets if it commits, record the end."""
        commit = meta.state is TxnState.PREPARE_COMMIT
        self.write_markers(meta.producer_id, meta.producer_epoch, commit, meta.partitions, now_ms)
        if commit:
            for (group, topic, partition), committed in sorted(meta.pending_offsets.items()):
                self.state.store.commit(group, topic, partition, committed, written=True)
        meta.apply(Event.COMPLETE, now_ms)
        meta.partitions, meta.groups, meta.pending_offsets = set(), set(), {}
        self.log.write(meta, now_ms)

    def write_markers(self, producer_id: int, epoch: int, commit: bool, partitions, now_ms: int) -> None:
        marker = control_batch(producer_id, epoch, commit, now_ms)
        for topic, index in sorted(partitions):
            partition = self.state.store.partition(topic, index)
            if partition is not None:
                append_marker(partition, marker, producer_id, epoch)
        self.state.appended()

    def _new_pid(self) -> int:
        return self.state.allocate_producer_id()

    def _next_epoch(self, meta: TransactionMetadata) -> None:
        """The next epoch, or at the end of the epoch range a new producer id at epoch 0."""
        if not meta.epoch_exhausted:
            meta.bump_epoch()
            return
        self.by_pid.pop(meta.producer_id, None)
        meta.previous_producer_id, meta.producer_id = meta.producer_id, self._new_pid()
        meta.producer_epoch, meta.last_epoch = 0, -1
        self.by_pid[meta.producer_id] = meta.transactional_id

    # --- recovery -------------------------------------------------------------------------------------------

    def recover(self, now_ms: int) -> None:
        """Rebuild from ``__transaction_state``; finish transactions caught between Prepare* and Complete*."""
        for transactional_id, meta in self.log.load().items():
            meta.pending_offsets = dict(self.state.store.open_txn_offsets.get(meta.producer_id, {}))
            self.txns[transactional_id] = meta
            self.by_pid[meta.producer_id] = transactional_id
            self.state.next_producer_id = max(self.state.next_producer_id, meta.producer_id + 1)
        for meta in self.txns.values():
            if meta.state is TxnState.PREPARE_EPOCH_FENCE:
                meta.apply(Event.ABORT, now_ms)
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._complete(meta, now_ms)


def control_batch(producer_id: int, epoch: int, commit: bool, now_ms: int) -> bytes:
    """A control batch holding one commit or abort marker of ``producer_id`` at ``epoch``."""
    return build_batch([ControlRecord(type=COMMIT if commit else ABORT)], control=True, transactional=True,
                       producer_id=producer_id, producer_epoch=epoch, base_timestamp=now_ms).raw


def append_marker(partition, marker: bytes, producer_id: int, epoch: int) -> None:
    """The marker closes the producer's transaction in the partition's log and fences its older epochs."""
    partition.log.append(marker)
    partition.producers.fence(producer_id, epoch)


def for_version(error: int, api_version: int, fenced_since: int) -> int:
    """PRODUCER_FENCED (KIP-588) as request versions older than ``fenced_since`` know it: INVALID_PRODUCER_EPOCH."""
    fenced = error == ErrorCode.PRODUCER_FENCED and api_version < fenced_since
    return ErrorCode.INVALID_PRODUCER_EPOCH if fenced else error
