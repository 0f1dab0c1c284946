"""The frames of a capture read whole, held as columns: :class:`FrameStore` and the row layout the engine's
rows stage fills (see :mod:`.bulk`); :class:`FileBytes`, the frames' bytes left in the capture file until asked for.
"""
from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext

# row layout: the frames table's columns (FRAME_COLUMNS with ts for time, see frames_table.ROW_FIELDS), then extras
(R_FRAME, R_STREAM, R_SRC, R_DST, R_KIND, R_API_KEY, R_API_NAME, R_API_VERSION, R_CORRELATION, R_CLIENT_ID, R_SIZE,
 R_REQUEST_FRAME, R_RESPONSE_FRAME, R_LATENCY, R_ERROR_CODE, R_ERROR, R_TOPICS, R_RECORD_COUNT, R_SUMMARY,
 R_DIAGNOSTICS, R_INFERRED, R_TS, R_RAW, R_OFFSET, R_TOPIC_IDS, R_MESSAGE) = range(26)
PAIRING = frozenset({R_REQUEST_FRAME, R_RESPONSE_FRAME, R_LATENCY, R_INFERRED})   # known once a pair is complete


class FrameStore:
    """The frames of a capture read whole, held without one Python object per frame beyond its bytes: the frames table
    (built once, at the end of the read), each frame's bytes, stream offset and time, and the few objects
    that cannot be made again (frames of the general pipeline, kept messages). Frame objects are made on
    demand.

    Why: a capture read into memory as millions of small objects costs the cyclic garbage collector a walk
    over all of them, again and again; tables, arrays and bytes cost it (next to) nothing."""

    def __init__(self, columns: list, objects: dict | None = None, extras: dict | None = None) -> None:
        """``columns``: one list per row field (the row layout above, R_FRAME to R_OFFSET); ``objects``:
        index -> Frame of the general pipeline (its column values are filled in here, from the object as it
        is at the end of the read); ``extras``: index -> (message, topic_ids) where either is set."""
        from kafkalab.dissect.frames_table import ROW_FIELDS

        n = len(columns[R_FRAME])
        self.objects: list = [None] * n            # Frame objects: the general pipeline's, and those made
        for i, frame in (objects or {}).items():
            self.objects[i] = frame
            row = _as_row(frame)
            for k in range(R_OFFSET + 1):
                columns[k][i] = row[k]
        columns[R_TS] = _packed("d", columns[R_TS])
        self._columns: dict[str, list] | None = dict(zip(ROW_FIELDS, columns))   # plain values, nulls None
        self.raw = columns[R_RAW]
        self.ts = columns[R_TS]
        self.offsets = _packed("q", columns[R_OFFSET])
        self.extras: dict[int, tuple] = extras or {}     # index -> (message, topic_ids) where either is set
        self._table = None
        self._deferred: tuple | None = None     # (row indexes, describe) of frames described when first asked

    @classmethod
    def of_frames(cls, frames: list) -> FrameStore:
        """A store of Frames the general pipeline made (their values as they are now)."""
        return cls([[None] * len(frames) for _ in range(R_OFFSET + 1)], dict(enumerate(frames)))

    def defer(self, indexes: list[int], describe) -> None:
        """Leave the described columns of the frames at ``indexes`` (row indexes, in frame order) to be filled
        when the table, its columns or a Frame are first asked for: ``describe(indexes, read, columns, extras)``
        fills them, reading each frame's bytes with ``read(index)`` (see
        :func:`.deferred.describe_deferred`). Until then :attr:`cut_columns` gives what cutting and pairing
        filled, which is all the records table reads.

        Why: describing every frame (decoding its body, counting its records, writing its summary) costs
        more than cutting and pairing it, and reading the records table never looks at it."""
        self._deferred = (indexes, describe)

    @property
    def described(self) -> bool:
        """Whether every frame's described columns are filled (nothing deferred is left)."""
        return self._deferred is None

    def _describe_deferred(self) -> None:
        if self._deferred is None:
            return
        indexes, describe = self._deferred
        raw = self.raw
        with (raw.reader() if hasattr(raw, "reader") else nullcontext(raw.__getitem__)) as read:
            describe(indexes, read, self._columns, self.extras)
        self._deferred = None

    @property
    def cut_columns(self) -> dict[str, list]:
        """The table's columns as :attr:`columns` gives them, but without describing deferred frames (see
        :meth:`defer`): their described columns (api_name, size, error_code, topics, record_count,
        summary...) may be None; frame, stream, ends, kind, api_key, api_version and pairing are filled."""
        return self._columns if self._columns is not None else self.columns

    @property
    def table(self):
        """The frames table (pandas), built on first use. The plain columns it is built from are let go
        then (a table holds its values far more compactly) and made again from it if ever needed; the
        command line writes from the plain columns and never builds the table (nor imports pandas)."""
        if self._table is None:
            self._describe_deferred()
            from kafkalab.dissect.frames_table import columns_table

            self._table = columns_table(self._columns)
            self._columns = None
        return self._table

    @property
    def columns(self) -> dict[str, list]:
        """The table's columns as Python values (nulls as None), ``ts`` in epoch seconds."""
        self._describe_deferred()
        if self._columns is None:
            from kafkalab.dissect.frames_table import ROW_FIELDS

            table = self._table
            self._columns = {name: _plain_column(table[name]) for name in ROW_FIELDS if name != "ts"}
            self._columns["ts"] = self.ts
        return self._columns

    def __len__(self) -> int:
        return len(self.objects)

    def frame(self, index: int):
        frame = self.objects[index]
        if frame is None:
            frame = self.objects[index] = self._make(index)
        return frame

    def frames(self) -> list:
        return [self.frame(i) for i in range(len(self.objects))]

    def _make(self, index: int):
        from kafkalab.dissect.frame import frame_from_row
        from kafkalab.dissect.frames_table import ROW_FIELDS

        columns = self.columns
        row = [columns[name][index] for name in ROW_FIELDS]
        row[R_TOPICS], row[R_DIAGNOSTICS] = list(row[R_TOPICS]), list(row[R_DIAGNOSTICS])   # the Frame's own
        message, topic_ids = self.extras.get(index, (None, None))
        row += [self.raw[index], self.offsets[index], topic_ids, message]
        return frame_from_row(row)


