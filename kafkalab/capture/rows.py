"""Frames as light rows: what the command line writes from a capture read whole.

Owns: :func:`frame_rows`, one named tuple per frame holding the frames table's values as plain Python values
(None for nulls, ``ts`` in epoch seconds) with a ``time`` property, so that everything written from the
table's columns (packet list, ``-T fields``, CSV, filters, statistics) reads a row exactly as it reads a
:class:`~kafkalab.dissect.frame.Frame`. Anything else (``body``, ``tree``, ``raw``...) comes from the Frame
itself, made on first use.

Why: after a bulk read (see :mod:`.bulk`) the capture is a set of columns; making a Frame object per frame
would cost more than the read did, and building the pandas table would cost the import of pandas.
"""
from __future__ import annotations

from collections import namedtuple
from contextlib import contextmanager, nullcontext
from datetime import datetime
from functools import partial
from typing import Callable

from kafkalab.dissect.frame import utc_time
from kafkalab.dissect.frames_table import ROW_FIELDS

FIELDS = tuple(ROW_FIELDS)                  # the frames table's columns, ``ts`` in place of ``time``


def row_type(frame_of: Callable[[int], object]) -> type:
    """A row class whose missing attributes are those of ``frame_of(row.frame)``."""
    base = namedtuple("FrameRow", FIELDS)

    class FrameRow(base):
        __slots__ = ()

        @property
        def time(self) -> datetime:
            return utc_time(self.ts)

        def __getattr__(self, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            return getattr(frame_of(self.frame), name)

    return FrameRow


def frame_rows(columns: dict[str, list], frame_of: Callable[[int], object]) -> list:
    """Rows from plain columns (``FIELDS`` -> lists of equal length); ``frame_of(number)`` gives the Frame."""
    make = partial(tuple.__new__, row_type(frame_of))     # what _make does, without its Python-level call
    return list(map(make, zip(*(columns[name] for name in FIELDS))))


class _Light:
    """What the records table reads of a frame held as table rows: no Frame made unless the body is needed
    (only when the raw bytes do not decode), and the bytes read from the capture file when asked for."""

    __slots__ = ("frame", "kind", "api_key", "api_version", "response_frame", "record_count", "index",
                 "topic_ids", "_read", "_made")

    def __init__(self, frame, kind, api_key, api_version, response_frame, record_count, index, topic_ids, read,
                 made) -> None:
        self.frame, self.kind, self.api_key, self.api_version = frame, kind, api_key, api_version
        self.record_count = record_count
        self.response_frame, self.index, self.topic_ids = response_frame, index, topic_ids
        self._read, self._made = read, made

    @property
    def raw(self):
        return self._read(self.index)

    @property
    def body(self):
        return self._made().body


@contextmanager
def record_sources(store):
    """The frames of a bulk read (a :class:`~.frame_store.FrameStore`) as the records table reads them,
    while the capture file is open for reading their bytes (none is held longer than the table needs it)."""
    from kafkalab.dissect.records_table import APIS

    columns = store.cut_columns             # deferred frames stay undescribed (see FrameStore.defer)
    extras = store.extras
    raw = store.raw
    api_keys = columns["api_key"]
    with (raw.reader() if hasattr(raw, "reader") else nullcontext(raw.__getitem__)) as read:
        out = []
        for i, made in enumerate(store.objects):
            if made is not None:
                out.append(made)
                continue
            if api_keys[i] not in APIS:
                continue
            out.append(_Light(columns["frame"][i], columns["kind"][i], columns["api_key"][i],
                              columns["api_version"][i], columns["response_frame"][i],
                              columns["record_count"][i], i,
                              extras.get(i, (None, None))[1], read, partial(store.frame, i)))
        yield out
