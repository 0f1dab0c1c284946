"""The ``records`` table: one row per record in Produce requests and Fetch responses, built as columns.

How: each frame's body is decoded with its record sets left as views of the frame (``records="raw"``); the
record sets are walked batch by batch (:mod:`kafkalab.protocol.records.columnar`: header, CRC, inflating)
and every few megabytes of record bytes the gathered batches are read column-wise (one pass), their rows
added to the table's columns (:mod:`.records_arrays`: bytes as Arrow, numbers as one numpy array per
column) and the pass's buffers reused, so memory is the table plus one pass. No object is made per record;
only irregular batches (legacy messages, control batches, bad checksums, partial tails) are decoded as
objects, and their rows are put where those batches were. The Arrow table and the pandas view share the
columns (neither copies the other's numbers).

Input: frame-like objects with ``frame``, ``kind``, ``api_key``, ``api_version``, ``raw``, ``topic_ids``,
``record_count`` (to size the columns; None where the frame's describing was deferred: the columns are
then reserved from the first pass's records, see ``_Builder._expected``) and ``response_frame`` (a
:class:`~kafkalab.dissect.frame.Frame` or a lighter stand-in); ``body`` is read only where the raw bytes do
not decode.
"""
from __future__ import annotations

from typing import Iterable

from kafkalab.protocol import ApiKey
from kafkalab.protocol.errors import ProtocolError
from kafkalab.protocol.records.columnar import Batches, gather, read_columns
from kafkalab.protocol.records.limits import default_budget

from . import decoding
from .decoding import raw_records_body
from .facts import body_layout

PRODUCE, FETCH = ApiKey.PRODUCE, ApiKey.FETCH
APIS = (PRODUCE, FETCH)          # the only frames the table reads (Produce responses for their base offsets)
CHUNK_BYTES = 16 << 20          # record bytes read per columnar pass (bounds the temporary arrays)


def records_table(frames: Iterable):
    """The records table as pandas (a view of :func:`records_arrow`)."""
    from . import records_arrays as arrays

    return arrays.to_pandas(_read(frames))


def records_arrow(frames: Iterable):
    """The records table as a :class:`pyarrow.Table` of the spec's schema."""
    from . import records_arrays as arrays

    return arrays.to_arrow(_read(frames))


def _read(frames: Iterable):
    """Every record of ``frames``, joined column by column (see :mod:`.records_arrays`)."""
    frames = list(frames)
    by_number = {f.frame: f for f in frames}
    wanted = [f for f in frames if (f.kind == "request" and f.api_key == PRODUCE) or
              (f.kind == "response" and f.api_key == FETCH)]
    counts = [getattr(f, "record_count", 0) for f in wanted]
    builder = _Builder(sum(count or 0 for count in counts), len(wanted) if None in counts else 0)
    for frame in wanted:
        builder.frames_read += 1
        body = _body(frame)
        if not body:
            continue
        layout = body_layout(frame.api_key, frame.kind, frame.api_version)
        if layout is None:
            continue
        bases = {}
        if frame.kind == "request" and frame.response_frame is not None:
            bases = _base_offsets(by_number.get(frame.response_frame))
        for topic, partition, data in record_sets(layout, body, topic_ids=frame.topic_ids):
            builder.add(frame.frame, frame.kind, topic, partition, bases.get((topic, partition)), data)
        if builder.batches.size >= CHUNK_BYTES:
            builder.flush()
    builder.flush()
    return builder.joined()


def _body(frame):
    """The body with record sets as views of the frame; the Frame's own body if the raw bytes do not decode."""
    try:
        return raw_records_body(frame.raw, frame.kind, frame.api_key, frame.api_version)
    except (ProtocolError, ValueError, TypeError):
        return frame.body


def record_sets(layout, body, topic=None, partition=None, topic_ids=None):
    """(topic, partition, record set) for every RECORDS field, with the nearest enclosing topic and partition
    (a topic given only by id is named through ``topic_ids``, id -> name)."""
    if not isinstance(body, dict):
        return
    names, below = _walk_plan(layout)
    for name, role in names:
        if name not in body:
            continue
        value = body[name]
        if role == "topic" and isinstance(value, str):
            topic = value
        elif role == "topic_id" and topic is None and topic_ids and value in topic_ids:
            topic = topic_ids[value]
        elif role == "partition" and isinstance(value, int):
            partition = value
    for name, kind, child in below:
        value = body.get(name)
        if value is None:
            continue
        if kind == "records":
            yield topic, partition, value
        else:
            for item in ([value] if kind == "struct" else value):
                yield from record_sets(child, item, topic, partition, topic_ids)


_PLANS: dict[int, tuple] = {}


