"""How much work a record set may cost: caps that make small hostile input stay small.

A batch header states its record count before anything is inflated, and a few hundred compressed bytes can
claim a million records (each a Python object, each ten nodes in a traced tree). So besides the per-batch
inflate cap (``DEFAULT_MAX_INFLATED`` in :mod:`.compression`), decoding honours:

* ``DEFAULT_MAX_RECORDS``: records one batch (or legacy wrapper) may hold; a batch claiming more is not
  inflated and gets a "budget exceeded" diagnostic;
* a :class:`Budget` shared by every batch of a record set, or of a whole frame: inflated bytes and records
  in all, so sixteen batches of 127 MiB each cannot add up to gigabytes, and tree nodes (a traced record
  is about ten nodes): past the node budget the rest is one leaf saying "budget exceeded".

The broker's gate applies the per-batch record cap too (``max_records_per_batch``). The codec decodes each
frame inside :func:`frame_budget`, so every record set of the frame (a Produce to sixteen partitions) draws
on one budget.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .compression import DEFAULT_MAX_INFLATED

DEFAULT_MAX_RECORDS = 1 << 18                  # records per batch
DEFAULT_FRAME_INFLATED = 2 * DEFAULT_MAX_INFLATED   # inflated bytes per record set / frame
DEFAULT_FRAME_RECORDS = 1 << 20                # records per record set / frame
DEFAULT_MAX_NODES = 100_000                    # tree nodes per traced record set / frame
BUDGET_EXCEEDED = "budget exceeded"


@dataclass
class Budget:
    """What a record set (or a frame holding several) may still inflate and decode; spent as batches are
    decoded. ``max_inflated`` and ``max_records`` cap one batch; the remaining totals cap them all."""
    inflated: int = DEFAULT_FRAME_INFLATED
    records: int = DEFAULT_FRAME_RECORDS
    max_inflated: int = DEFAULT_MAX_INFLATED
    max_records: int = DEFAULT_MAX_RECORDS
    nodes: int = DEFAULT_MAX_NODES

    def inflate_limit(self) -> int:
        """The inflate cap for the next batch: its own cap or what is left in all, whichever is smaller."""
        return max(0, min(self.max_inflated, self.inflated))

    def records_problem(self, count: int) -> str | None:
        """Why a batch claiming ``count`` records may not be decoded, or None (and then they are spent)."""
        if count > self.max_records:
            return f"{BUDGET_EXCEEDED}: {count} records in one batch, above the limit of {self.max_records}"
        if count > self.records:
            return f"{BUDGET_EXCEEDED}: {count} more records, only {max(self.records, 0)} left for this frame"
        self.records -= max(count, 0)
        return None

    def spend_inflated(self, size: int) -> None:
        self.inflated -= size


_FRAME: ContextVar[Budget | None] = ContextVar("kafkalab_frame_budget", default=None)


@contextmanager
def frame_budget(walks: int = 1):
    """Make one budget the default for every record set decoded inside (a frame's). ``walks``: how many
    times each record set is walked (annotated decoding reads records once for values, once for the tree),
    which multiplies the record and byte allowances but not the node budget."""
    budget = Budget(inflated=DEFAULT_FRAME_INFLATED * walks, records=DEFAULT_FRAME_RECORDS * walks)
    token = _FRAME.set(budget)
    try:
        yield budget
    finally:
        _FRAME.reset(token)


def default_budget(max_inflated: int = DEFAULT_MAX_INFLATED) -> Budget:
    """The budget of the frame being decoded, if any, else a fresh one for a record set."""
    budget = _FRAME.get()
    if budget is not None and max_inflated == DEFAULT_MAX_INFLATED:
        return budget
    return Budget(max_inflated=max_inflated)
