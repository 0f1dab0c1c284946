"""What a decode task hands back (see :mod:`.decode`): the engine's tables of one group, with real times put
back and the marker connection left out, and the facts the global numbering needs, as Arrow batches.

Why a module of its own, built on the engine's plain columns rather than its pandas tables: a decode task
only moves the tables on, as Arrow. The frames table's values are taken from the engine's columns
(:attr:`~kafkalab.capture.frame_store.FrameStore.columns`), the exchanges are those columns joined by
:func:`~kafkalab.dissect.tables.exchanges_arrow` (as the single-process table is), the
connections come from the engine's rows and the records table straight from the engine's Arrow columns: no
pandas table is made and converted back, no Frame object is made per frame (only a Produce request's
``acks`` is read from its bytes), and the per-frame work on times and latencies is done on arrays.
Latencies keep Python's ``round`` (the engine's, which numpy's rounding does not always match).
"""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from kafkalab.dissect import columns as spec
from kafkalab.protocol.correlation import PRODUCE, expects_response

SECOND = 1_000_000_000


def outputs(cap, n: int, keys: np.ndarray, real_ns: np.ndarray, codes: np.ndarray) -> list:
    """The group's rows with real times and local numbers, and the facts for the global numbering: a list of
    (kind, batch of :func:`.decode.part_schema`). ``n``: the group's packets (the marker's come after them);
    ``keys``: their order keys; ``real_ns``: their real times; ``codes``: their connections (see
    :func:`.decode._connection_codes`)."""
    from kafkalab.dissect.tables import exchanges_arrow

    real = real_ns / 1e9                        # the engine's float seconds
    connections = cap.connection_rows()
    streams = np.array([r["stream"] for r in connections], dtype=np.int64)
    first = np.array([int(r["first_time"] * 1e9) for r in connections], dtype=np.int64) // SECOND
    last = np.array([int(r["last_time"] * 1e9) for r in connections], dtype=np.int64) // SECOND
    marker = streams[first == n + 1]
    marker_stream = int(marker[0]) if len(marker) else -1
    mine = streams != marker_stream
    streams, first, last = streams[mine], first[mine] - 1, last[mine] - 1
    last_real = {s: _last_real(codes, real, f, l) for s, f, l in zip(streams.tolist(), first.tolist(), last.tolist())}
    out = [_batch("stream", {"local": streams, "rank": keys[first, 0], "start": keys[first, 1],
                             "pos": keys[first, 2]})]
    frames = cap._store.columns
    synthetic_last = dict(zip(streams.tolist(), (last + 1).tolist()))
    real_rows, ts_of, fkey = _frame_times(frames, n, keys, real, marker_stream, synthetic_last, last_real)
    out.append(fkey)
    columns = _frames_columns(frames, real_rows, ts_of)
    out.append(_batch("frames", columns))
    rows = np.flatnonzero(real_rows)                   # each kept frame's row in the engine's columns
    out.append(_batch("exchanges", exchanges_arrow(
        columns, lambda requests: _expects_response(cap._store, rows[requests]))))
    out.extend(_records_batches(cap))
    first_real = dict(zip(streams.tolist(), real[first].tolist()))
    out.append(_connections_batch([r for r in connections if r["stream"] != marker_stream], first_real, last_real))
    out.append(_topics_batch(cap, int(real_rows.sum())))
    out.append(_nulls_batch(out))
    return out


def _nulls_batch(batches: list):
    """Which columns of the group's tables hold nulls (see :func:`null_paths`): the driver declares the others
    not nullable."""
    found = sorted({(kind, path) for kind, batch in batches if kind in spec.TABLES
                    for name, column in zip(batch.schema.names, batch.columns) for path in null_paths(column, name)})
    return _batch("nulls", {"table": [kind for kind, _ in found], "column": [path for _, path in found]})


def null_paths(array, name: str) -> set[str]:
    """The paths within column ``name`` (an Arrow array) that hold a null: ``name`` itself, ``name[]`` for a
    list's elements, ``name[].field`` for a field of a list's structs."""
    import pyarrow as pa

    found = {name} if array.null_count else set()
    if pa.types.is_list(array.type):
        found |= null_paths(array.flatten(), f"{name}[]")
    elif pa.types.is_struct(array.type):
        for field, child in zip(array.type, array.flatten()):
            found |= null_paths(child, f"{name}.{field.name}")
    return found


