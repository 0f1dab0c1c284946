"""The Frame: one Kafka request or response as every source (captures, the broker journal, Spark) reports it.

Column names and meanings are the project's data contract (see the data model in the docs): ``frame``
(1-based, order of completion), ``ts`` (epoch seconds; ``time`` in tables), ``stream`` (TCP connection index),
``src``/``dst`` ("ip:port"), ``kind``, ``api_key``, ``api_name``, ``api_version``, ``correlation_id``,
``client_id``, ``size``, ``request_frame``/``response_frame``, ``latency_ms``, ``error_code``/``error``,
``topics``, ``record_count``, ``summary``, ``diagnostics``, ``inferred``. The object form adds ``raw``,
``body`` and ``tree`` (the annotated tree, decoded on first access so bulk decoding stays fast).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from kafkalab.protocol import Message, Request, decode_request, decode_response
from kafkalab.protocol.tree import FieldNode

from .facts import body_layout, first_error, record_count, topic_partitions

FRAME_COLUMNS = ["frame", "time", "stream", "src", "dst", "kind", "api_key", "api_name", "api_version",
                 "correlation_id", "client_id", "size", "request_frame", "response_frame", "latency_ms",
                 "error_code", "error", "topics", "record_count", "summary", "diagnostics", "inferred"]

SUMMARY_FIELDS = {  # api_key -> body fields worth showing in a one-line summary
    0: ("acks",), 1: ("isolation_level", "max_wait_ms"), 2: ("isolation_level",), 8: ("group_id",),
    9: ("group_id",), 10: ("key",), 11: ("group_id", "protocol_type"), 12: ("group_id", "generation_id"),
    13: ("group_id",), 14: ("group_id", "generation_id"), 22: ("transactional_id",), 26: ("committed",),
}


@dataclass
class Frame:
    frame: int
    ts: float
    stream: int
    src: str
    dst: str
    kind: str
    api_key: int
    api_name: str
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int
    request_frame: int | None = None
    response_frame: int | None = None
    latency_ms: float | None = None
    error_code: int = 0
    error: str | None = None
    topics: list[str] = field(default_factory=list)
    record_count: int = 0
    summary: str = ""
    diagnostics: list[str] = field(default_factory=list)
    inferred: bool = False
    stream_offset: int | None = None     # captures: where the frame starts in its TCP stream
    raw: bytes = field(default=b"", repr=False)
    message: Message | None = field(default=None, repr=False)
    _tree: FieldNode | None = field(default=None, repr=False)

    @property
    def time(self) -> datetime:
        return datetime.fromtimestamp(self.ts, tz=timezone.utc)

    @property
    def body(self) -> dict | None:
        return self.message.body if self.message is not None else None

    @property
    def tree(self) -> FieldNode | None:
        """The annotated field tree, decoded from ``raw`` on first use."""
        if self._tree is None and self.raw:
            if self.kind == "request":
                self._tree = decode_request(self.raw, annotate=True).tree
            elif self.api_key >= 0:
                self._tree = decode_response(self.raw, self.api_key, self.api_version, annotate=True).tree
        return self._tree

    def row(self) -> dict[str, Any]:
        """The table row: the FRAME_COLUMNS, ``time`` as a timezone-aware datetime."""
        row = {name: getattr(self, name) for name in FRAME_COLUMNS if name != "time"}
        row["time"] = self.time
        return row


def frame_from_message(message: Message, raw: bytes, *, number: int, ts: float, stream: int = 0,
                       src: str = "", dst: str = "", client_id: str | None = None,
                       inferred: bool = False) -> Frame:
    """Build a Frame from a decoded message (requests carry their client id; responses get it passed)."""
    kind = message.kind
    if isinstance(message, Request):
        client_id = message.client_id
    frame = Frame(frame=number, ts=ts, stream=stream, src=src, dst=dst, kind=kind, api_key=message.api_key,
                  api_name=message.api_name, api_version=message.api_version,
                  correlation_id=message.correlation_id, client_id=client_id, size=message.size,
                  diagnostics=list(message.diagnostics), inferred=inferred, raw=raw, message=message)
    if message.tree is not None:
        frame._tree = message.tree
    layout = body_layout(message.api_key, kind, message.api_version) if message.api_key >= 0 else None
    partitions: dict[str, list[int]] = {}
    if layout is not None and message.body is not None:
        partitions = topic_partitions(layout, message.body)
        frame.topics = list(partitions)
        frame.error_code, frame.error = first_error(layout, message.body)
        frame.record_count = record_count(layout, message.body)
    frame.summary = summarize(frame, partitions)
    return frame


def summarize(frame: Frame, partitions: dict[str, list[int]]) -> str:
    """One line like a packet list's Info column: "Produce v9 request · orders[0] · 5 records · acks=-1"."""
    parts = [f"{frame.api_name} v{frame.api_version} {frame.kind}"]
    for topic, numbers in list(partitions.items())[:3]:
        unique = sorted(set(numbers))
        parts.append(f"{topic}[{','.join(map(str, unique[:6]))}{',…' if len(unique) > 6 else ''}]"
                     if unique else topic)
    if len(partitions) > 3:
        parts.append(f"+{len(partitions) - 3} topics")
    if frame.record_count:
        parts.append(f"{frame.record_count} record{'s' if frame.record_count != 1 else ''}")
    body = frame.body or {}
    if frame.kind == "request":
        for name in SUMMARY_FIELDS.get(frame.api_key, ()):
            if name in body and body[name] not in (None, ""):
                parts.append(f"{name}={body[name]}")
    if frame.error:
        parts.append(frame.error)
    if any(d.startswith("malformed") for d in frame.diagnostics):
        parts.append("[malformed]")
    return " · ".join(parts)


def frames_table(frames):
    """The ``frames`` table: one row per Frame, FRAME_COLUMNS, Arrow-friendly dtypes."""
    import pandas as pd

    rows = [f.row() for f in frames]
    table = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    integer_columns = {"frame": "Int64", "stream": "Int64", "api_key": "Int16", "api_version": "Int16",
                       "correlation_id": "Int32", "size": "Int64", "request_frame": "Int64",
                       "response_frame": "Int64", "error_code": "Int16", "record_count": "Int64"}
    table = table.astype(integer_columns)
    table["time"] = pd.to_datetime(table["time"], utc=True)
    table["latency_ms"] = table["latency_ms"].astype("float64")
    table["inferred"] = table["inferred"].astype(bool)
    for name in ("src", "dst", "kind", "api_name", "client_id", "error", "summary"):
        table[name] = table[name].astype("string")
    return table
