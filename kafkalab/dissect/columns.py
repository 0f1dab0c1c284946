"""The one column spec of kafkalab's tables: frames, exchanges, records, connections.

Each column has a name, a type and a meaning. Everything that makes or reads a table derives from here:
the Arrow schemas (and so Parquet files and Spark), the pandas dtypes (pandas is a view of the Arrow
columns), and the filter language's column kinds. Types are written as short names so that importing this
module costs nothing (the command line's text paths import neither pandas nor pyarrow):

``int8/int16/int32/int64`` (nullable), ``float64``, ``bool``, ``string``, ``binary``, ``time`` (UTC
timestamp, nanoseconds), ``list<string>``, ``headers`` (list of (key string, value binary) structs).
"""
from __future__ import annotations

from typing import NamedTuple


def epoch_micros(ts: float) -> int:
    """A capture time (epoch seconds as a float, as frames carry it) in whole microseconds: the one
    conversion behind every ``time`` column (frames, exchanges, Parquet) and ``Frame.time``, so that one
    instant reads the same everywhere. A float holds about a microsecond at today's dates; rounding (half to
    even, as ``numpy.round`` does for the arrays of :func:`epoch_micros_array`) recovers a pcap's µs exactly."""
    return round(ts * 1e6)


def latency_ms(seconds: float) -> float:
    """Seconds between a request and its response as the ``latency_ms`` columns carry them: milliseconds
    rounded to the nanosecond (Python's ``round``, half to even: numpy's rounding differs in the last digit
    for some values), the one conversion every reader of a capture uses."""
    return round(seconds * 1000.0, 6)


def epoch_micros_array(ts):
    """:func:`epoch_micros` over a sequence of times, as an int64 numpy array (the same values)."""
    import numpy as np

    return np.round(np.asarray(ts, dtype="float64") * 1e6).astype("int64")


class Column(NamedTuple):
    name: str
    type: str
    meaning: str


FRAMES = (
    Column("frame", "int64", "1-based number, in order of completion"),
    Column("time", "time", "when the frame's last byte was captured"),
    Column("stream", "int64", "TCP connection index, 0-based in order of first packet"),
    Column("src", "string", "sender, ip:port"),
    Column("dst", "string", "receiver, ip:port"),
    Column("kind", "string", "request or response"),
    Column("api_key", "int16", "the API's number"),
    Column("api_name", "string", "the API's name"),
    Column("api_version", "int16", "the API version"),
    Column("correlation_id", "int32", "pairs a response with its request"),
    Column("client_id", "string", "the request header's client id (copied onto the response)"),
    Column("size", "int64", "the frame's size field"),
    Column("request_frame", "int64", "the paired request's frame (on responses)"),
    Column("response_frame", "int64", "the paired response's frame (on requests)"),
    Column("latency_ms", "float64", "response time minus request time, on both rows of a pair"),
    Column("error_code", "int16", "first non-zero error code in the body, else 0"),
    Column("error", "string", "that error's name"),
    Column("topics", "list<string>", "topic names referenced"),
    Column("record_count", "int64", "records in RECORDS fields"),
    Column("summary", "string", "one line, like a packet list's Info column"),
    Column("diagnostics", "list<string>", "malformed, CRC mismatch, gap before frame, inferred version, ..."),
    Column("inferred", "bool", "api and version inferred for a response whose request was not seen"),
)

EXCHANGES = (
    Column("request_frame", "int64", "the request's frame"),
    Column("response_frame", "int64", "the response's frame (null: unanswered)"),
    Column("stream", "int64", "TCP connection index"),
    Column("client", "string", "ip:port of the requester"),
    Column("server", "string", "ip:port of the broker"),
    Column("api_key", "int16", "the API's number"),
    Column("api_name", "string", "the API's name"),
    Column("api_version", "int16", "the API version"),
    Column("correlation_id", "int32", "the request's correlation id"),
    Column("client_id", "string", "the request header's client id"),
    Column("request_time", "time", "when the request was captured"),
    Column("response_time", "time", "when the response was captured"),
    Column("latency_ms", "float64", "response time minus request time"),
    Column("error_code", "int16", "the response's first non-zero error code, else 0"),
    Column("error", "string", "that error's name"),
    Column("request_size", "int64", "the request's size field"),
    Column("response_size", "int64", "the response's size field"),
    Column("expects_response", "bool", "false for acks=0 Produce (no response expected, not lost)"),
)

