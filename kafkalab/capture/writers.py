"""How the command line writes frames: a packet list, ``-T fields``, JSON Lines and CSV, with colour only where
someone is watching.

Owns: the writers (``write(frames)`` for each batch, ``close()`` at the end), which read a frame only through
its attributes, so that a :class:`~kafkalab.dissect.frame.Frame` and a row of a capture read whole
(:mod:`.rows`) print the same; and when to colour (:func:`use_color`, :class:`Painter`).
"""
from __future__ import annotations

import csv
import json
import os
from operator import attrgetter
from typing import Callable, Iterable, TextIO

from kafkalab.dissect.frame import FRAME_COLUMNS, Frame, frame_record


def use_color(stream: TextIO) -> bool:
    """ANSI colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled and code else text


class TableWriter:
    """One line per frame, like a packet list: number, relative time, endpoints, summary, latency."""

    def __init__(self, out: TextIO, *, verbose: bool = False, hex: bool = False) -> None:
        self.out = out
        self.verbose, self.hex = verbose, hex
        self.paint = Painter(use_color(out))
        self.start: float | None = None

    def write(self, frames: list[Frame]) -> None:
        from kafkalab.dissect import hexdump

        from .capture import format_frame

        out, paint = self.out, self.paint
        for frame in frames:
            if self.verbose:
                out.write(format_frame(frame, hex=self.hex) + "\n\n")
                continue
            if self.start is None:
                self.start = frame.ts
            latency = f"  [{frame.latency_ms:.3f} ms]" if frame.kind == "response" and frame.latency_ms is not None \
                else ""
            color = "31" if frame.error else "33" if frame.diagnostics else "2" if frame.kind == "response" else ""
            line = (f"{frame.frame:>7} {frame.ts - self.start:>11.6f} {frame.src:>21} → {frame.dst:<21} "
                    f"{frame.summary}{latency}")
            out.write(paint(line, color) + "\n")
            if self.hex:
                out.write(hexdump(frame.raw) + "\n\n")

    def close(self) -> None:
        pass


class JsonLinesWriter:
    """One JSON object per frame (:func:`~kafkalab.dissect.frame.frame_record`), or only the ``fields`` named."""

    def __init__(self, out: TextIO, fields: Iterable[str] = ()) -> None:
        self.out = out
        self.fields = tuple(fields)

    def write(self, frames: list[Frame]) -> None:
        dumps, fields = json.dumps, self.fields
        body = not fields or "body" in fields
        records = (frame_record(f, body=body) for f in frames)
        if fields:
            records = ({name: record[name] for name in fields} for record in records)
        self.out.write("".join(dumps(r, ensure_ascii=False, default=str) + "\n" for r in records))

    def close(self) -> None:
        pass


def _cells(columns: tuple[str, ...], join: Callable[[list], str]) -> Callable[[Frame], list]:
    """``frame -> its values for text output``: ``time`` in ISO 8601 (UTC), lists through ``join``, nulls
    empty, booleans as true/false; everything else as it is."""
    get = attrgetter(*columns) if len(columns) > 1 else (lambda frame, name=columns[0]: (getattr(frame, name),))
    time_at = columns.index("time") if "time" in columns else -1

    def cells(frame: Frame) -> list:
        row = list(get(frame))
        for i, value in enumerate(row):
            if value is None:
                row[i] = ""
            elif value.__class__ is list:
                row[i] = join(value)
            elif value.__class__ is bool:
                row[i] = "true" if value else "false"
        if time_at >= 0:
            row[time_at] = row[time_at].isoformat()
        return row
    return cells


def _json_list(values: list) -> str:
    return json.dumps(values, ensure_ascii=False)


def _comma_list(values: list) -> str:
    return ",".join(map(str, values))


class CsvWriter:
    """The frames table as CSV (all columns, or those named): lists as JSON arrays (see :func:`_cells`)."""

    def __init__(self, out: TextIO, columns: tuple[str, ...] = tuple(FRAME_COLUMNS)) -> None:
        self.writer = csv.writer(out)
        self.columns = columns
        self.cells = _cells(columns, _json_list)
        self.started = False

    def write(self, frames: list[Frame]) -> None:
        if not self.started:
            self.writer.writerow(self.columns)
            self.started = True
        self.writer.writerows(map(self.cells, frames))

    def close(self) -> None:
        if not self.started:                # an empty capture still gets its header
            self.write([])


class FieldsWriter:
    """``-T fields``: the named columns, tab-separated, one line per frame, no header, lists joined by commas
    (what ``tshark -T fields -e ...`` prints), so ``cut``, ``sort`` and ``awk`` work on it."""

    def __init__(self, out: TextIO, columns: tuple[str, ...]) -> None:
        self.out = out
        self.cells = _cells(columns, _comma_list)

    def write(self, frames: list[Frame]) -> None:
        cells = self.cells
        self.out.write("".join("\t".join(map(_field_text, cells(f))) + "\n" for f in frames))

    def close(self) -> None:
        pass


def _field_text(value) -> str:
    """A cell on one line: tabs and line breaks (in a client id, say) would break the columns."""
    text = value if value.__class__ is str else str(value)
    return text.replace("\t", "\\t").replace("\n", "\\n") if "\t" in text or "\n" in text else text
