"""One partition's log: batches as received (offsets rewritten), indexed by offset, in segments.

Owns: the next offset to assign (log end offset), the log start offset, the batch index (base offset, last
offset, segment, position, size, max timestamp) and segment rolling. Must not know: requests, producers,
topics or clocks. Appends take record-set bytes that were already validated and give them consecutive offsets
without re-encoding: record batches (v2) get a new 16-byte head (base offset, length, leader epoch 0, all
outside the CRC) in front of a read-only view of the rest, so appending copies nothing; legacy message sets go
through the codec's ``assign_offsets``. A batch whose offset range contradicts its record count is refused
(:class:`InvalidBatch`): the log end offset never rewinds or leaps. Opening a file-backed log recovers its
segments through :mod:`.recovery`. Whole segments below the log start offset are dropped (DeleteRecords).
Reads hand back whole stored batches, byte for byte. With one replica the high watermark is the log end
offset.

Transactions (KIP-98) as the log sees them: every transactional batch opens its producer's transaction here
(first offset remembered) unless one is open; a control batch (a commit or abort marker) closes it, and an
abort is kept in the aborted-transaction index (producer id, first offset, marker offset) that read_committed
Fetch answers with. The last stable offset is the first offset of the oldest open transaction, else the log
end offset. Both are rebuilt by recovery, which indexes the stored batches the same way.
"""
from __future__ import annotations

import bisect
import logging
import os
import struct
from typing import Callable, NamedTuple

from kafkalab.protocol.records import assign_offsets, decode_records, iter_batches
from kafkalab.protocol.records.batch import header_problem

from .recovery import scan_segment
from .segment import FileSegment, HandleCache, MemorySegment

logger = logging.getLogger("kafkalab.broker")

_V2_MAX_TS = struct.Struct(">q")    # at byte 35 of a v2 batch
_V2_HEAD = struct.Struct(">qii")    # base offset, batch length, partition leader epoch: the bytes before magic
LEADER_EPOCH = 0                    # this broker has led every partition since epoch 0
_V2_PRODUCER = struct.Struct(">qhi")  # producer id, epoch, base sequence at byte 43
_V1_TS_AT = 18                      # a magic 1 message's timestamp
_V2_ATTRIBUTES = struct.Struct(">h")  # at byte 21 of a v2 batch
_V2_PRODUCER_ID = struct.Struct(">q")  # at byte 43
TRANSACTIONAL, CONTROL = 0x10, 0x20  # v2 attribute bits
COMMIT_MARKER = 1                   # control record type (0 = ABORT)


class InvalidBatch(ValueError):
    """A record set whose headers make no sense reached the log (the broker's gate should have refused it)."""


class BatchEntry(NamedTuple):
    base_offset: int
    last_offset: int
    segment: object
    position: int
    size: int
    max_timestamp: int
    magic: int


def batch_max_timestamp(data, position: int, magic: int) -> int:
    if magic == 2:
        return _V2_MAX_TS.unpack_from(data, position + 35)[0]
    if magic == 1:
        return _V2_MAX_TS.unpack_from(data, position + _V1_TS_AT)[0]
    return -1


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int           # the offset of the abort marker


