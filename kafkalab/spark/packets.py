"""The index stage of a distributed read: one read unit (a file or a byte range of one) into the *index rows*
of its TCP segments, packed per connection: what the shuffle moves, without the payload bytes.

Owns the index row and the global order key. A row is a segment's order key ``(rank, start, pos)`` (file rank,
range start, record position in the range times :data:`POS_STEP`: sorting by it gives the order in which the single-process engine
reads the same packets, files in capture-time order, records in file order), its time, addresses, ports,
sequence and acknowledgement numbers and flags, and where its payload is: ``off``/``len`` in the file ranked
``rank``. The decode task reads the payloads of its connections from the shared files by offset
(:func:`payloads`), so the bytes cross no shuffle and no JVM/Python boundary.

What Spark sees is one *piece* per connection and unit (:func:`unit_pieces`, :data:`PIECE_DDL`): the
connection's key, its payload bytes and packets in the unit, its file's rank, and its index rows as the bytes
of one Arrow batch.
Spark never handles a row per packet: converting millions of them into its own rows, grouping and shuffling
them cost it several times the decoding itself, while a piece is a few opaque bytes per connection and unit.

The headers are read by :func:`kafkalab.pcap.index.packet_index` (numpy over the mapped file: a range is
indexed in place, after the file's head, from its start resolved by
:func:`~kafkalab.pcap.split.find_boundary` up to the first record start at or after its nominal end, where its
walk stops). A range's task also reports that walk (a row of its own, ``walk``: rank, nominal start, resolved
start, stop) for the driver's check that the ranges of each file meet. A unit the index does not read whole
(gzip, a damaged file, IPv6, VLAN tags or IP fragments among its TCP segments) is read by
:func:`kafkalab.pcap.read_packets`, the general reader (a range as the file's head followed by its records, its
walk found by :func:`~kafkalab.pcap.split.walk_end`), and its rows carry their payload and per-packet
diagnostics instead (``payload`` not null). IP fragments of one datagram that fall into two ranges are not
joined (each range's reader sees one part).
"""
from __future__ import annotations

import os
import socket

import numpy as np

from kafkalab.pcap import CaptureError, PacketDecoder, read_packets
from kafkalab.pcap.files import LinkRecord
from kafkalab.pcap.split import find_boundary, map_file, read_layout, walk_end

POS_STEP = 4        # positions in a range are record numbers times this: room for the packets of a synthetic
                    # handshake before a cut in a heavy connection (see .skew)

INDEX_COLUMNS = (("rank", "int64"), ("start", "int64"), ("pos", "int64"), ("ts", "int64"), ("src", "string"),
                 ("sport", "int64"), ("dst", "string"), ("dport", "int64"), ("seq", "int64"), ("ack", "int64"),
                 ("flags", "int64"), ("off", "int64"), ("len", "int64"), ("payload", "binary"),
                 ("notes", "string"), ("note", "string"))
NOTES_SEP = "\x1e"     # a packet's diagnostics in one string: Spark's Arrow writer, feeding Python, measures
                        # its batch after every row, and for a list column of nulls that costs the rows so far


def index_schema():
    import pyarrow as pa

    types = {"int64": pa.int64(), "string": pa.string(), "binary": pa.binary()}
    return pa.schema([(name, types[kind]) for name, kind in INDEX_COLUMNS])


KEY = ("ka_ip", "ka_port", "kb_ip", "kb_port")   # a connection: its two endpoints, the smaller (address, port) first
KEY_DDL = "ka_ip string, ka_port bigint, kb_ip string, kb_port bigint"
PIECE_DDL = f"{KEY_DDL}, packets bigint, bytes bigint, rows binary, note string, rank bigint, walk array<bigint>"


def index_unit(unit: tuple) -> tuple:
    """The unit's index rows (an Arrow batch), a batch of rows naming what was wrong in the file, and for a
    range (``start >= 0``: nominal offsets) its walk: ``(resolved start, where the walk stopped)``; the stop
    is ``-1`` when the walk does not land (see :func:`kafkalab.pcap.split.walk_end`), and then there are no
    rows, since the file will be read whole (:func:`kafkalab.pcap.split.ranges_meet`). ``None`` for a whole
    file."""
    import pyarrow as pa

    rank, path, start, end = unit
    notes: list[str] = []
    walk = None
    try:
        columns, walk = _indexed(rank, path, start, end)
    except _General as general:
        walk = general.walk
        if walk is not None and walk[1] < 0:
            columns = {"rank": []}
        else:
            columns = _general(rank, path, *(walk or (start, end)), notes, whole=walk is None)
    name = os.path.basename(path)
    return (_batch(columns), _batch({"note": pa.array([f"{name}: {note}" for note in notes], pa.string())}),
            walk)


