"""Tables beyond ``frames``: ``exchanges`` (one row per request), ``records`` (one row per record in Produce
requests and Fetch responses) and ``connections`` (one row per TCP stream). Columns per the data model;
pandas is imported lazily; dtypes are Arrow-compatible (nullable integers, strings, lists).
"""
from __future__ import annotations

from typing import Any, Iterable

from . import columns as spec
from .records_table import records_table

__all__ = ["exchanges_table", "records_table", "connections_table", "EXCHANGE_COLUMNS", "RECORD_COLUMNS",
           "CONNECTION_COLUMNS"]

PRODUCE = 0

EXCHANGE_COLUMNS = spec.names("exchanges")
RECORD_COLUMNS = spec.names("records")
CONNECTION_COLUMNS = spec.names("connections")


def _frame_index(frames) -> dict[int, Any]:
    return {f.frame: f for f in frames}


def exchanges_table(frames):
    """One row per request frame, joined with its response (null response columns when unanswered)."""
    frames = list(frames)
    by_number = _frame_index(frames)
    rows = []
    for request in frames:
        if request.kind != "request":
            continue
        response = by_number.get(request.response_frame) if request.response_frame is not None else None
        body = (request.body or {}) if request.api_key == PRODUCE else {}
        rows.append({
            "request_frame": request.frame, "response_frame": response.frame if response else None,
            "stream": request.stream, "client": request.src, "server": request.dst, "api_key": request.api_key,
            "api_name": request.api_name, "api_version": request.api_version,
            "correlation_id": request.correlation_id, "client_id": request.client_id,
            "request_time": _ns(request.ts), "response_time": _ns(response.ts) if response else None,
            "latency_ms": response.latency_ms if response else None,
            "error_code": response.error_code if response else None,
            "error": response.error if response else None,
            "request_size": request.size, "response_size": response.size if response else None,
            # acks=0 Produce: the broker sends nothing back ("no response expected", not "lost")
            "expects_response": not (request.api_key == PRODUCE and body.get("acks") == 0),
        })
    return spec.from_rows(rows, "exchanges")


def _ns(ts: float) -> int:
    """A frame's time as the tables hold it (the frames table's conversion, see spec.epoch_micros)."""
    return spec.epoch_micros(ts) * 1000


def connections_table(connections: Iterable):
    """One row per TCP stream carrying Kafka: mappings (or objects with ``row()``) with CONNECTION_COLUMNS;
    ``first_time``/``last_time`` as epoch seconds."""
    rows = [c.row() if hasattr(c, "row") else dict(c) for c in connections]
    for row in rows:
        for name in ("first_time", "last_time"):
            if row.get(name) is not None:
                row[name] = int(row[name] * 1e9)
    return spec.from_rows(rows, "connections")