def _frame_times(frames: dict, n: int, keys: np.ndarray, real: np.ndarray, marker_stream: int,
                 synthetic_last: dict, last_real: dict) -> tuple:
    """(which rows are the group's own frames, not the marker's; each frame's real time; the ``fkey`` batch).
    A frame's synthetic time names the packet that completed it; one completed only at the end of the
    capture (numbered after the marker's frame) takes its connection's last real time where the engine gave
    it the connection's last packet's."""
    number = np.asarray(frames["frame"], dtype=np.int64)
    stream = np.asarray(frames["stream"], dtype=np.int64)
    k = spec.epoch_micros_array(frames["ts"]) * 1000 // SECOND      # synthetic: whole seconds
    marks = number[stream == marker_stream]
    marker_number = int(marks[0]) if len(marks) else len(number) + 1
    real_rows = stream != marker_stream
    done = number < marker_number                       # completed by a real packet
    completing = np.maximum.accumulate(np.where(done, k - 1, 0)) if len(k) else k
    ts_of = real[np.clip(k - 1, 0, max(n - 1, 0))] if n else np.zeros(len(k))
    for i in np.nonzero(real_rows & ~done)[0].tolist():
        if k[i] == synthetic_last[int(stream[i])]:
            ts_of[i] = last_real[int(stream[i])]
    key_at = keys[np.where(done, completing, 0)]
    sel = real_rows
    fkey = _batch("fkey", {
        "local": number[sel], "phase": np.where(done, 0, 1)[sel], "rank": np.where(done, key_at[:, 0], 0)[sel],
        "start": np.where(done, key_at[:, 1], 0)[sel], "pos": np.where(done, key_at[:, 2], 0)[sel],
        "stream": stream[sel]})
    return real_rows, ts_of, fkey


def _frames_columns(frames: dict, real_rows: np.ndarray, ts_of: np.ndarray) -> dict:
    """The frames table's columns (Arrow arrays) for the group's own frames: the engine's columns with real
    times, and latencies of the group's pairs computed from them."""
    import pyarrow as pa

    from kafkalab.dissect.tables import rows_by_number

    arrays = {c.name: _plain_arrow(frames[c.name], c.type) for c in spec.FRAMES if c.type != "time"}
    row_of = rows_by_number(np.asarray(frames["frame"], dtype=np.int64))
    is_response = _is(arrays["kind"], "response")
    partner = row_of(np.where(is_response, _numbers(arrays["request_frame"]), _numbers(arrays["response_frame"])))
    latency = arrays["latency_ms"].to_numpy(zero_copy_only=False).astype(np.float64)   # nulls as NaN
    paired = np.flatnonzero((partner >= 0) & ~np.isnan(latency) & real_rows & real_rows[np.maximum(partner, 0)])
    answers = is_response[paired]
    response_at = np.where(answers, paired, partner[paired])
    request_at = np.where(answers, partner[paired], paired)
    latency[paired] = _latencies(ts_of[response_at] - ts_of[request_at])
    columns = dict(arrays, time=pa.array(spec.epoch_micros_array(ts_of) * 1000, pa.int64()),
                   latency_ms=_floats(latency))
    if not real_rows.all():
        keep = pa.array(real_rows)
        columns = {name: a.filter(keep) for name, a in columns.items()}
    return columns


def _connections_batch(rows: list, first_real: dict, last_real: dict):
    """The connections table's batch: the engine's rows (the marker's left out) with real first and last times."""
    import pyarrow as pa

    columns = {c.name: pa.array([r[c.name] for r in rows], spec.arrow_type(c.type)) for c in spec.CONNECTIONS
               if c.type != "time"}
    columns["first_time"] = [int(first_real[r["stream"]] * 1e9) for r in rows]
    columns["last_time"] = [int(last_real[r["stream"]] * 1e9) for r in rows]
    return _batch("connections", columns)


def _topics_batch(cap, frames: int):
    """The topic names the group knows, the topic ids it could not name (another group may), and how many frames
    the group has (the driver numbers a capture's frames itself when they are few)."""
    import pyarrow as pa

    known = sorted(map(str, cap._analyzer.topic_names))
    unresolved = sorted({str(topic_id) for topic_id, name in _topic_ids(cap) if name is None})
    return _batch("topics", {"unresolved": pa.array([unresolved], pa.list_(pa.string())),
                             "known": pa.array([known], pa.list_(pa.string())),
                             "frames": pa.array([frames], pa.int64())})


