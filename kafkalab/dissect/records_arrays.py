"""The records table's columns from column-wise reads (:mod:`kafkalab.protocol.records.columnar`).

Each pass of the reader gives a :class:`Part`: the byte columns (key, value, headers) as one Arrow record
batch, every number, time and flag column as a numpy array (with a validity array where it has nulls) and
every text column as codes into a :class:`Vocabulary` shared by all parts. :func:`join` makes one numpy
array of each column at the end, which the Arrow table and the pandas view both use without copying (see
:mod:`.columns`): a million-row table is never held twice, and per-batch values (frame, topic, codec,
producer...) are spread to their records with numpy indexing, not Arrow ``take``.

Per-record values come from numpy arrays; key, value and header bytes are cut out of the read buffer.
Rows of batches read as objects are made in Python and put back in wire order.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafkalab.protocol.records.batch import CODEC_MASK, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from kafkalab.protocol.records.columnar import PAD, decode_entry
from kafkalab.protocol.records.compression import codec_name

from . import columns as spec

MS_LIMIT = (1 << 63) // 1_000_000 - 1          # beyond this many ms a nanosecond timestamp overflows: null
_BYTE_INDEX = np.arange(12)[None, :]
SHORT = PAD // 2                               # columns with no longer value are cut without views
ORDER = 1 << 32                                # row order key: entry sequence * ORDER + record index
TYPES = spec.types("records")
BYTES = tuple(c.name for c in spec.RECORDS if c.type in ("binary", "headers"))
TEXT = tuple(c.name for c in spec.RECORDS if c.type == "string")
NUMBERS = tuple(c.name for c in spec.RECORDS if c.name not in BYTES + TEXT)


class Vocabulary:
    """Codes for the text columns' values (a capture has few topics, kinds and codecs); -1 is null."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.words: list[str] = []

    def code(self, word) -> int:
        if word is None:
            return -1
        code = self.codes.get(word)
        if code is None:
            code = self.codes[word] = len(self.words)
            self.words.append(word)
        return code

    def codes_of(self, words) -> np.ndarray:
        return np.fromiter(map(self.code, words), dtype=np.int32)


class Part(NamedTuple):
    """The rows of one pass: byte columns (Arrow), numbers (name -> (values, validity or None)), text codes."""
    heavy: pa.RecordBatch
    numbers: dict
    text: dict


def fast_rows(batches, cols, contexts: list, objects: list, vocab: Vocabulary) -> Part | None:
    """The rows of ``batches`` (read into ``cols``) and of ``objects`` ((sequence, context, object)), in
    wire order; None when there are none."""
    objects = list(objects)
    objects += [(*batches.tags[i], decode_entry(batches.raws[i])) for i in np.flatnonzero(~cols.ok)]
    kept = cols.batch
    try:
        return _assemble(batches, cols, kept, contexts, objects, vocab)
    except pa.ArrowInvalid:             # a header key that is not UTF-8: the reference decoder reports it
        objects += [(*batches.tags[i], decode_entry(batches.raws[i])) for i in kept]
        return _assemble(batches, cols, kept[:0], contexts, objects, vocab)


def _records_before(batches, kept, objects) -> dict[int, int]:
    """Entry sequence -> records before it in its record set (Produce offsets count records, not deltas)."""
    entries = [(*batches.tags[i], batches.heads[i][12]) for i in kept]
    entries += [(seq, ctx, len(getattr(obj, "records", ()) or ())) for seq, ctx, obj in objects]
    entries.sort()
    before, running = {}, {}
    for seq, ctx, count in entries:
        before[seq] = running.get(ctx, 0)
        running[ctx] = before[seq] + count
    return before


def _assemble(batches, cols, kept, contexts, objects, vocab):
    objects = sorted(objects, key=lambda entry: entry[0])
    before = _records_before(batches, kept, objects)
    parts, order = [], []
    if len(kept) and int(cols.count.sum()):          # kept: all the batches read column-wise, or none
        heads = [batches.heads[i] for i in kept]
        tags = [(*batches.tags[i], before[batches.tags[i][0]]) for i in kept]
        part, keys = _fast_part(heads, tags, cols, contexts, vocab)
        parts.append(part)
        order.append(keys)
    made = _object_part(objects, contexts, before, vocab)
    if made is not None:
        parts.append(made[0])
        order.append(made[1])
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    rows = np.argsort(np.concatenate(order), kind="stable")
    heavy = pa.Table.from_batches([p.heavy for p in parts]).take(rows).combine_chunks().to_batches()[0]
    numbers = {name: _joined([p.numbers[name] for p in parts], rows) for name in NUMBERS}
    text = {name: np.concatenate([p.text[name] for p in parts])[rows] for name in TEXT}
    return Part(heavy, numbers, text)


