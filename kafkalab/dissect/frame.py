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
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from kafkalab.protocol import Message, decode_request, decode_response
from kafkalab.protocol.schema.error_codes import error_name
from kafkalab.protocol.tree import FieldNode

from . import columns as spec
from .facts import FACTS_BY_VERSION, facts_function
from .frames_table import FRAME_COLUMNS


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
    topic_ids: dict | None = field(default=None, repr=False)   # topic id -> name (or None) for topics named by id
    raw: bytes = field(default=b"", repr=False)
    message: Message | None = field(default=None, repr=False)
    _tree: FieldNode | None = field(default=None, repr=False)
    #: captures: the request frame a response answers, until the frames are numbered and linked
    _request: Any = field(default=None, init=False, repr=False, compare=False)

    def __getattr__(self, name: str):
        # Reached only for an attribute that is not set: ``message`` of a frame whose decoded message was
        # not kept (see ``frame_from_message(keep_message=False)``) is decoded again from ``raw``, once.
        if name == "message":
            message = self._decode_again()
            self.message = message
            return message
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _decode_again(self) -> Message | None:
        from .decoding import request, response

        if not self.raw:
            return None
        if self.kind == "request":
            return request(self.raw)
        if self.api_key >= 0:
            return response(self.raw, self.api_key, self.api_version)
        return None

    @property
    def time(self) -> datetime:
        return utc_time(self.ts)

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


def frame_record(frame: Frame, *, body: bool = True) -> dict[str, Any]:
    """The JSON Lines object of a frame (the data model): the frame columns with ``ts`` (epoch seconds) in
    place of ``time``, then ``body`` with snake_case keys, UUIDs as strings, bytes as lowercase hex and
    RECORDS fields as lists of batch objects with their records."""
    from kafkalab.protocol.values import to_plain

    out: dict[str, Any] = {}
    for name in FRAME_COLUMNS:
        if name == "time":
            out["ts"] = frame.ts
        else:
            value = getattr(frame, name)
            out[name] = list(value) if isinstance(value, list) else value
    if body:
        out["body"] = to_plain(frame.body)
    return out


# The dataclass left ``message``'s default (None) on the class, where it would hide a dropped message from
# ``__getattr__``; the generated ``__init__`` keeps its own copy of the default, so it can go.
del Frame.message


def frame_from_message(message: Message, raw: bytes, *, number: int, ts: float, stream: int = 0,
                       src: str = "", dst: str = "", client_id: str | None = None,
                       inferred: bool = False, keep_message: bool = True) -> Frame:
    """Build a Frame from a decoded message (requests carry their client id; responses get it passed).

    With ``keep_message=False`` the frame does not hold on to the decoded message: ``message``, ``body`` and
    the tables that need bodies decode ``raw`` again when first asked (decoding is deterministic, so the
    result is the same). Captures use this: a read keeps each frame's facts and bytes, not millions of
    small dicts the garbage collector would have to walk again and again."""
    return build_frame(message, raw, ts, stream, src, dst, client_id, inferred, keep_message, number)


def build_frame(message: Message, raw: bytes, ts: float, stream: int, src: str, dst: str, client_id: str | None,
                inferred: bool, keep_message: bool, number: int = 0, topic_names: dict | None = None) -> Frame:
    """:func:`frame_from_message` with positional arguments (the capture reader's per-frame call).
    ``topic_names`` (topic id -> name) resolves topics named only by id, and learns the pairs this frame
    gives (Metadata responses)."""
    kind = message.kind
    if kind == "request":
        client_id = message.client_id
    topics, code, error, count, diagnostics, summary, topic_ids = describe(message, topic_names, keep_message)
    frame = Frame(number, ts, stream, src, dst, kind, message.api_key, message.api_name, message.api_version,
                  message.correlation_id, client_id, message.size, None, None, None, code, error, topics, count,
                  summary, diagnostics, inferred, None, topic_ids, raw, message, message.tree)
    if not keep_message:
        del frame.message
    return frame


def describe(message: Message, topic_names: dict | None = None, own_diagnostics: bool = False) -> tuple:
    """(topics, error_code, error, record_count, diagnostics, summary, topic_ids) of a decoded message: the
    frame columns that come from its body. ``diagnostics`` is a new list unless ``own_diagnostics`` (the
    caller drops the message, so its list can be taken over). Topics given only by id come after the named
    ones, by name where ``topic_names`` knows them."""
    diagnostics = message.diagnostics if own_diagnostics else list(message.diagnostics)
    return describe_body(message.api_key, message.api_name, message.api_version, message.kind, message.body,
                         diagnostics, topic_names)