def _packed(code: str, values: list):
    """``values`` as an :class:`array.array` of ``code`` where they all fit (else the list itself): a number
    per frame kept for as long as the capture is, without one Python object per frame for the garbage
    collector to walk."""
    from array import array

    try:
        return array(code, values)
    except (TypeError, OverflowError):
        return values


def _plain_column(column) -> list:
    """A table column as Python values, nulls as None."""
    if column.dtype == object:
        return column.tolist()
    return column.astype(object).where(column.notna(), None).tolist()


def _as_row(frame) -> list:
    """A row for a Frame of the general pipeline."""
    from kafkalab.dissect.frames_table import row_values

    return [*row_values(frame), frame.raw, frame.stream_offset if frame.stream_offset is not None else -1,
            frame.topic_ids, None]


READ_WINDOW = 8 << 20       # frame bytes read from the map before its pages are let go


class CaptureFileChanged(RuntimeError):
    """The capture file changed after it was read: the frames' bytes can no longer be read from it."""


class FileBytes:
    """Each frame's bytes, by index: held ones as they are, the others read back from the capture file when
    asked for (its place: ``(start, end)``, or a span over segments, see :func:`.segments.span_ranges`).

    Why: a read that kept every frame's bytes would hold the capture's size in memory again; the page cache
    holds them already. The file may grow (a capture still being written only has packets appended); any
    other change (shorter, or rewritten at the same size) is an error. The places are held as two arrays of
    64-bit integers (start -1: the entry is in ``others``), not a tuple per frame: a large capture's
    millions of tuples would be walked by every full garbage collection (and at exit)."""

    def __init__(self, path, entries: list, places: tuple | None = None) -> None:
        """``places``: (starts, ends) of the entries already, if their maker has them (see :func:`_compact`)."""
        self.path = os.fspath(path)
        info = os.stat(self.path)
        self._stamp = (info.st_size, info.st_mtime_ns)
        self.starts, self.ends, self.others = _compact(entries, places)

    def __len__(self) -> int:
        return len(self.starts)

    def _entry(self, index: int):
        start = self.starts[index]
        return (start, self.ends[index]) if start >= 0 else self.others.get(index)

    def __getitem__(self, index: int) -> bytes | None:
        entry = self._entry(index)
        if entry is None or isinstance(entry, (bytes, bytearray)):
            return entry
        from .segments import span_ranges

        return self._read([entry] if len(entry) == 2 else span_ranges(entry))

    def _read(self, ranges: list[tuple[int, int]]) -> bytes:
        with open(self.path, "rb") as stream:
            self._check(stream)
            return b"".join(os.pread(stream.fileno(), end - start, start) for start, end in ranges)

    def _check(self, stream) -> None:
        info = os.fstat(stream.fileno())
        size, mtime = self._stamp
        if info.st_size < size or (info.st_size == size and info.st_mtime_ns != mtime):
            raise CaptureFileChanged(f"{self.path} changed after it was read: read it again")

    @contextmanager
    def reader(self):
        """A function ``index -> bytes`` for reading many frames: the file is mapped once and each frame's
        segments are joined from the map (one copy, no system call per segment). Pages read are let go
        every few megabytes, so the file's size never counts as this process's memory."""
        import mmap

        from kafkalab.pcap.index import release

        from .segments import span_bytes

        with open(self.path, "rb") as stream:
            self._check(stream)
            data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(data)
        starts, ends, others = self.starts, self.ends, self.others
        read = 0

        def frame_bytes(index: int) -> bytes | None:
            nonlocal read
            start = starts[index]
            if start >= 0:
                out = data[start:ends[index]]             # a slice of a map: the bytes, one copy
            else:
                entry = others.get(index)
                if entry is None or isinstance(entry, (bytes, bytearray)):
                    return entry
                out = span_bytes(view, entry)
            read += len(out)
            if read > READ_WINDOW:
                release(data, len(data))
                read = 0
            return out

        try:
            yield frame_bytes
        finally:
            view.release()
            data.close()