def _joined(pieces: list, rows=None) -> tuple:
    """One (values, validity or None) of several, in ``rows`` order if given."""
    values = np.concatenate([v for v, _ in pieces])
    valid = None
    if any(ok is not None for _, ok in pieces):
        valid = np.concatenate([np.ones(len(v), dtype=bool) if ok is None else ok for v, ok in pieces])
    if rows is not None:
        values = values[rows]
        valid = valid[rows] if valid is not None else None
    return values, valid


def _fast_part(heads, tags, cols, contexts, vocab):
    """(part, ordering keys) of the column-wise read records."""
    counts = cols.count
    nb, n = len(heads), int(counts.sum())
    rb = np.repeat(np.arange(nb), counts)
    first = np.concatenate(([0], np.cumsum(counts)))[:-1]
    k = np.arange(n) - first[rb]
    table = np.array(heads, dtype=np.int64).reshape(nb, -1)     # one row per batch header, in one call
    h = {name: table[:, i]
         for i, name in enumerate(("base_offset", "length", "epoch", "magic", "crc", "attrs", "last_delta",
                                   "base_ts", "max_ts", "producer_id", "producer_epoch", "base_sequence"))}
    seq = np.fromiter((t[0] for t in tags), dtype=np.int64, count=nb)
    ctx = [contexts[t[1]] for t in tags]
    before = np.fromiter((t[2] for t in tags), dtype=np.int64, count=nb)
    produce = np.fromiter((c[1] == "request" for c in ctx), dtype=bool, count=nb)
    has_base = np.fromiter((c[4] is not None for c in ctx), dtype=bool, count=nb)
    base = np.fromiter((c[4] or 0 for c in ctx), dtype=np.int64, count=nb)
    offset = np.where(produce[rb], base[rb] + before[rb] + k, h["base_offset"][rb] + cols.offset_delta)
    log_append = (h["attrs"] & TIMESTAMP_TYPE_BIT) != 0
    ms = np.where(log_append[rb], h["max_ts"][rb], h["base_ts"][rb] + cols.timestamp_delta)
    partition = np.fromiter((c[3] if c[3] is not None else 0 for c in ctx), dtype=np.int32, count=nb)
    has_partition = np.fromiter((c[3] is not None for c in ctx), dtype=bool, count=nb)
    numbers = {
        "frame": np.fromiter((c[0] for c in ctx), dtype=np.int64, count=nb)[rb],
        "partition": (partition[rb], None if has_partition.all() else has_partition[rb]),
        "offset": (offset, _nulls(~produce[rb] | has_base[rb])),
        "timestamp": _timestamps(ms),
        "batch_base_offset": h["base_offset"][rb], "magic": h["magic"].astype(np.int8)[rb],
        "producer_id": h["producer_id"][rb], "producer_epoch": h["producer_epoch"].astype(np.int16)[rb],
        "base_sequence": h["base_sequence"].astype(np.int32)[rb],
        "transactional": ((h["attrs"] & TRANSACTIONAL_BIT) != 0)[rb],
        "control": np.zeros(n, dtype=bool), "crc_ok": np.ones(n, dtype=bool),
    }
    numbers = {name: value if isinstance(value, tuple) else (value, None) for name, value in numbers.items()}
    codecs = [codec_name(a & CODEC_MASK) for a in h["attrs"].tolist()]
    text = {
        "kind": vocab.codes_of(c[1] for c in ctx)[rb], "topic": vocab.codes_of(c[2] for c in ctx)[rb],
        "timestamp_type": np.where(log_append, vocab.code("log_append"), vocab.code("create")).astype(np.int32)[rb],
        "codec": vocab.codes_of(codecs)[rb],
    }
    u = cols.region
    heavy = pa.RecordBatch.from_arrays([_binary(u, *cols.key), _binary(u, *cols.value), _headers(u, cols)],
                                       schema=_HEAVY)
    return Part(heavy, numbers, text), seq[rb] * ORDER + k


_HEAVY = pa.schema([spec.arrow_schema("records").field(name) for name in BYTES])


def _pool():
    """The memory pool for the table's large buffers: the system allocator, which grows a buffer in place
    (a cast or take builds its result by growing it) where Arrow's default pool moves it to fresh pages at
    every growth, and fresh pages cost far more than copying (about twice the time of the whole cast)."""
    return pa.system_memory_pool()


def _nulls(valid):
    """None when every value is valid (the common case), else the validity array."""
    return None if valid.all() else np.asarray(valid)


def _timestamps(ms) -> tuple:
    valid = np.abs(ms) <= MS_LIMIT
    return np.where(valid, ms, 0) * 1_000_000, _nulls(valid)


