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
on one budget. All defaults are configurable with :func:`set_limits`.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

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

    def fresh(self) -> "Budget":
        """A new budget with these allowances (``dataclasses.replace`` without its per-call field walk: one
        is made for every record set read outside a frame budget)."""
        return Budget(self.inflated, self.records, self.max_inflated, self.max_records, self.nodes)


_FRAME: ContextVar[Budget | None] = ContextVar("kafkalab_frame_budget", default=None)
#: what each frame (and each record set decoded on its own) may cost; change it with :func:`set_limits`
LIMITS = Budget()


def set_limits(**limits: int) -> Budget:
    """Change the default budget (``inflated``, ``records``, ``nodes`` per frame; ``max_inflated``,
    ``max_records`` per batch), e.g. ``set_limits(inflated=1 << 30)`` to read a capture of huge Fetch
    responses in full. Returns the previous limits (``set_limits(**vars(old))`` restores them)."""
    global LIMITS
    previous, LIMITS = LIMITS, replace(LIMITS, **limits)
    return previous


@contextmanager
def frame_budget(walks: int = 1):
    """Make one budget the default for every record set decoded inside (a frame's). ``walks``: how many
    times each record set is walked (annotated decoding reads records once for values, once for the tree),
    which multiplies the record and byte allowances but not the node budget."""
    budget = replace(LIMITS, inflated=LIMITS.inflated * walks, records=LIMITS.records * walks)
    token = _FRAME.set(budget)
    try:
        yield budget
    finally:
        _FRAME.reset(token)


def default_budget(max_inflated: int | None = None) -> Budget:
    """The budget of the frame being decoded, if any, else a fresh one from :data:`LIMITS` (with
    ``max_inflated``, when given, as the per-batch cap)."""
    budget = _FRAME.get()
    if budget is not None and max_inflated in (None, LIMITS.max_inflated):
        return budget
    return replace(LIMITS, max_inflated=max_inflated) if max_inflated is not None else LIMITS.fresh()
