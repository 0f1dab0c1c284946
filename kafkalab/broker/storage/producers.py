"""Idempotent-producer state of one partition: the sequence checks of KIP-98.

For each producer id the partition remembers the epoch and the last few batches appended (first and last
sequence, base offset). A batch from a known producer must continue its sequence: the same sequences as a
remembered batch are a duplicate (answered with the original offset and no error), anything else that is not
``last + 1`` is OUT_OF_ORDER_SEQUENCE_NUMBER. Transaction markers raise a producer's epoch here (so a fenced
producer's batches are refused). Sans-IO, no clock.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode

REMEMBERED_BATCHES = 5          # Kafka keeps the last 5 batches per producer (max.in.flight for idempotence)
SEQUENCE_WRAP = 1 << 31


@dataclass(frozen=True, slots=True)
class Duplicate:
    base_offset: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=REMEMBERED_BATCHES))  # (first, last, base)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


def next_sequence(sequence: int) -> int:
    """Sequences wrap from int32 max to 0."""
    return (sequence + 1) % SEQUENCE_WRAP


class ProducerStates:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> int | Duplicate:
        """0 to append, a Duplicate, or an error code."""
        entry = self.entries.get(producer_id)
        if producer_id < 0 or first_seq < 0:
            return 0
        if entry is None:
            return 0 if first_seq == 0 else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        if epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if epoch > entry.epoch:
            return 0 if first_seq == 0 else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        for first, last, base in entry.batches:
            if first == first_seq and last == last_seq:
                return Duplicate(base)
        return 0 if first_seq == next_sequence(entry.last_sequence) else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER

    def fence(self, producer_id: int, epoch: int) -> None:
        """A transaction marker at ``epoch``: batches of older epochs are refused from now on (the zombie
        fencing of KIP-98); a newer epoch starts its sequences afresh."""
        entry = self.entries.get(producer_id)
        if entry is None or epoch > entry.epoch:
            self.entries[producer_id] = ProducerEntry(epoch)

    def record(self, producer_id: int, epoch: int, first_seq: int, last_seq: int, base_offset: int) -> None:
        if producer_id < 0 or first_seq < 0:
            return
        entry = self.entries.get(producer_id)
        if entry is None or epoch != entry.epoch:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        entry.batches.append((first_seq, last_seq, base_offset))