def _binary(u, starts, lengths):
    """A binary array of the ranges ``starts[i]:starts[i] + lengths[i]`` of ``u`` (length -1: null).

    Short values are cut from fixed windows with one mask. Otherwise the array is made as an Arrow
    ``binary_view`` array pointing into ``u`` (16-byte views, built with numpy: values of up to 12 bytes
    inline, longer ones as prefix, buffer and offset), then cast to ``binary``: the copying of the bytes is
    one pass in Arrow's C++."""

    n = len(starts)
    size = np.maximum(lengths, 0)
    nulls = lengths < 0
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if nulls.any() else None
    widest = int(size.max()) if n else 0
    if widest <= SHORT:                  # all short (keys, header names): cut straight from a window each
        window = np.lib.stride_tricks.sliding_window_view(u, max(widest, 1))[starts]
        data = window[np.arange(window.shape[1])[None, :] < size[:, None]]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(size, out=offsets[1:])
        return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                     null_count=int(nulls.sum()))
    views = np.zeros((n, 4), dtype="<i4")
    views[:, 0] = size
    long = size > 12
    at = starts[long]
    windows = np.lib.stride_tricks.sliding_window_view(u, 12)      # u ends with PAD bytes: all in range
    views[long, 1] = windows[at, :4].copy().view("<i4")[:, 0]
    views[long, 3] = at
    short = np.flatnonzero(~long)
    inline = windows[starts[short]]
    inline[_BYTE_INDEX >= size[short][:, None]] = 0
    views.view(np.uint8).reshape(n, 16)[short, 4:] = inline
    array = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), pa.py_buffer(u)],
                                  null_count=int(nulls.sum()))
    return pc.cast(array, pa.binary(), memory_pool=_pool())


def _headers(u, cols):

    keys = _binary(u, *cols.header_key)
    keys = keys.cast(pa.string())            # validates UTF-8 (header keys are strings)
    values = _binary(u, *cols.header_value)
    items = pa.StructArray.from_arrays([keys, values], fields=list(spec.arrow_type("headers").value_type))
    offsets = np.zeros(len(cols.header_counts) + 1, dtype=np.int32)
    np.cumsum(cols.header_counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=spec.arrow_type("headers"))


def _object_part(objects: list, contexts: list, before: dict, vocab: Vocabulary):
    """(part, ordering keys) of the records of batches decoded as objects, or None."""
    rows, keys = [], []
    for seq, ctx, obj in objects:
        frame, kind, topic, partition, base = contexts[ctx]
        for index, record in enumerate(getattr(obj, "records", ()) or ()):
            if kind == "request":
                offset = base + before[seq] + index if base is not None else None
            else:
                offset = record.offset
            rows.append(_object_row(frame, kind, topic, partition, offset, obj, record))
            keys.append(seq * ORDER + index)
    if not rows:
        return None
    columns = dict(zip(spec.names("records"), zip(*rows)))
    heavy = pa.RecordBatch.from_arrays([pa.array(list(columns[name]), type=field.type)
                                        for name, field in zip(BYTES, _HEAVY)], schema=_HEAVY)
    numbers = {}
    for name in NUMBERS:
        values = columns[name]
        valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
        data = np.array([v if v is not None else 0 for v in values], dtype=spec.numpy_dtype(TYPES[name]))
        numbers[name] = (data, _nulls(valid))
    text = {name: vocab.codes_of(columns[name]) for name in TEXT}
    return Part(heavy, numbers, text), np.array(keys, dtype=np.int64)


def _object_row(frame, kind, topic, partition, offset, batch, record) -> tuple:
    ts = record.timestamp
    return (frame, kind, topic, partition, offset,
            ts * 1_000_000 if ts is not None and abs(ts) <= MS_LIMIT else None,
            getattr(batch, "timestamp_type", None), record.key, record.value,
            [{"key": _text(k), "value": v} for k, v in record.headers],
            getattr(batch, "base_offset", None), getattr(batch, "magic", None), getattr(batch, "codec", None),
            getattr(batch, "producer_id", None), getattr(batch, "producer_epoch", None),
            getattr(batch, "base_sequence", None), bool(getattr(batch, "transactional", False)),
            record.control is not None or bool(getattr(batch, "control", False)),
            bool(getattr(batch, "crc_ok", True)))


def _text(name: str) -> str:
    """A header key as Arrow can hold it: bytes that were not UTF-8 (kept by the decoder as surrogate
    escapes) become U+FFFD."""
    try:
        name.encode()
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class Joined(NamedTuple):
    """Every part joined: byte columns as Arrow chunks, numbers as one numpy array each, text as codes."""
    heavy: list
    numbers: dict
    text: dict
    words: list