RECORDS = (
    Column("frame", "int64", "the Produce request or Fetch response carrying the record"),
    Column("kind", "string", "request (produced) or response (fetched)"),
    Column("topic", "string", "the record's topic"),
    Column("partition", "int32", "the record's partition"),
    Column("offset", "int64", "absolute offset (Produce: from the paired response's base offset, else null)"),
    Column("timestamp", "time", "the record's timestamp (log append time where the batch says so)"),
    Column("timestamp_type", "string", "create or log_append"),
    Column("key", "binary", "the record key (null: none)"),
    Column("value", "binary", "the record value (null: a tombstone)"),
    Column("headers", "headers", "the record headers, in order"),
    Column("batch_base_offset", "int64", "the base offset of the record's batch"),
    Column("magic", "int8", "record format: 0 and 1 legacy messages, 2 record batches"),
    Column("codec", "string", "the batch's compression codec"),
    Column("producer_id", "int64", "idempotent/transactional producer id (-1: none)"),
    Column("producer_epoch", "int16", "that producer's epoch"),
    Column("base_sequence", "int32", "the batch's first sequence number"),
    Column("transactional", "bool", "the batch is part of a transaction"),
    Column("control", "bool", "a transaction marker, not data"),
    Column("crc_ok", "bool", "the batch's checksum matches its bytes"),
)

CONNECTIONS = (
    Column("stream", "int64", "TCP connection index"),
    Column("client", "string", "ip:port of the side that sent requests"),
    Column("server", "string", "ip:port of the broker"),
    Column("first_time", "time", "first packet"),
    Column("last_time", "time", "last packet"),
    Column("client_bytes", "int64", "TCP payload bytes sent by the client"),
    Column("server_bytes", "int64", "TCP payload bytes sent by the server"),
    Column("client_packets", "int64", "packets sent by the client"),
    Column("server_packets", "int64", "packets sent by the server"),
    Column("requests", "int64", "Kafka requests seen"),
    Column("responses", "int64", "Kafka responses seen"),
    Column("client_ids", "list<string>", "client ids used on the connection"),
    Column("gaps", "int64", "holes in the byte stream (lost segments)"),
    Column("gap_bytes", "int64", "bytes missing in those holes"),
    Column("midstream", "bool", "the capture started after the connection did"),
    Column("state", "string", "open, FIN or RST"),
)

TABLES = {"frames": FRAMES, "exchanges": EXCHANGES, "records": RECORDS, "connections": CONNECTIONS}


def names(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]


def types(table: str) -> dict[str, str]:
    return {c.name: c.type for c in TABLES[table]}


#: the filter language's kinds of value for each type
_FILTER_KINDS = {"int8": "int", "int16": "int", "int32": "int", "int64": "int", "float64": "float", "bool": "bool",
                 "string": "str", "binary": "bytes", "time": "time", "list<string>": "list", "headers": "list"}


def filter_kinds(table: str) -> dict[str, str]:
    """Column -> the filter language's kind ("int", "float", "str", "bool", "list", "time", "bytes")."""
    return {c.name: _FILTER_KINDS[c.type] for c in TABLES[table]}


def arrow_type(type_name: str):
    import pyarrow as pa

    simple = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
              "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(), "binary": pa.binary(),
              "time": pa.timestamp("ns", tz="UTC"), "list<string>": pa.list_(pa.string())}
    if type_name == "headers":
        return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    return simple[type_name]


def arrow_schema(table: str):
    """The Arrow schema of ``table`` (Parquet files and Spark use it)."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, arrow_type(c.type)) for c in TABLES[table]])


_PANDAS = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64", "string": "string"}


def pandas_dtype(type_name: str):
    """The pandas dtype a column of ``type_name`` is shown with: nullable integers, ``string``, numpy
    ``bool``/``float64``, ``datetime64[ns, UTC]``; binary and list columns stay Arrow (``pd.ArrowDtype``)."""
    import pandas as pd

    if type_name in _PANDAS:
        return pd.api.types.pandas_dtype(_PANDAS[type_name])
    if type_name in ("binary", "headers"):
        return pd.ArrowDtype(arrow_type(type_name))
    return None                 # numpy dtypes; list<string>: Python lists in an object column


def to_pandas(arrow_table, table: str):
    """The pandas view of an Arrow table of ``table``'s spec."""
    return columns_to_pandas(list(arrow_table.columns), table)