def _is(strings, value: str) -> np.ndarray:
    """Where an Arrow string array equals ``value`` (nulls: no)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.equal(strings, value), False).to_numpy(zero_copy_only=False)


def _latencies(elapsed: np.ndarray) -> list:
    """Seconds between requests and responses as the engine reports them (:func:`~kafkalab.dissect.columns.latency_ms`)."""
    return [spec.latency_ms(seconds) for seconds in elapsed.tolist()]


def _floats(values: np.ndarray):
    """A float64 Arrow array of ``values``, NaN as null (zero under it, as an array built from Python values
    holds: the same bytes whichever way a column was made)."""
    import pyarrow as pa

    missing = np.isnan(values)
    return pa.array(np.where(missing, 0.0, values), pa.float64(), mask=missing if missing.any() else None)


def _numbers(array) -> np.ndarray:
    """An int64 Arrow array as numpy, nulls as -1."""
    return array.fill_null(-1).to_numpy().astype(np.int64, copy=False)


def _plain_arrow(values, type_name: str):
    """A frames column as the engine holds it (Python values, None for null) as an Arrow array of the spec's
    type, with the values the frames table shows: NaN a null float, an empty list for no list (see
    :func:`kafkalab.dissect.columns.shared_lists`)."""
    import pyarrow as pa

    kind = spec.arrow_type(type_name)
    if type_name == "float64":
        return _floats(pa.array(values, kind).to_numpy(zero_copy_only=False))
    if type_name == "bool":
        return pa.array(np.array(values, dtype=bool), kind)
    if type_name == "list<string>":             # no list made per value: nulls become empty lists
        lists = pa.array(values, kind)
        return pa.ListArray.from_arrays(lists.offsets, lists.values) if lists.null_count else lists
    return pa.array(values, kind)


def _expects_response(store, requests: np.ndarray) -> np.ndarray:
    """Per request row (rows of the engine's columns), whether it expects a response (see
    :func:`kafkalab.protocol.correlation.expects_response`). A Produce request's ``acks`` is read from its bytes with
    the record sets left unread; a frame whose bytes do not decode so is asked as a Frame."""
    from kafkalab.dissect.decoding import raw_records_body
    from kafkalab.protocol.errors import ProtocolError

    out = np.ones(len(requests), dtype=bool)
    api_keys, versions = store.columns["api_key"], store.columns["api_version"]
    produce = [j for j, i in enumerate(requests.tolist()) if api_keys[i] == PRODUCE]
    if not produce:
        return out
    raw = store.raw
    with (raw.reader() if hasattr(raw, "reader") else nullcontext(raw.__getitem__)) as read:
        for j in produce:
            i = int(requests[j])
            body = None
            if store.objects[i] is None:
                try:
                    body = raw_records_body(read(i), "request", PRODUCE, versions[i])
                except (ProtocolError, ValueError, TypeError):
                    body = None
            if not isinstance(body, dict):
                body = store.frame(i).body
            out[j] = expects_response(PRODUCE, body)
    return out


def _last_real(codes: np.ndarray, real: np.ndarray, first: int, last: int) -> float:
    """The latest real time among the connection's packets (the engine keeps the maximum)."""
    span = slice(first, last + 1)
    return float(real[span][codes[span] == codes[first]].max())


def _topic_ids(cap):
    """(topic id, name or None) pairs of every frame that names topics by id."""
    store = cap._store
    found = [topic_ids for _, topic_ids in store.extras.values() if topic_ids]
    found += [f.topic_ids for f in store.objects if f is not None and f.topic_ids]
    return [pair for topic_ids in found for pair in topic_ids.items()]


def _records_batches(cap) -> list:
    """The records table straight from the engine's Arrow columns (no pandas view made), as batches that share
    their buffers: the keys, values and headers come in chunks of a few MB, and joining them into one column
    before the output is cut into pieces copied every record byte once more (3.6 s of a 2 GB capture's 30 s
    of decoding on Spark)."""
    import pyarrow as pa

    from kafkalab.capture.rows import record_sources
    from kafkalab.dissect.records_table import records_arrow

    with record_sources(cap._store) as frames:
        table = records_arrow(frames)
    columns = {c.name: (table.column(c.name).cast(pa.int64()) if c.type == "time" else table.column(c.name))
               for c in spec.TABLES["records"]}
    columns["_order"] = pa.chunked_array([np.arange(table.num_rows, dtype=np.int64)])
    batches = pa.table(columns).to_batches()
    if not batches:
        return [_batch("records", {name: [] for name in columns})]
    return [_batch("records", dict(zip(batch.schema.names, batch.columns))) for batch in batches]


def _batch(kind: str, columns: dict):
    """(``kind``, a batch of its schema from ``columns``: arrays of one length; columns not given are null)."""
    import pyarrow as pa

    from .decode import part_schema

    schema = part_schema(kind)
    n = len(next(iter(columns.values())))
    return kind, pa.RecordBatch.from_arrays(
        [_arrow(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema], schema=schema)


def _arrow(values, kind):
    """``values`` (an Arrow array, numpy array or list) as an Arrow array of ``kind``, not copied when it is one."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):     # one chunk is taken as it is: combining copies even one
        values = _no_validity(values.chunk(0)) if values.num_chunks == 1 else values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if values.type == kind else values.cast(kind)
    return pa.array(values, type=kind)


def _no_validity(array):
    """``array`` without a validity buffer when it has no nulls (as combining chunks leaves it): the output's
    pieces are cut by the batches' byte size, which counts such a buffer (the IPC bytes do not)."""
    import pyarrow as pa

    buffers = array.buffers()
    if array.null_count or buffers[0] is None or pa.types.is_nested(array.type):
        return array
    return pa.Array.from_buffers(array.type, len(array), [None, *buffers[1:]], null_count=0, offset=array.offset)