class Rows:
    """The parts of a read, gathered as they come: byte columns kept as Arrow chunks, numbers and text
    codes copied into one growing numpy array per column. Sized from the expected number of records (the
    frames' record counts) so that, usually, nothing is ever copied again: joining pieces at the end would
    hold every column twice for a moment, and what a process lets go of is not given back to the system."""

    def __init__(self, expected: int = 0, reserve: bool = False) -> None:
        """With ``reserve``, ``expected`` is an upper estimate, not a count: the columns are reserved (address
        space that holds no memory until rows are written to it), so that reserving too much costs nothing
        and the columns are never copied at the end."""
        self.capacity = max(int(expected), 1024)
        self.size = 0
        self.heavy: list = []
        self.reserved = reserve
        empty = _reserved if reserve else np.empty
        self.values = {name: empty(self.capacity, dtype=spec.numpy_dtype(TYPES[name])) for name in NUMBERS}
        self.valid: dict[str, np.ndarray] = {}            # only columns that have had a null
        self.codes = {name: empty(self.capacity, dtype=np.int32) for name in TEXT}

    def add(self, part: Part) -> None:
        n = part.heavy.num_rows
        if self.size + n > self.capacity:
            self._grow(max(2 * self.capacity, self.size + n))
        at, end = self.size, self.size + n
        self.heavy.append(part.heavy)
        for name, (values, valid) in part.numbers.items():
            self.values[name][at:end] = values
            if valid is not None and name not in self.valid:
                self.valid[name] = np.ones(self.capacity, dtype=bool)
            if name in self.valid:
                self.valid[name][at:end] = True if valid is None else valid
        for name, codes in part.text.items():
            self.codes[name][at:end] = codes
        self.size = end

    def _grow(self, capacity: int) -> None:
        for columns in (self.values, self.valid, self.codes):
            for name, array in columns.items():
                grown = np.empty(capacity, dtype=array.dtype)
                grown[:self.size] = array[:self.size]
                if columns is self.valid:
                    grown[self.size:] = True
                columns[name] = grown
        self.capacity = capacity

    def joined(self, vocab: Vocabulary) -> Joined:
        """The columns, exactly as long as the rows (a copy only where far fewer came than expected)."""
        n = self.size

        def cut(array):
            return array[:n] if n >= 0.8 * len(array) or self.reserved else array[:n].copy()

        numbers = {name: (cut(self.values[name]), cut(self.valid[name]) if name in self.valid else None)
                   for name in NUMBERS}
        return Joined(self.heavy, numbers, {name: cut(self.codes[name]) for name in TEXT}, list(vocab.words))


def _reserved(capacity: int, dtype) -> np.ndarray:
    """An array of ``capacity`` items over fresh anonymous memory: pages the rows never reach are never
    part of the process's memory (a heap block may be memory used before)."""
    import mmap

    dtype = np.dtype(dtype)
    return np.frombuffer(mmap.mmap(-1, max(capacity * dtype.itemsize, 1)), dtype=dtype, count=capacity)


def to_arrow(joined: Joined):
    """The records table as Arrow (spec schema)."""
    schema = spec.arrow_schema("records")
    arrays = []
    for field in schema:
        name = field.name
        if name in BYTES:
            arrays.append(pa.chunked_array([b.column(name) for b in joined.heavy], type=field.type))
        elif name in TEXT:
            arrays.append(_words(joined, name, field.type))
        else:
            values, valid = joined.numbers[name]
            arrays.append(pa.array(values, field.type, mask=None if valid is None else ~valid))
    return pa.Table.from_arrays(arrays, schema=schema)


def to_pandas(joined: Joined):
    """The records table as pandas: numbers and times are the joined numpy arrays themselves."""
    import pandas as pd

    data = {}
    for column in spec.RECORDS:
        name = column.name
        if name in BYTES:
            chunks = pa.chunked_array([b.column(name) for b in joined.heavy], type=spec.arrow_type(column.type))
            data[name] = spec.arrow_to_pandas(chunks, column.type)
        elif name in TEXT:
            data[name] = spec.arrow_to_pandas(_words(joined, name, pa.large_string()), column.type)
        else:
            data[name] = spec.numpy_to_pandas(*joined.numbers.pop(name), column.type)
    return pd.DataFrame(data, columns=spec.names("records"), copy=False)


def _words(joined: Joined, name: str, arrow_type):
    codes = joined.text.pop(name)
    nulls = codes < 0
    indices = pa.array(codes, pa.int32(), mask=nulls if nulls.any() else None)
    return pc.take(pa.array(joined.words, arrow_type), indices, memory_pool=_pool())
