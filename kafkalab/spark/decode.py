"""The decode stage of a distributed read: the index rows of one group of connections, decoded by kafkalab's own
engine, into Arrow batches with everything the global numbering needs.

A group holds the index rows of every packet of a set of connections (see :mod:`.pipeline` for which
connections share a group). Sorted by their global order key, they become the engine's input with timestamps
that are their positions (1 s, 2 s, ...): every time the engine reports then says which packet it came from,
and a frame's time names the packet that completed it. When every row was read by the packet index, the input
is a :class:`~kafkalab.pcap.index.PacketIndex` over the group's payloads (read by offset from the shared files)
and the engine's bulk stages decode it (:func:`kafkalab.capture.bulk.read_index`); otherwise (rows of the
general reader, or a group the bulk stages leave to the general path) the same packets are fed one by one.
After the group's packets comes a *marker connection* (a handshake and one complete ApiVersions request on
addresses no capture uses): the frame it completes is numbered after every frame completed by a real packet
and before everything completed only at the end of the capture, which tells the two kinds apart. The real
timestamps are put back afterwards (:mod:`.outputs`, straight from the engine's columns into Arrow), with times
and latencies computed from them as the engine computes them (seconds as floats; frame and exchange times by
:func:`kafkalab.dissect.columns.epoch_micros`; latency ``round((response - request) * 1000, 6)`` ms).

What comes out, per group ``g``: rows of three columns (:func:`output_ddl`), each holding one Arrow batch of one
kind as IPC bytes (:func:`part_schema`): ``stream`` (each TCP connection's local number and first packet's order
key), ``fkey`` (each frame's local number and sort key), ``topics`` (unresolved and known topic ids, and the
group's frame count), ``nulls`` (which of the tables' columns hold nulls), and the rows of the four tables with
local frame and stream numbers. The bytes are opaque to the JVM: it takes them in and keeps them at the cost of a
copy, where one wide row per table row (a struct column per kind, all but one null) cost it most of a read's CPU
in conversion, caching and the code it generated for that shape.

The bytes are an Arrow IPC stream with LZ4-compressed buffers (:func:`_packed`): record values compress
well, and the JVM then keeps and moves a fraction of the bytes (a 250 MB capture read on ``local[2]`` took
15% less CPU than with plain buffers; a 2 GB capture's decode rows, 1.1 GB so, outgrew the memory Spark gives
its storage with a 6 GB heap when plain, spilled to disk, and the read took 37.8 s instead of 25 s).
"""
from __future__ import annotations

import struct

import numpy as np

from kafkalab.dissect import columns as spec
from kafkalab.pcap import ACK, PSH, SYN, TcpPacket

from .outputs import SECOND, outputs
from .packets import NOTES_SEP, payloads
from .payload_buffer import payload_buffer

_MARK_CLIENT, _MARK_SERVER = ("0.0.0.1", 1), ("0.0.0.2", 9092)
_MARK_REQUEST = struct.pack(">ihhih", 10, 18, 0, 0x7EAD, -1)      # ApiVersions v0, null client id
# the marker's packets: (client sends?, seq, ack, flags, payload)
_MARK = ((True, 100, 0, SYN, b""), (False, 500, 101, SYN | ACK, b""), (True, 101, 501, ACK, b""),
         (True, 101, 501, ACK | PSH, _MARK_REQUEST))
_ORDER = (("rank", "ascending"), ("start", "ascending"), ("pos", "ascending"))
KINDS = ("stream", "fkey", "topics", "nulls", "frames", "exchanges", "records", "connections")


def output_ddl() -> str:
    """The decode tasks' rows: a kind, the group and one Arrow batch of that kind (IPC bytes, :func:`part_schema`).
    A narrow shape whatever the tables' columns: the JVM takes in, keeps and moves opaque bytes, and the rows
    of each table are made from them only for that table (:mod:`.numbering`)."""
    return "kind string, g bigint, data binary"