def describe_body(api_key: int, api_name: str, version: int, kind: str, body, diagnostics: list[str] | None,
                  topic_names: dict | None = None) -> tuple:
    """:func:`describe` from a message's parts: what the capture reader calls where it has the parts without
    a message object. ``diagnostics`` is the list to return, extended in place; None for a new list (the
    message had no diagnostics)."""
    plan = _DESCRIBE_PLANS.get((api_key, kind, version))
    if plan is None or body.__class__ is not dict:
        if diagnostics is None:
            diagnostics = []
        if api_key < 0 or body.__class__ is not dict:
            return [], 0, None, 0, diagnostics, summary_text(api_name, version, kind, _NO_PARTITIONS, 0,
                                                              None, None, None, diagnostics), None
        fn = FACTS_BY_VERSION.get((api_key, kind, version), False)
        if fn is False:
            fn = facts_function(api_key, kind, version)
        if fn is None:
            return [], 0, None, 0, diagnostics, summary_text(api_name, version, kind, _NO_PARTITIONS, 0,
                                                              None, None, None, diagnostics), None
        names = SUMMARY_FIELDS.get(api_key) if kind == "request" else None
        plan = _DESCRIBE_PLANS[(api_key, kind, version)] = (fn, names, _field_values(names) if names else None)
    fn, names, values = plan
    partitions, code, count, notes, pairs, by_id = fn(body)
    topic_ids = None
    if pairs and topic_names is not None:
        topic_names.update(pairs)
    if by_id:
        partitions, topic_ids = _resolve_topic_ids(partitions, by_id, topic_names)
    error = error_name(code) if code else None
    if diagnostics is None:
        diagnostics = notes                     # a new list from the facts function, free to take over
    elif notes:
        diagnostics.extend(notes)
    summary = None
    if len(partitions) <= 1 and not diagnostics:
        # The common shapes (at most one topic and partition) repeat endlessly in real traffic: remember them.
        if partitions:
            ((topic, numbers),) = partitions.items()
            number = numbers[0] if numbers else None
            if len(numbers) > 1:
                topic = None
        else:
            topic = number = ""
        if topic is not None:
            key = (api_key, version, kind, topic, number, count, error, values(body) if names else None)
            summary = _SUMMARIES.get(key)
            if summary is None:
                summary = summary_text(api_name, version, kind, partitions, count, body if names else None,
                                       names, error, diagnostics)
                if len(_SUMMARIES) < 65536:
                    _SUMMARIES[key] = summary
    if summary is None:
        summary = summary_text(api_name, version, kind, partitions, count, body if names else None, names,
                               error, diagnostics)
    return list(partitions), code, error, count, diagnostics, summary, topic_ids


_SUMMARIES: dict[tuple, str] = {}
_DESCRIBE_PLANS: dict[tuple[int, str, int], tuple] = {}    # (api_key, kind, version) -> (facts fn, names, values)


def _field_values(names: tuple) -> Callable:
    """``body -> tuple(body.get(name) for name in names)``, for the summary cache's key."""
    if len(names) == 1:
        (a,) = names
        return lambda body: (body.get(a),)
    if len(names) == 2:
        a, b = names
        return lambda body: (body.get(a), body.get(b))
    return lambda body: tuple(map(body.get, names))


_NO_PARTITIONS: dict[str, list[int]] = {}


def _resolve_topic_ids(partitions: dict, by_id: dict, topic_names: dict | None) -> tuple[dict, dict]:
    """Topics given by id join the named ones under their names where known (unknown ids are left out of
    ``topics``); also returns every id used with its name or None (``Frame.topic_ids``)."""
    resolved = {name: list(numbers) for name, numbers in partitions.items()}
    ids = {}
    for key, numbers in by_id.items():
        name = topic_names.get(key) if topic_names is not None else None
        ids[key] = name
        if name is not None:
            resolved.setdefault(name, []).extend(numbers)
    return resolved, ids


def summarize(frame: Frame, partitions: dict[str, list[int]]) -> str:
    """One line like a packet list's Info column: "Produce v9 request · orders[0] · 5 records · acks=-1"."""
    names = SUMMARY_FIELDS.get(frame.api_key) if frame.kind == "request" else None
    return summary_text(frame.api_name, frame.api_version, frame.kind, partitions, frame.record_count,
                        frame.body if names else None, names, frame.error, frame.diagnostics)


def summary_text(api_name: str, api_version: int, kind: str, partitions: dict, record_count: int,
                 body: dict | None, names: tuple | None, error: str | None, diagnostics: list[str]) -> str:
    text = f"{api_name} v{api_version} {kind}"
    if partitions:
        shown = 0
        for topic, numbers in partitions.items():
            if shown == 3:
                text += f" · +{len(partitions) - 3} topics"
                break
            shown += 1
            if not numbers:
                text += f" · {topic}"
            elif len(numbers) == 1:
                text += f" · {topic}[{numbers[0]}]"
            else:
                unique = sorted(set(numbers))
                more = ",…" if len(unique) > 6 else ""
                text += f" · {topic}[{','.join(map(str, unique[:6]))}{more}]"
    if record_count:
        text += f" · {record_count} records" if record_count != 1 else " · 1 record"
    if names and body:
        for name in names:
            value = body.get(name)
            if value is not None and value != "":
                text += f" · {name}={value}"
    if error:
        text += f" · {error}"
    if diagnostics and any(d.startswith("malformed") for d in diagnostics):
        text += " · [malformed]"
    return text


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def utc_time(ts: float) -> datetime:
    """A capture time as a UTC datetime, the instant the tables' ``time`` columns hold (see
    :func:`kafkalab.dissect.columns.epoch_micros`)."""
    return _EPOCH + timedelta(microseconds=spec.epoch_micros(ts))


def frame_from_row(row) -> Frame:
    """The Frame of a row (see ``frames_table.ROW_FIELDS``; then raw, stream_offset, topic_ids and the decoded message,
    or None when it is to be decoded again from raw on first use)."""
    message = row[25]
    frame = Frame(row[0], row[21], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9],
                  row[10], row[11], row[12], row[13], row[14], row[15], row[16], row[17], row[18], row[19],
                  row[20], row[23], row[24], row[22], message, message.tree if message is not None else None)
    if message is None:
        del frame.message
    return frame
