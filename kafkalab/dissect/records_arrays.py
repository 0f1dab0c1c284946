"""Arrow arrays of the records table from column-wise reads (:mod:`kafkalab.protocol.records.columnar`).

Per-batch values (frame, topic, codec, producer...) are made once per batch and spread to the batch's
records with one ``take``; per-record values come from numpy arrays; key, value and header bytes are cut
out of the read buffer with one boolean mask each. Rows of batches read as objects are made in Python and
put back in wire order.
"""
from __future__ import annotations

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


def fast_rows(batches, cols, contexts: list, objects: list):
    """One Arrow record batch of the records of ``batches`` (read into ``cols``) and of ``objects``
    ((sequence, context, object)), in wire order; None when there are no rows."""
    objects = list(objects)
    objects += [(*batches.tags[i], decode_entry(batches.raws[i])) for i in np.flatnonzero(~cols.ok)]
    kept = cols.batch
    try:
        return _assemble(batches, cols, kept, contexts, objects)
    except pa.ArrowInvalid:             # a header key that is not UTF-8: the reference decoder reports it
        objects += [(*batches.tags[i], decode_entry(batches.raws[i])) for i in kept]
        return _assemble(batches, cols, kept[:0], contexts, objects)


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


def _assemble(batches, cols, kept, contexts, objects):
    objects = sorted(objects, key=lambda entry: entry[0])
    before = _records_before(batches, kept, objects)
    parts, order = [], []
    if len(kept) and int(cols.count.sum()):          # kept: all the batches read column-wise, or none
        heads = [batches.heads[i] for i in kept]
        tags = [(*batches.tags[i], before[batches.tags[i][0]]) for i in kept]
        table, keys = _fast_table(heads, tags, cols, contexts)
        parts.append(table)
        order.append(keys)
    rows = _object_rows(objects, contexts, before)
    if rows is not None:
        parts.append(rows[0])
        order.append(rows[1])
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    table = pa.Table.from_batches(parts)
    return table.take(np.argsort(np.concatenate(order), kind="stable")).combine_chunks().to_batches()[0]


def _fast_table(heads, tags, cols, contexts):
    """(record batch, ordering keys) of the column-wise read records."""

    counts = cols.count
    nb, n = len(heads), int(counts.sum())
    rb = np.repeat(np.arange(nb), counts)
    first = np.concatenate(([0], np.cumsum(counts)))[:-1]
    k = np.arange(n) - first[rb]
    h = {name: np.fromiter((head[i] for head in heads), dtype=np.int64, count=nb)
         for i, name in enumerate(("base_offset", "length", "epoch", "magic", "crc", "attrs", "last_delta",
                                   "base_ts", "max_ts", "producer_id", "producer_epoch", "base_sequence"))}
    seq = np.fromiter((t[0] for t in tags), dtype=np.int64, count=nb)
    ctx = [contexts[t[1]] for t in tags]
    before = np.fromiter((t[2] for t in tags), dtype=np.int64, count=nb)
    produce = np.fromiter((c[1] == "request" for c in ctx), dtype=bool, count=nb)
    has_base = np.fromiter((c[4] is not None for c in ctx), dtype=bool, count=nb)
    base = np.fromiter((c[4] or 0 for c in ctx), dtype=np.int64, count=nb)
    offset = np.where(produce[rb], base[rb] + before[rb] + k, h["base_offset"][rb] + cols.offset_delta)
    offset_valid = ~produce[rb] | has_base[rb]
    log_append = (h["attrs"] & TIMESTAMP_TYPE_BIT) != 0
    ms = np.where(log_append[rb], h["max_ts"][rb], h["base_ts"][rb] + cols.timestamp_delta)
    per_batch = {
        "frame": pa.array([c[0] for c in ctx], pa.int64()), "kind": pa.array([c[1] for c in ctx], pa.string()),
        "topic": pa.array([c[2] for c in ctx], pa.string()), "partition": pa.array([c[3] for c in ctx], pa.int32()),
        "timestamp_type": pa.array(np.where(log_append, "log_append", "create").tolist(), pa.string()),
        "batch_base_offset": pa.array(h["base_offset"], pa.int64()), "magic": pa.array(h["magic"], pa.int8()),
        "codec": pa.array([codec_name(a & CODEC_MASK) for a in h["attrs"].tolist()], pa.string()),
        "producer_id": pa.array(h["producer_id"], pa.int64()),
        "producer_epoch": pa.array(h["producer_epoch"], pa.int16()),
        "base_sequence": pa.array(h["base_sequence"], pa.int32()),
        "transactional": pa.array((h["attrs"] & TRANSACTIONAL_BIT) != 0, pa.bool_()),
        "control": pa.array(np.zeros(nb, dtype=bool), pa.bool_()), "crc_ok": pa.array(np.ones(nb, dtype=bool)),
    }
    take = pa.array(rb)
    u = cols.region
    values = {
        "offset": _with_nulls(offset, offset_valid, pa.int64()),
        "timestamp": _timestamps(ms),
        "key": _binary(u, *cols.key),
        "value": _binary(u, *cols.value),
        "headers": _headers(u, cols),
    }
    arrays = [values[c.name] if c.name in values else pc.take(per_batch[c.name], take, memory_pool=_pool())
              for c in spec.RECORDS]
    batch = pa.RecordBatch.from_arrays(arrays, schema=spec.arrow_schema("records"))
    return batch, seq[rb] * ORDER + k


def _pool():
    """The memory pool for the table's large buffers: the system allocator, which grows a buffer in place
    (a cast or take builds its result by growing it) where Arrow's default pool moves it to fresh pages at
    every growth, and fresh pages cost far more than copying (about twice the time of the whole cast)."""
    return pa.system_memory_pool()


def _with_nulls(data, valid, arrow_type):

    if valid.all():
        return pa.array(data, arrow_type)
    return pa.array(data, arrow_type, mask=~np.asarray(valid))


def _timestamps(ms):

    valid = np.abs(ms) <= MS_LIMIT
    ns = np.where(valid, ms, 0) * 1_000_000
    return _with_nulls(ns, valid, pa.timestamp("ns", tz="UTC"))


def _binary(u, starts, lengths):
    """A binary array of the ranges ``starts[i]:starts[i] + lengths[i]`` of ``u`` (length -1: null).

    Short values are cut from fixed windows with one mask. Otherwise the array is made as an Arrow ``binary_view`` array pointing into ``u`` (16-byte views, built with numpy: values of
    up to 12 bytes inline, longer ones as prefix, buffer and offset), then cast to ``binary``: the copying
    of the bytes is one pass in Arrow's C++."""

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


def _object_rows(objects: list, contexts: list, before: dict):
    """(record batch, ordering keys) of the records of batches decoded as objects, or None."""
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
    schema = spec.arrow_schema("records")
    columns = list(zip(*rows))
    arrays = [pa.array(list(values), type=field.type) for values, field in zip(columns, schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema), np.array(keys, dtype=np.int64)


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