def unit_pieces(unit: tuple) -> list:
    """The unit's index rows as pieces (one per connection, :data:`PIECE_DDL`), then a batch of rows naming
    what was wrong in the file, then for a range one row with its walk (``walk``: rank, nominal start,
    resolved start, where the walk stopped; every other column null but ``rank``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows, notes, walk = index_unit(unit)
    src, dst, sport, dport = (rows.column(name) for name in ("src", "dst", "sport", "dport"))
    src_first = pc.or_(pc.less(src, dst), pc.and_(pc.equal(src, dst), pc.less_equal(sport, dport)))
    ends = {"ka_ip": pc.if_else(src_first, src, dst), "ka_port": pc.if_else(src_first, sport, dport),
            "kb_ip": pc.if_else(src_first, dst, src), "kb_port": pc.if_else(src_first, dport, sport)}
    ends_codes = []
    for ip, port in (("ka_ip", "ka_port"), ("kb_ip", "kb_port")):
        address = ends[ip].dictionary_encode().indices.to_numpy().astype(np.int64)
        ends_codes.append(np.unique(address * 65536 + ends[port].to_numpy(), return_inverse=True)[1].reshape(-1))
    code = ends_codes[0] * (rows.num_rows + 1) + ends_codes[1]          # one number per connection
    distinct, first, which = np.unique(code, return_index=True, return_inverse=True)
    which = which.reshape(-1)
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(distinct) + 1))
    length = rows.column("len").to_numpy()
    pieces = [order[bounds[k]:bounds[k + 1]] for k in range(len(distinct))]
    columns = {name: ends[name].take(pa.array(first)) for name in KEY}
    columns["packets"] = pa.array([len(p) for p in pieces], pa.int64())
    columns["bytes"] = pa.array([int(length[p].sum()) for p in pieces], pa.int64())
    columns["rows"] = pa.array([pack(rows.take(pa.array(p))) for p in pieces], pa.binary())
    columns["rank"] = pa.array([unit[0]] * len(pieces), pa.int64())
    out = [_pieces(columns, len(pieces)),
           _pieces({"note": notes.column("note"), "rank": pa.array([unit[0]] * notes.num_rows, pa.int64())},
                   notes.num_rows)]
    if walk is not None:
        out.append(_pieces({"rank": pa.array([unit[0]], pa.int64()),
                            "walk": pa.array([[unit[0], unit[2], *walk]], pa.list_(pa.int64()))}, 1))
    return out


def _pieces(columns: dict, n: int):
    import pyarrow as pa

    schema = piece_schema()
    return pa.RecordBatch.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type)
                                       for f in schema], schema=schema)


def piece_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "bigint": pa.int64(), "binary": pa.binary(), "array<bigint>": pa.list_(pa.int64())}
    return pa.schema([(name, types[kind]) for name, kind in (c.split() for c in PIECE_DDL.split(", "))])


def pack(rows) -> bytes:
    """Index rows (a batch or table of :func:`index_schema`) as the bytes of one Arrow IPC batch."""
    import pyarrow as pa

    if isinstance(rows, pa.Table):
        rows = rows.combine_chunks().to_batches()[0] if rows.num_rows else \
            pa.RecordBatch.from_pylist([], schema=rows.schema)
    return rows.serialize().to_pybytes()


def unpack(column) -> "pa.Table":
    """The index rows packed in a column of pieces' ``rows`` (an Arrow array or chunked array), read without
    copying, as one table."""
    import pyarrow as pa

    schema = index_schema()
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    batches = [pa.ipc.read_record_batch(value.as_buffer(), schema) for chunk in chunks for value in chunk
               if value.is_valid]
    return pa.Table.from_batches(batches, schema=schema)


def _batch(columns: dict):
    import pyarrow as pa

    schema = index_schema()
    n = len(next(iter(columns.values())))
    arrays = [pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _General(Exception):
    """The unit needs the general reader (``walk``: a range's resolved start and where its walk stopped)."""

    def __init__(self, walk: tuple[int, int] | None = None):
        super().__init__()
        self.walk = walk


def _range_as_capture(path: str, start: int, end: int) -> bytes:
    """A range as a capture of its own: the file's head (see :mod:`kafkalab.pcap.split`), then the range's
    records."""
    data = map_file(path)
    return bytes(data[:read_layout(path).first_record]) + bytes(data[start:end])


def _indexed(rank: int, path: str, start: int, end: int) -> tuple[dict, tuple[int, int] | None]:
    """The unit's index rows as columns, and for a range ``(start, end)`` its walk: the range's start resolved
    to a record boundary, and the first record start at or after ``end`` (see :func:`index_unit`). The index
    walks the range's records in the mapped file itself, after reading the file's head."""
    from kafkalab.pcap.index import NotIndexable, packet_index

    with open(path, "rb") as handle:
        if handle.read(2) == b"\x1f\x8b":
            raise _General
    data = map_file(path)
    ranged = start >= 0
    if ranged:
        layout = read_layout(path)
        start = find_boundary(data, layout, start)
    try:
        index = packet_index(data, start, end) if ranged else packet_index(data)
    except NotIndexable:
        raise _General((start, walk_end(data, layout, start, end)) if ranged else None) from None
    walk = (start, index.end) if ranged else None
    if len(index.others):
        records, decoder = index.records, PacketDecoder()
        for i in index.others.tolist():
            at, stored = int(records.start[i]), int(records.stored[i])
            record = LinkRecord(i + 1, int(records.ts_ns[i]), int(records.linktype[i]), data[at:at + stored],
                                int(records.original[i]))
            if decoder.decode(record) is not None or decoder.pending_fragments():
                raise _General(walk)    # TCP the index does not read: the general reader reads the unit
    n = len(index)
    begin = max(start, 0)
    return {"rank": np.full(n, rank, dtype=np.int64), "start": np.full(n, begin, dtype=np.int64),
            "pos": (index.number - 1) * POS_STEP, "ts": index.ts_ns, "src": _dotted(index.src), "sport": index.sport,
            "dst": _dotted(index.dst), "dport": index.dport, "seq": index.seq, "ack": index.ack,
            "flags": index.flags, "off": index.payload_start, "len": index.payload_length}, walk


def _dotted(addresses: np.ndarray):
    """IPv4 addresses (integers) as dotted strings, each distinct address formatted once."""
    import pyarrow as pa

    distinct, inverse = np.unique(addresses, return_inverse=True)
    names = pa.array([socket.inet_ntoa(int(a).to_bytes(4, "big")) for a in distinct.tolist()], type=pa.string())
    return names.take(pa.array(inverse.astype(np.int64)))


def _general(rank: int, path: str, start: int, end: int, notes: list, whole: bool) -> dict:
    source = path if whole else _range_as_capture(path, start, end)
    try:
        packets = list(read_packets(source, notes))
    except CaptureError as exc:
        packets, notes[:] = [], [str(exc)]
    n = len(packets)
    return {"rank": [rank] * n, "start": [max(start, 0)] * n, "pos": list(range(0, n * POS_STEP, POS_STEP)),
            "ts": [p.ts_ns for p in packets], "src": [p.src for p in packets], "sport": [p.sport for p in packets],
            "dst": [p.dst for p in packets], "dport": [p.dport for p in packets], "seq": [p.seq for p in packets],
            "ack": [p.ack for p in packets], "flags": [p.flags for p in packets], "off": [-1] * n,
            "len": [len(p.payload) for p in packets], "payload": [bytes(p.payload) for p in packets],
            "notes": [NOTES_SEP.join(p.diagnostics) or None for p in packets]}


_MAPS: dict[tuple, object] = {}


def mapped(path: str):
    """The file mapped once per worker process, again when it changed (a worker outlives the job)."""
    info = os.stat(path)
    key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
    data = _MAPS.get(key)
    if data is None:
        for old in [k for k in _MAPS if k[0] == path]:
            del _MAPS[old]
        data = _MAPS[key] = map_file(path)
    return data


def payloads(paths: list[str], rank: np.ndarray, off: np.ndarray, length: np.ndarray) -> list[bytes]:
    """The payloads of index rows, read by offset from the shared capture files."""
    maps = {r: mapped(paths[r]) for r in set(rank.tolist())}
    return [maps[r][o:o + n] for r, o, n in zip(rank.tolist(), off.tolist(), length.tolist())]