class PartitionLog:
    def __init__(self, segment_factory: Callable[[int], object], segment_bytes: int) -> None:
        self._new_segment = segment_factory
        self.segment_bytes = segment_bytes
        self.segments: list = []
        self.entries: list[BatchEntry] = []
        self._lasts: list[int] = []         # last offsets of entries, for bisect
        self.log_start_offset = 0
        self.next_offset = 0
        self.open_txns: dict[int, int] = {}         # producer id -> first offset of its open transaction
        self.aborted: list[AbortedTxn] = []          # in marker (last offset) order

    # --- construction ---------------------------------------------------------------------------------

    @classmethod
    def in_memory(cls, segment_bytes: int) -> PartitionLog:
        return cls(MemorySegment, segment_bytes)

    @classmethod
    def open(cls, directory: str, segment_bytes: int, handles: HandleCache | None = None) -> PartitionLog:
        """A file-backed log, recovering whatever segments ``directory`` holds (a torn tail is cut off);
        ``handles``: the store's bounded cache of open files."""
        os.makedirs(directory, exist_ok=True)
        handles = handles if handles is not None else HandleCache()
        log = cls(lambda base: FileSegment(directory, base, handles), segment_bytes)
        for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
            log._recover_segment(FileSegment(directory, int(name[:-4]), handles))
        if log.entries:
            log.log_start_offset = log.entries[0].base_offset
        start_file = os.path.join(directory, "log-start-offset")
        if os.path.exists(start_file):
            with open(start_file) as f:
                log.log_start_offset = max(log.log_start_offset, int(f.read().strip() or 0))
        log.next_offset = max(log.next_offset, log.log_start_offset)
        return log

    def _recover_segment(self, segment) -> None:
        """Index every batch of ``segment`` that proves intact (:mod:`.recovery`); damaged stretches between
        them are skipped (copied to ``<segment>.damaged`` for inspection) and a torn tail is cut off. Every
        byte not kept is logged with the reason."""
        data = segment.read(0, segment.size)
        scan = scan_segment(data, self.next_offset - 1)
        for k in scan.kept:
            self._index(segment, data, k.position, k.size, k.base_offset, k.last_offset, k.magic)
        for d in scan.damaged:
            logger.error("recovery of %s: bytes %d..%d skipped (%s); copied to %s.damaged", segment.path,
                         d.start, d.end, d.reason, segment.path)
            _quarantine(segment.path, d.start, data[d.start:d.end])
        if scan.tail < segment.size:
            logger.warning("recovery of %s: cutting %d bytes after byte %d (a torn or unprovable tail); copied "
                           "to %s.damaged", segment.path, segment.size - scan.tail, scan.tail, segment.path)
            _quarantine(segment.path, scan.tail, data[scan.tail:])
            segment.truncate(scan.tail)
        if segment.size or not self.segments:
            self.segments.append(segment)
        else:
            segment.delete()

    # --- writing --------------------------------------------------------------------------------------

    def append(self, records: bytes, counts: list[int] | None = None) -> int:
        """Store a validated record set at the end of the log; returns its base offset.

        Record batches (v2) get their offsets and the partition leader epoch written into the 16 bytes before
        the magic byte, which the CRC does not cover: what is stored is those new headers and read-only views
        of the rest of the received batches (nothing copied). A v2 header whose offset range is not its record
        count raises :class:`InvalidBatch` (the log end offset never moves back or leaps). Legacy message sets
        go through the codec's ``assign_offsets`` (``counts``: records per entry, when the caller counted)."""
        base = self.next_offset
        bounds = list(iter_batches(records))
        if bounds and all(b.magic == 2 and not b.partial for b in bounds):
            pieces, next_offset, placed = _place_v2(records, bounds, base)
            data = records       # the same bytes from byte 16 of each batch on (max timestamp, producer...)
        else:
            data, next_offset = assign_offsets(records, base, counts)
            pieces = data
            placed = [(b.position, b.size, b.base_offset, b.last_offset, b.magic) for b in iter_batches(data)]
        segment = self._active_segment(len(records) if pieces is not data else len(data))
        start = segment.append(pieces)
        for position, size, first, last, magic in placed:
            self._index(segment, data, position, size, first, last, magic, start)
        self.next_offset = next_offset
        return base

    def _index(self, segment, data, position, size, base, last, magic, shift=0) -> None:
        entry = BatchEntry(base, last, segment, shift + position, size, batch_max_timestamp(data, position, magic),
                           magic)
        self.entries.append(entry)
        self._lasts.append(last)
        self.next_offset = max(self.next_offset, last + 1)
        if magic == 2:
            attributes = _V2_ATTRIBUTES.unpack_from(data, position + 21)[0]
            if attributes & TRANSACTIONAL:
                self._track_transaction(data, position, size, base, attributes)

    def _track_transaction(self, data, position: int, size: int, base: int, attributes: int) -> None:
        """A transactional batch opens its producer's transaction; a marker closes it (an abort is indexed)."""
        pid = _V2_PRODUCER_ID.unpack_from(data, position + 43)[0]
        if not attributes & CONTROL:
            self.open_txns.setdefault(pid, base)
            return
        first = self.open_txns.pop(pid, None)
        if first is not None and _marker_type(bytes(data[position:position + size])) != COMMIT_MARKER:
            self.aborted.append(AbortedTxn(pid, first, base))

    def _active_segment(self, incoming: int):
        if not self.segments or (self.segments[-1].size and self.segments[-1].size + incoming > self.segment_bytes):
            self.segments.append(self._new_segment(self.next_offset))
        return self.segments[-1]

    def drop_segments_before(self, offset: int) -> int:
        """Delete whole segments (never the active one) holding only offsets below ``offset``, as Kafka does
        once the log start offset passes them; returns how many went."""
        dropped = 0
        while len(self.segments) > 1:
            first = self.segments[0]
            held = 0
            while held < len(self.entries) and self.entries[held].segment is first:
                held += 1
            if held and self._lasts[held - 1] >= offset:
                break
            del self.entries[:held], self._lasts[:held]
            self.segments.pop(0).delete()
            dropped += 1
        return dropped

    def flush(self) -> None:
        if self.segments:
            self.segments[-1].flush()

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    # --- reading --------------------------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self.next_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, else the log end offset."""
        return min(self.open_txns.values(), default=self.next_offset)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a read of offsets [start, end) overlaps: those whose marker is at or after
        ``start`` and whose first offset is before ``end``, as read_committed Fetch reports them."""
        found = []
        for txn in reversed(self.aborted):
            if txn.last_offset < start:
                break
            if txn.first_offset < end:
                found.append(txn)
        found.reverse()
        return found

    def find(self, offset: int) -> int:
        """Index of the first entry whose last offset is >= ``offset``."""
        return bisect.bisect_left(self._lasts, offset)

    def read(self, offset: int, max_bytes: int, upto: int | None = None, at_least_one: bool = True) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` (the first batch is returned even
        if larger when ``at_least_one``, KIP-74), ending before ``upto`` (an offset bound)."""
        upto = self.next_offset if upto is None else upto
        chunks: list[bytes] = []
        total = 0
        run_segment, run_start, run_size = None, 0, 0
        for entry in self.entries[self.find(offset):]:
            if entry.base_offset >= upto:
                break
            if total + entry.size > max_bytes and (total or not at_least_one):
                break
            if entry.segment is run_segment and entry.position == run_start + run_size:
                run_size += entry.size
            else:
                if run_segment is not None:
                    chunks.append(run_segment.read(run_start, run_size))
                run_segment, run_start, run_size = entry.segment, entry.position, entry.size
            total += entry.size
        if run_segment is not None:
            chunks.append(run_segment.read(run_start, run_size))
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def batch_bytes(self, entry: BatchEntry) -> bytes:
        return entry.segment.read(entry.position, entry.size)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with a timestamp >= ``timestamp``, or None."""
        for entry in self.entries[self.find(self.log_start_offset):]:
            if entry.max_timestamp >= timestamp:
                for record in _records(self.batch_bytes(entry)):
                    if record.timestamp is not None and record.timestamp >= timestamp \
                            and record.offset >= self.log_start_offset:
                        return record.offset, record.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (the first such), or None."""
        live = self.entries[self.find(self.log_start_offset):]
        if not live:
            return None
        best = max(live, key=lambda e: e.max_timestamp)
        for record in _records(self.batch_bytes(best)):
            if record.timestamp == best.max_timestamp:
                return record.offset, record.timestamp
        return best.last_offset, best.max_timestamp

    def producer_batches(self):
        """(producer id, epoch, first sequence, last sequence, base offset) of every idempotent v2 batch."""
        for entry in self.entries:
            if entry.magic != 2:
                continue
            head = entry.segment.read(entry.position + 43, 14)
            pid, epoch, seq = _V2_PRODUCER.unpack(head)
            if pid >= 0 and seq >= 0:
                yield pid, epoch, seq, seq + entry.last_offset - entry.base_offset, entry.base_offset