def shared_lists(values) -> list:
    """``values`` (a sequence of lists of strings) with equal lists as one list object, made here (never one of the
    given lists, which may be a Frame's own).

    Why: a capture's frames name the same few topics again and again and most have no diagnostics, so a
    table of a million frames would otherwise hold two million small lists, which every full garbage
    collection walks for as long as the table lives (about 0.1 s per collection for 100k frames; the
    interpreter makes such collections at exit too). A table's list cells are values to read, as with any
    pandas object column: copy one before changing it. A list given for several values (as a reader may
    share them) is looked at once."""
    seen: dict[tuple, list] = {}
    given: dict[int, list] = {}                 # id of a given list -> its shared list (all alive here)
    get, get_given = seen.get, given.get
    empty: list = []
    out = []
    append = out.append
    for value in values:
        if not value:
            append(empty)
            continue
        one = get_given(id(value))
        if one is None:
            key = tuple(value)
            one = get(key)
            if one is None:
                one = seen[key] = list(key)
            given[id(value)] = one
        append(one)
    return out


def columns_to_pandas(arrays: list, table: str):
    """The pandas view of ``table`` from its Arrow columns (arrays or chunked arrays, in the spec's order).
    ``arrays`` is emptied as the columns are converted: where a view copies (integers, times), the Arrow
    column is let go as soon as its copy is made."""
    import pandas as pd

    data = {}
    for c in TABLES[table]:
        data[c.name] = arrow_to_pandas(arrays.pop(0), c.type)
    return pd.DataFrame(data, columns=names(table), copy=False)


def arrow_to_pandas(column, type_name: str):
    """The pandas view (a Series) of one Arrow column of ``type_name``."""
    import pandas as pd
    import pyarrow as pa

    if type_name == "list<string>":
        return pd.Series(column.to_pylist(), dtype=object)
    dtype = pandas_dtype(type_name)
    mapping = {column.type: dtype}.get if dtype is not None else None
    series = pa.table({"c": column}).to_pandas(types_mapper=mapping, split_blocks=True, use_threads=False)["c"]
    if type_name == "bool" and series.dtype != bool:
        series = series.fillna(False).astype(bool)
    elif type_name == "time" and not len(series):
        series = pd.to_datetime(series, utc=True)
    return series.rename(None)


_NUMPY = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "float64": "float64",
          "bool": "bool", "time": "int64"}


def numpy_dtype(type_name: str) -> str:
    """The numpy dtype holding a number, flag or time column's values (times: nanoseconds since the epoch)."""
    return _NUMPY[type_name]


def numpy_to_pandas(values, valid, type_name: str):
    """The pandas view of a column held as a numpy array of :func:`numpy_dtype` and a validity array (None:
    no nulls), using ``values`` itself (not a copy; null times are overwritten with NaT)."""
    import numpy as np
    import pandas as pd

    if type_name in _PANDAS:
        mask = np.zeros(len(values), dtype=bool) if valid is None else ~valid
        return pd.Series(pd.arrays.IntegerArray(values, mask, copy=False), copy=False)
    if type_name == "time":
        if valid is not None:
            values[~valid] = np.iinfo(np.int64).min            # NaT
        return pd.Series(values.view("datetime64[ns]"), copy=False).dt.tz_localize("UTC")
    if type_name == "bool" and valid is not None:
        values = values & valid
    return pd.Series(values, copy=False)


def from_rows(rows: list[dict], table: str):
    """The pandas view of ``table`` built from row mappings (times as datetimes or nanoseconds since the
    epoch, nulls as None)."""
    import pyarrow as pa

    arrays = [pa.array([row.get(c.name) for row in rows], type=arrow_type(c.type)) for c in TABLES[table]]
    return to_pandas(pa.Table.from_arrays(arrays, schema=arrow_schema(table)), table)