def _walk_plan(layout) -> tuple:
    """What :func:`record_sets` looks at in a layout's slots, in wire order: (name, role) of the slots that
    name the topic or partition, and (name, kind, layout) of the record sets and structures below."""
    plan = _PLANS.get(id(layout))
    if plan is None or plan[0] is not layout:
        names, below = [], []
        for slot in layout.slots + layout.tagged:
            if slot.field.entity == "topicName":
                names.append((slot.name, "topic"))
            elif slot.name == "topic_id":
                names.append((slot.name, "topic_id"))
            elif slot.name in ("partition_index", "index", "partition"):
                names.append((slot.name, "partition"))
            if slot.kind == "records":
                below.append((slot.name, "records", None))
            elif slot.layout is not None:
                below.append((slot.name, slot.kind, slot.layout))
        plan = _PLANS[id(layout)] = (layout, names, below)
    return plan[1], plan[2]


def _base_offsets(response) -> dict[tuple[str, int], int]:
    """(topic, partition) -> base_offset from a Produce response."""
    out: dict[tuple[str, int], int] = {}
    if response is None:
        return out
    try:
        body = decoding.response(response.raw, response.api_key, response.api_version).body
    except (ProtocolError, ValueError, TypeError):
        body = response.body
    for topic in (body or {}).get("responses") or []:
        for part in topic.get("partition_responses") or []:
            if part.get("error_code", 0) == 0 and part.get("base_offset", -1) >= 0:
                out[(topic.get("name"), part.get("index"))] = part["base_offset"]
    return out


class _Builder:
    """Gathers batches of many record sets and turns them into Arrow record batches, in order."""

    def __init__(self, expected: int = 0, frames: int = 0) -> None:
        self.batches = Batches.empty()
        self.contexts: list[tuple] = []       # (frame, kind, topic, partition, produce base offset or None)
        self.objects: list[tuple] = []        # (sequence, context, object)
        self.seq = 0                          # entries gathered so far (fast and object), for ordering
        self.rows = None                      # records_arrays.Rows: what the passes gave
        self.vocab = None
        self.expected = expected              # records expected in all (the frames' record counts)
        self.frames = frames                  # frames to read, where some frames' counts are unknown (else 0)
        self.frames_read = 0
        self.budget = (None, None)            # (frame, what its record sets may still cost together)

    def add(self, frame: int, kind: str, topic, partition, base, data) -> None:
        ctx = len(self.contexts)
        self.contexts.append((frame, kind, topic, partition, base))
        if not isinstance(data, (bytes, bytearray, memoryview)):    # already objects (a body that fell back)
            for obj in data:
                self.objects.append((self.seq, ctx, obj))
                self.seq += 1
            return
        first = len(self.batches)
        if self.budget[0] != frame:
            self.budget = (frame, default_budget())
        others = gather(data, None, self.batches, budget=self.budget[1])
        # number the set's entries, regular and not, in wire order
        other_at = 0
        for i in range(first, len(self.batches) + 1):
            while other_at < len(others) and others[other_at][0] <= i:
                self.objects.append((self.seq, ctx, others[other_at][1]))
                self.seq += 1
                other_at += 1
            if i < len(self.batches):
                self.batches.tags[i] = (self.seq, ctx)
                self.seq += 1

    def flush(self) -> None:
        if not len(self.batches) and not self.objects:
            return
        from . import records_arrays as arrays

        if self.vocab is None:
            self.vocab = arrays.Vocabulary()
        part = arrays.fast_rows(self.batches, read_columns(self.batches), self.contexts, self.objects, self.vocab)
        if self.rows is None:
            self.rows = arrays.Rows(*self._expected(part.heavy.num_rows if part is not None else 0))
        if part is not None:
            self.rows.add(part)
        self.batches = Batches.empty(self.batches.region)
        self.objects = []

    def _expected(self, first: int) -> tuple[int, bool]:
        """(records, reserve) to size the table's columns for (see ``records_arrays.Rows``): the frames' record
        counts, or where some are unknown (frames whose describing was deferred, see ``FrameStore.defer``),
        twice the first pass's records spread over every frame, reserved: growing the columns later would
        hold them twice for a moment."""
        if not self.frames:
            return self.expected, False
        return max(self.expected, int(2 * first * self.frames / max(self.frames_read, 1))), True

    def joined(self):
        """Every part gathered so far, one array per column (the parts are let go)."""
        from . import records_arrays as arrays

        if self.rows is None:
            self.vocab, self.rows = arrays.Vocabulary(), arrays.Rows(0)
        joined = self.rows.joined(self.vocab)
        self.rows = self.vocab = None
        return joined

    def table(self):
        """The records gathered so far as an Arrow table."""
        from . import records_arrays as arrays

        return arrays.to_arrow(self.joined())
