"""The state machine of one transactional id (KIP-98): states, events, and the transition table.

Owns: :class:`TxnState` (the ids Kafka persists in ``__transaction_state``), the events that move a
transaction (:class:`Event`), the table of what each event does in each state (:data:`TRANSITIONS`) and
:class:`TransactionMetadata`, the coordinator's record of one transactional id. Must not know: requests,
storage, markers, clocks (``now_ms`` is a parameter), other transactional ids.

Theory of operation. A producer with a transactional id first calls InitProducerId: the id is ``Empty`` with
a producer id and epoch. Adding partitions (or a group's offsets) starts a transaction: ``Ongoing``, with a
start time that the timeout counts from. EndTxn moves it to ``PrepareCommit`` or ``PrepareAbort``; the
coordinator then writes a marker to every partition of the transaction and moves it on to
``CompleteCommit``/``CompleteAbort`` (event COMPLETE), from where the next AddPartitions starts the next
transaction. A transaction that must end without its producer's say (a new producer instance calls
InitProducerId, or the timeout passes) is first fenced (``PrepareEpochFence``: the epoch is bumped so the old
producer's requests fail) and then aborted. Every state change is written to ``__transaction_state`` by the
caller, so a restarted coordinator resumes from the last record: Prepare* states finish their markers,
``Ongoing`` waits for its producer or its timeout.

The table says, for each event, the next state in each state where the event is legal, ``RETRY`` where the
event repeats a request that already took effect (EndTxn retried after its answer was lost: success, no
change), or the error code answered otherwise. States the table does not list for an event answer
INVALID_TXN_STATE.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode
from kafkalab.protocol.schema.enums import TRANSACTION_STATUSES

RETRY = "RETRY"
MAX_EPOCH = 32767          # Short.MAX_VALUE: an epoch that would reach it gets a new producer id (KIP-360)


class TxnState(enum.IntEnum):
    """The transaction states, by the int8 ids of TransactionLogValue ``transaction_status``."""
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name DescribeTransactions and ListTransactions use ("Ongoing", "CompleteAbort", ...)."""
        return _LABELS[self]


assert {s.value: s.name for s in TxnState} == dict(TRANSACTION_STATUSES)
_LABELS = {TxnState[TRANSACTION_STATUSES[s.value]]: "".join(w.capitalize() for w in s.name.split("_"))
           for s in TxnState}
S = TxnState


class Event(enum.Enum):
    INIT = "init"              # InitProducerId: a fresh epoch for the next transaction
    ADD = "add"                # AddPartitionsToTxn / AddOffsetsToTxn: the transaction is under way
    COMMIT = "commit"          # EndTxn(committed=true)
    ABORT = "abort"            # EndTxn(committed=false), or the coordinator aborting after a fence
    FENCE = "fence"            # a new producer instance or the timeout ends an open transaction
    COMPLETE = "complete"      # every marker is written


_BUSY = ErrorCode.CONCURRENT_TRANSACTIONS
TRANSITIONS: dict[Event, dict[TxnState, TxnState | ErrorCode | str]] = {
    Event.INIT: {S.EMPTY: S.EMPTY, S.COMPLETE_COMMIT: S.EMPTY, S.COMPLETE_ABORT: S.EMPTY, S.DEAD: S.EMPTY,
                 S.PREPARE_COMMIT: _BUSY, S.PREPARE_ABORT: _BUSY, S.PREPARE_EPOCH_FENCE: _BUSY},
    Event.ADD: {S.EMPTY: S.ONGOING, S.ONGOING: S.ONGOING, S.COMPLETE_COMMIT: S.ONGOING,
                S.COMPLETE_ABORT: S.ONGOING, S.PREPARE_COMMIT: _BUSY, S.PREPARE_ABORT: _BUSY,
                S.PREPARE_EPOCH_FENCE: _BUSY},
    Event.COMMIT: {S.ONGOING: S.PREPARE_COMMIT, S.COMPLETE_COMMIT: RETRY, S.PREPARE_COMMIT: _BUSY,
                   S.PREPARE_EPOCH_FENCE: _BUSY},
    Event.ABORT: {S.ONGOING: S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE: S.PREPARE_ABORT, S.COMPLETE_ABORT: RETRY,
                  S.PREPARE_ABORT: _BUSY},
    Event.FENCE: {S.ONGOING: S.PREPARE_EPOCH_FENCE},
    Event.COMPLETE: {S.PREPARE_COMMIT: S.COMPLETE_COMMIT, S.PREPARE_ABORT: S.COMPLETE_ABORT},
}


def transition(state: TxnState, event: Event) -> TxnState | ErrorCode | str:
    """The next state, RETRY, or the error code for ``event`` in ``state``."""
    return TRANSITIONS[event].get(state, ErrorCode.INVALID_TXN_STATE)


@dataclass
class TransactionMetadata:
    """What the coordinator knows of one transactional id."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)          # groups whose offsets the transaction commits
    pending_offsets: dict[tuple[str, str, int], object] = field(default_factory=dict)  # (group, topic, p)
    start_ms: int = -1
    update_ms: int = -1
    previous_producer_id: int = -1
    last_epoch: int = -1                  # the epoch before the last bump (KIP-360 retries)

    def apply(self, event: Event, now_ms: int) -> int:
        """Take ``event``: NONE (moved, or a retry that changes nothing) or an error code (nothing changed)."""
        outcome = transition(self.state, event)
        if outcome == RETRY:
            return ErrorCode.NONE
        if isinstance(outcome, ErrorCode):
            return outcome
        if outcome is TxnState.ONGOING and self.state is not TxnState.ONGOING:
            self.partitions, self.groups, self.pending_offsets = set(), set(), {}
            self.start_ms = now_ms
        if outcome is TxnState.EMPTY:
            self.partitions, self.groups, self.pending_offsets, self.start_ms = set(), set(), {}, -1
        self.state = outcome
        self.update_ms = now_ms
        return ErrorCode.NONE

    def bump_epoch(self) -> None:
        """The next epoch (the coordinator gives a new producer id instead when the epochs are exhausted)."""
        self.last_epoch = self.producer_epoch
        self.producer_epoch += 1

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def expired(self, now_ms: int) -> bool:
        return self.state is TxnState.ONGOING and now_ms - self.start_ms > self.timeout_ms