def _py(value):
    """A table value as a plain Python value (None for nulls, lists for arrays, int ns for times)."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.value
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_py(v) for v in value]
    if isinstance(value, dict):
        return {k: _py(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def decode_group(group: int, table, paths: list[str], ports) -> "pa.Table":
    """The group's decoded rows and numbering facts (see the module docstring) as one Arrow table. The cyclic
    garbage collector is paused meanwhile, as for a single-process read (see
    :func:`kafkalab.capture.capture.gc_paused`): the decode makes many small long-lived objects, and each
    collection would walk them all again."""
    import pyarrow as pa

    from kafkalab.capture.capture import gc_paused

    table = table.sort_by(list(_ORDER))
    n = table.num_rows
    keys = np.stack([_ints(table, name) for name in ("rank", "start", "pos")], axis=1)
    real_ns = _ints(table, "ts")
    with gc_paused():
        cap = None
        if table.column("payload").null_count == n:
            cap = _bulk(table, paths, ports)
        if cap is None:
            cap = _general(table, paths, ports)
        batches = outputs(cap, n, keys, real_ns, _connection_codes(table))
        del cap
    kinds, data = [], []
    for kind, batch in batches:
        for piece in _pieces(batch):
            kinds.append(kind)
            data.append(_packed(piece))
    out = pa.schema([("kind", pa.string()), ("g", pa.int64()), ("data", pa.binary())])
    return pa.Table.from_batches([pa.RecordBatch.from_arrays(
        [pa.array([k], pa.string()), pa.array([group], pa.int64()), _one_binary(d)], schema=out)
        for k, d in zip(kinds, data)], schema=out)


def _one_binary(buffer):
    """A binary array of one value, ``buffer``, not copied."""
    import pyarrow as pa

    offsets = pa.py_buffer(np.array([0, buffer.size], dtype=np.int32).tobytes())
    return pa.Array.from_buffers(pa.binary(), 1, [None, offsets, buffer])


def parts(table, kind: str) -> list:
    """The batches of ``kind`` held in the ``data`` column of decode rows (a table or batch, see
    :func:`output_ddl`), read without copying."""
    import pyarrow as pa

    schema = part_schema(kind)
    column = table.column("data")
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return [pa.ipc.open_stream(value.as_buffer()).read_next_batch() for chunk in chunks for value in chunk]


def _packed(piece):
    """One batch as the bytes of an Arrow IPC stream with LZ4-compressed buffers."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, piece.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_batch(piece)
    return sink.getvalue()


def part(kind: str, data: bytes):
    """One decode row's batch (``data``: its bytes as Spark gives them to the driver)."""
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(bytes(data))).read_next_batch()


# Bytes per output batch at most (about); each decode row holds one piece. Fewer, larger pieces mean fewer rows
# for the JVM to take in, keep and hand back, and fewer batches for the Python tasks to open and convert: 8 MB
# instead of 2 MB took the whole read of a 250 MB capture (8 files) from 17.1, 14.5, 16.2 and 15.7 s of CPU to
# 16.1, 13.4, 15.2 and 15.3 s (two reads each on local[1] and local[2], each run beside the other at the same
# time), the JVM's share from 10.2, 7.6, 8.0 and 8.1 s to 9.3, 7.5, 7.5 and 7.5 s (with G1 then; the session's
# collector is now the parallel one, :data:`.session.HEAP_OPTIONS`). A piece fits the 8 MB Arrow batches the JVM
# hands Python (:data:`.session.ARROW_BATCH_BYTES`).
PIECE_BYTES = 8 << 20


def _pieces(batch) -> list:
    """``batch`` as zero-copy slices of about :data:`PIECE_BYTES` bytes at most."""
    rows = max(1, int(batch.num_rows * PIECE_BYTES / max(batch.nbytes, 1)))
    return [batch.slice(at, rows) for at in range(0, batch.num_rows, rows)] or [batch]


def _connection_codes(table) -> np.ndarray:
    """Per row, a number naming its connection's two endpoints (the same both ways)."""
    import pyarrow as pa

    addresses = pa.chunked_array(table.column("src").chunks + table.column("dst").chunks).combine_chunks()
    codes = addresses.dictionary_encode().indices.to_numpy().astype(np.int64)
    n = table.num_rows
    a = codes[:n] * 65536 + _ints(table, "sport")
    b = codes[n:] * 65536 + _ints(table, "dport")
    if not n:
        return np.zeros(0, dtype=np.int64)
    low, high = np.minimum(a, b), np.maximum(a, b)
    return low * (int(high.max()) + 1) + high


def _ints(table, name: str) -> np.ndarray:
    return table.column(name).to_numpy().astype(np.int64, copy=False)