def _compact(entries: list, places: tuple | None = None) -> tuple:
    """``entries`` as (starts, ends, others): the places ``(start, end)`` as two arrays of 64-bit integers
    (-1 where the entry is something else), the other entries by index (bytes, and spans with the segment
    positions they share, a direction's segment starts and lengths, the first two items of a span, see
    :func:`.segments.span_ranges`, held as arrays: lists of Python ints would keep tens of megabytes).
    ``places``: the two arrays already (as the engine's rows stage makes them): only the other entries are
    looked at."""
    from array import array

    shared: dict[int, tuple] = {}
    others: dict[int, object] = {}

    def other(i: int, entry) -> None:
        if entry is None or isinstance(entry, (bytes, bytearray)) or len(entry) == 2:
            others[i] = entry
            return
        segment_starts, lengths = entry[0], entry[1]
        pair = shared.get(id(segment_starts))
        if pair is None:
            pair = shared[id(segment_starts)] = (array("q", segment_starts), array("q", lengths), segment_starts)
        others[i] = (pair[0], pair[1], *entry[2:])

    if places is not None:
        import numpy as np

        starts, ends = places
        for i in np.flatnonzero(np.frombuffer(starts, dtype=np.int64) < 0).tolist():
            other(i, entries[i])
        return starts, ends, others
    starts, ends = array("q"), array("q")
    add_start, add_end = starts.append, ends.append
    for i, entry in enumerate(entries):
        if entry.__class__ is tuple and len(entry) == 2:
            add_start(entry[0])
            add_end(entry[1])
            continue
        add_start(-1)
        add_end(-1)
        other(i, entry)
    return starts, ends, others

class HeldBytes(FileBytes):
    """Each frame's bytes, by index, sliced from a buffer held in memory (entries as in :class:`FileBytes`):
    the payloads a distributed reader gathered for one group of connections."""

    def __init__(self, data, entries: list) -> None:
        self.data = data
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def _entry(self, index: int):
        return self.entries[index]

    def _read(self, ranges: list[tuple[int, int]]) -> bytes:
        return b"".join(bytes(self.data[start:end]) for start, end in ranges)

    @contextmanager
    def reader(self):
        """A function ``index -> bytes`` for reading many frames: each frame copied once from a view of the
        buffer (in memory already: nothing to map), as :meth:`FileBytes.reader` does from the file's map."""
        from .segments import span_bytes

        view, entries = memoryview(self.data), self.entries

        def frame_bytes(index: int) -> bytes | None:
            entry = entries[index]
            if entry is None or isinstance(entry, (bytes, bytearray)):
                return entry
            return bytes(view[entry[0]:entry[1]]) if len(entry) == 2 else span_bytes(view, entry)

        try:
            yield frame_bytes
        finally:
            view.release()
