"""Tables beyond ``frames``: ``exchanges`` (one row per request), ``records`` (one row per record in Produce
requests and Fetch responses) and ``connections`` (one row per TCP stream). Columns per the data model;
pandas is imported lazily; dtypes are Arrow-compatible (nullable integers, strings, lists).
"""
from __future__ import annotations

from operator import attrgetter
from typing import Iterable

from kafkalab.protocol.correlation import expects_response

from . import columns as spec
from .records_table import records_table

__all__ = ["exchanges_table", "records_table", "connections_table", "EXCHANGE_COLUMNS", "RECORD_COLUMNS",
           "CONNECTION_COLUMNS"]

EXCHANGE_COLUMNS = spec.names("exchanges")
RECORD_COLUMNS = spec.names("records")
CONNECTION_COLUMNS = spec.names("connections")


def exchanges_table(frames):
    """One row per request frame, joined with its response (null response columns when unanswered)."""
    import pyarrow as pa

    frames = list(frames)
    types = spec.types("frames")
    values = dict(zip(_JOINED, zip(*map(_joined_values, frames)))) if frames else {name: () for name in _JOINED}
    columns = {name: pa.array(values[name], spec.arrow_type(types[name])) for name in _JOINED if name != "ts"}
    columns["time"] = pa.array(spec.epoch_micros_array(values["ts"]) * 1000, spec.arrow_type("time"))

    def expecting(rows):
        return [expects_response(frames[i].api_key, frames[i].body) for i in rows.tolist()]

    return spec.to_pandas(_arrow_table(exchanges_arrow(columns, expecting), "exchanges"), "exchanges")


_JOINED = ("frame", "stream", "src", "dst", "kind", "api_key", "api_name", "api_version", "correlation_id",
           "client_id", "size", "response_frame", "latency_ms", "error_code", "error", "ts")   # what the join reads
_joined_values = attrgetter(*_JOINED)


def exchanges_arrow(frames: dict, expects_response) -> dict:
    """The exchanges table's columns (name -> Arrow array) from the frames table's (name -> Arrow array, in
    frame order): a row per request, in frame order, joined with the frame its ``response_frame`` names
    (response columns null when unanswered). ``expects_response(rows)``: for the request rows (a numpy array
    of row indexes), whether each expects a response (see
    :func:`kafkalab.protocol.correlation.expects_response`).

    Why columns: a join of arrays costs next to nothing per exchange, where a row per exchange (or a Frame
    per frame) would cost more than decoding it did."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = frames["kind"]
    requests = np.flatnonzero(pc.fill_null(pc.equal(kind, "request"), False).to_numpy(zero_copy_only=False))
    row_of = rows_by_number(frames["frame"].fill_null(-1).to_numpy().astype(np.int64, copy=False))
    responses = row_of(frames["response_frame"].fill_null(-1).to_numpy().astype(np.int64, copy=False)[requests])
    answered = responses >= 0
    at_request = pa.array(requests, pa.int64())
    at_response = pa.array(np.maximum(responses, 0), pa.int64(), mask=~answered)

    def request(name):
        return frames[name].take(at_request)

    def response(name):
        return frames[name].take(at_response)

    return {
        "request_frame": request("frame"), "response_frame": response("frame"), "stream": request("stream"),
        "client": request("src"), "server": request("dst"), "api_key": request("api_key"),
        "api_name": request("api_name"), "api_version": request("api_version"),
        "correlation_id": request("correlation_id"), "client_id": request("client_id"),
        "request_time": request("time"), "response_time": response("time"), "latency_ms": response("latency_ms"),
        "error_code": response("error_code"), "error": response("error"), "request_size": request("size"),
        "response_size": response("size"),
        "expects_response": pa.array(np.asarray(expects_response(requests), dtype=bool), pa.bool_())}


def rows_by_number(number):
    """A function giving, for an int64 array of frame numbers, the rows holding them in ``number`` (each
    row's frame number), -1 for none."""
    import numpy as np

    count = len(number)
    if not count or (number[0] == 1 and number[-1] == count and bool((np.diff(number) == 1).all())):
        def row_of(wanted):
            return np.where((wanted >= 1) & (wanted <= count), wanted - 1, -1)
        return row_of
    order = np.argsort(number, kind="stable")
    ordered = number[order]

    def row_of(wanted):
        at = np.clip(np.searchsorted(ordered, wanted), 0, count - 1)
        return np.where(ordered[at] == wanted, order[at], -1)
    return row_of


def _arrow_table(columns: dict, table: str):
    """An Arrow table of ``table``'s schema from columns (name -> Arrow array), cast where the types differ."""
    import pyarrow as pa

    schema = spec.arrow_schema(table)
    return pa.Table.from_arrays([columns[f.name] if columns[f.name].type == f.type else columns[f.name].cast(f.type)
                                 for f in schema], schema=schema)


def connections_table(connections: Iterable):
    """One row per TCP stream carrying Kafka: mappings with CONNECTION_COLUMNS; ``first_time``/``last_time``
    as epoch seconds."""
    rows = [dict(c) for c in connections]
    for row in rows:
        for name in ("first_time", "last_time"):
            if row.get(name) is not None:
                row[name] = int(row[name] * 1e9)
    return spec.from_rows(rows, "connections")