def _bulk(table, paths: list[str], ports):
    """The group decoded by the engine's bulk stages over a packet index of its payloads (None: the general
    path must read it)."""
    from kafkalab.capture.bulk import Bail, read_index
    from kafkalab.pcap.index import PacketIndex, Records, _gather

    n = table.num_rows
    length = np.concatenate([_ints(table, "len"), [len(p[4]) for p in _MARK]]).astype(np.int64)
    data, starts, tail_at = payload_buffer(paths, _ints(table, "rank"), _ints(table, "off"), length[:n], _MARK_REQUEST)
    start = np.concatenate([starts, np.full(len(_MARK), tail_at, dtype=np.int64)])
    u8 = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(0, dtype=np.uint8)
    long_enough = length >= 4
    head = np.where(long_enough, _gather(u8, np.where(long_enough, start, 0), 4), -1) if len(u8) else \
        np.full(len(length), -1)
    src, dst = _addresses(table.column("src")), _addresses(table.column("dst"))
    client, server = _ip(_MARK_CLIENT[0]), _ip(_MARK_SERVER[0])
    mark_src = [client if c else server for c, *_ in _MARK]
    mark_dst = [server if c else client for c, *_ in _MARK]
    mark_sport = [_MARK_CLIENT[1] if c else _MARK_SERVER[1] for c, *_ in _MARK]
    mark_dport = [_MARK_SERVER[1] if c else _MARK_CLIENT[1] for c, *_ in _MARK]
    total = n + len(_MARK)
    empty = np.zeros(0, dtype=np.int64)
    index = PacketIndex(
        np.arange(1, total + 1), np.arange(1, total + 1) * SECOND, np.concatenate([src, mark_src]),
        np.concatenate([_ints(table, "sport"), mark_sport]), np.concatenate([dst, mark_dst]),
        np.concatenate([_ints(table, "dport"), mark_dport]), np.concatenate([_ints(table, "seq"), [p[1] for p in _MARK]]),
        np.concatenate([_ints(table, "ack"), [p[2] for p in _MARK]]),
        np.concatenate([_ints(table, "flags"), [p[3] for p in _MARK]]), start, length, head,
        Records(empty, empty, empty, empty, empty, empty), empty)
    try:
        return read_index(index, data, ports)
    except Bail:
        return None


def _ip(name: str) -> int:
    import socket

    return int.from_bytes(socket.inet_aton(name), "big")


def _addresses(column) -> np.ndarray:
    """Dotted IPv4 addresses as integers (each distinct one converted once)."""
    encoded = column.combine_chunks().dictionary_encode()
    values = np.array([_ip(v) for v in encoded.dictionary.to_pylist()], dtype=np.int64)
    return values[encoded.indices.to_numpy().astype(np.int64)] if len(values) else np.zeros(0, dtype=np.int64)


def _general(table, paths: list[str], ports):
    """The group decoded by feeding its packets one by one (payloads held in the rows or read by offset)."""
    from kafkalab.capture.capture import read_capture

    n = table.num_rows
    rows = table.select(["ts", "src", "sport", "dst", "dport", "seq", "ack", "flags", "payload", "notes"]).to_pylist()
    held = [r["payload"] is None for r in rows]
    read = iter(payloads(paths, _ints(table, "rank")[held], _ints(table, "off")[held], _ints(table, "len")[held]))
    feed = [TcpPacket(i + 1, (i + 1) * SECOND, r["src"], r["sport"], r["dst"], r["dport"], r["seq"], r["ack"],
                      r["flags"], bytes(next(read)) if h else r["payload"],
                      r["notes"].split(NOTES_SEP) if r["notes"] else [])
            for i, (r, h) in enumerate(zip(rows, held))]
    (c, cp), (s, sp) = _MARK_CLIENT, _MARK_SERVER
    for k, (from_client, seq, ack, flags, payload) in enumerate(_MARK):
        ends = (c, cp, s, sp) if from_client else (s, sp, c, cp)
        feed.append(TcpPacket(n + 1 + k, (n + 1 + k) * SECOND, *ends, seq, ack, flags, payload, []))
    return read_capture(feed, ports)


_SCHEMAS: dict = {}


def part_schema(kind: str):
    """The Arrow schema of the batches of ``kind`` (one of :data:`KINDS`; built with pyarrow alone: a Python
    worker has no session): the tables' columns with times as int64 nanoseconds and records' order in the
    group, or the numbering facts."""
    if kind not in _SCHEMAS:
        import pyarrow as pa

        key = [("rank", pa.int64()), ("start", pa.int64()), ("pos", pa.int64())]
        strings = pa.list_(pa.string())
        facts = {"stream": [("local", pa.int64()), *key],
                 "fkey": [("local", pa.int64()), ("phase", pa.int64()), *key, ("stream", pa.int64())],
                 "topics": [("unresolved", strings), ("known", strings), ("frames", pa.int64())],
                 "nulls": [("table", pa.string()), ("column", pa.string())]}
        if kind in facts:
            fields = facts[kind]
        else:
            fields = [(c.name, pa.int64() if c.type == "time" else spec.arrow_type(c.type)) for c in spec.TABLES[kind]]
            fields += [("_order", pa.int64())] if kind == "records" else []
        _SCHEMAS[kind] = pa.schema(fields)
    return _SCHEMAS[kind]