def _place_v2(records: bytes, bounds, first: int) -> tuple[list, int, list]:
    """The batches of ``records`` renumbered from ``first`` and stamped with our leader epoch (Kafka does both
    on append): ([new 16-byte header, view of the rest, ...], next offset, [(position, size, base, last, magic)])."""
    view = memoryview(bytes(records)).toreadonly()
    pieces, placed, nxt = [], [], first
    for b in bounds:
        problem = header_problem(view, b.position, b.size)
        if problem:
            raise InvalidBatch(f"batch at byte {b.position}: {problem}")
        span = b.last_offset - b.base_offset
        pieces.append(_V2_HEAD.pack(nxt, b.size - 12, LEADER_EPOCH))
        pieces.append(view[b.position + 16:b.position + b.size])
        placed.append((b.position, b.size, nxt, nxt + span, 2))
        nxt += span + 1
    return pieces, nxt, placed


def _marker_type(batch: bytes) -> int:
    """The control record type (0 abort, 1 commit) of a stored control batch; -1 when it has none."""
    for decoded in decode_records(batch):
        for record in decoded.records:
            if record.control is not None:
                return record.control.type
    return -1


def _records(data: bytes):
    for batch in decode_records(data):
        yield from batch.records


def _quarantine(path: str, position: int, damaged: bytes) -> None:
    """Keep damaged bytes next to the segment (a 12-byte header: position, length), for a human to look at."""
    with open(path + ".damaged", "ab") as f:
        f.write(struct.pack(">qi", position, len(damaged)) + damaged)
