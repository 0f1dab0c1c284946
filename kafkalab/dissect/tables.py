"""Tables beyond ``frames``: ``exchanges`` (one row per request), ``records`` (one row per record in Produce
requests and Fetch responses) and ``connections`` (one row per TCP stream). Columns per the data model;
pandas is imported lazily; dtypes are Arrow-compatible (nullable integers, strings, lists).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from .facts import body_layout

PRODUCE, FETCH = 0, 1

EXCHANGE_COLUMNS = ["request_frame", "response_frame", "stream", "client", "server", "api_key", "api_name",
                    "api_version", "correlation_id", "client_id", "request_time", "response_time",
                    "latency_ms", "error_code", "error", "request_size", "response_size", "expects_response"]
RECORD_COLUMNS = ["frame", "kind", "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
                  "headers", "batch_base_offset", "magic", "codec", "producer_id", "producer_epoch",
                  "base_sequence", "transactional", "control", "crc_ok"]
CONNECTION_COLUMNS = ["stream", "client", "server", "first_time", "last_time", "client_bytes", "server_bytes",
                      "client_packets", "server_packets", "requests", "responses", "client_ids", "gaps",
                      "gap_bytes", "midstream", "state"]


def _frame_index(frames) -> dict[int, Any]:
    return {f.frame: f for f in frames}


def exchanges_table(frames):
    """One row per request frame, joined with its response (null response columns when unanswered)."""
    import pandas as pd

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
            "request_time": request.time, "response_time": response.time if response else None,
            "latency_ms": response.latency_ms if response else None,
            "error_code": response.error_code if response else None,
            "error": response.error if response else None,
            "request_size": request.size, "response_size": response.size if response else None,
            # acks=0 Produce: the broker sends nothing back ("no response expected", not "lost")
            "expects_response": not (request.api_key == PRODUCE and body.get("acks") == 0),
        })
    table = pd.DataFrame(rows, columns=EXCHANGE_COLUMNS)
    table = table.astype({"request_frame": "Int64", "response_frame": "Int64", "stream": "Int64",
                          "api_key": "Int16", "api_version": "Int16", "correlation_id": "Int32",
                          "error_code": "Int16", "request_size": "Int64", "response_size": "Int64",
                          "expects_response": bool})
    for name in ("request_time", "response_time"):
        table[name] = pd.to_datetime(table[name], utc=True)
    table["latency_ms"] = table["latency_ms"].astype("float64")
    for name in ("client", "server", "api_name", "client_id", "error"):
        table[name] = table[name].astype("string")
    return table


# ---------------------------------------------------------------- records

def _record_sets(layout, body, topic=None, partition=None, topic_ids=None
                 ) -> Iterator[tuple[str | None, int | None, list]]:
    """(topic, partition, batches) for every RECORDS field, with the nearest enclosing topic and partition
    (a topic given only by id is named through ``topic_ids``, id -> name)."""
    if not isinstance(body, dict):
        return
    for slot in layout.slots + layout.tagged:
        if slot.name not in body:
            continue
        value = body[slot.name]
        if slot.field.entity == "topicName" and isinstance(value, str):
            topic = value
        elif slot.name == "topic_id" and topic is None and topic_ids and value in topic_ids:
            topic = topic_ids[value]
        elif slot.name in ("partition_index", "index", "partition") and isinstance(value, int):
            partition = value
    for slot in layout.slots + layout.tagged:
        value = body.get(slot.name)
        if value is None:
            continue
        if slot.kind == "records" and isinstance(value, list):
            yield topic, partition, value
        elif slot.layout is not None:
            for item in ([value] if slot.kind == "struct" else value):
                yield from _record_sets(slot.layout, item, topic, partition, topic_ids)


def _base_offsets(response) -> dict[tuple[str, int], int]:
    """(topic, partition) -> base_offset from a Produce response."""
    out: dict[tuple[str, int], int] = {}
    if response is None or not response.body:
        return out
    for topic in response.body.get("responses") or []:
        for part in topic.get("partition_responses") or []:
            if part.get("error_code", 0) == 0 and part.get("base_offset", -1) >= 0:
                out[(topic.get("name"), part.get("index"))] = part["base_offset"]
    return out


def record_rows(frame, response=None) -> list[dict]:
    """Rows of the records table for one frame (a Produce request or a Fetch response)."""
    wanted = (frame.kind == "request" and frame.api_key == PRODUCE) or \
        (frame.kind == "response" and frame.api_key == FETCH)
    if not wanted or not frame.body:
        return []
    layout = body_layout(frame.api_key, frame.kind, frame.api_version)
    if layout is None:
        return []
    bases = _base_offsets(response) if frame.kind == "request" else {}
    rows = []
    for topic, partition, batches in _record_sets(layout, frame.body, topic_ids=frame.topic_ids):
        base = bases.get((topic, partition))
        index = 0
        for batch in batches:
            for record in getattr(batch, "records", ()) or ():
                if frame.kind == "request":
                    offset = base + index if base is not None else None
                else:
                    offset = record.offset
                index += 1
                rows.append(_record_row(frame, topic, partition, offset, batch, record))
    return rows


def _record_row(frame, topic, partition, offset, batch, record) -> dict:
    return {
        "frame": frame.frame, "kind": frame.kind, "topic": topic, "partition": partition, "offset": offset,
        "timestamp": record.timestamp, "timestamp_type": getattr(batch, "timestamp_type", None),
        "key": record.key, "value": record.value,
        "headers": [(k, v) for k, v in record.headers],
        "batch_base_offset": getattr(batch, "base_offset", None), "magic": getattr(batch, "magic", None),
        "codec": getattr(batch, "codec", None), "producer_id": getattr(batch, "producer_id", None),
        "producer_epoch": getattr(batch, "producer_epoch", None),
        "base_sequence": getattr(batch, "base_sequence", None),
        "transactional": bool(getattr(batch, "transactional", False)),
        "control": record.control is not None or bool(getattr(batch, "control", False)),
        "crc_ok": bool(getattr(batch, "crc_ok", True)),
    }


def records_table(frames):
    """One row per record in Produce requests (offsets from the paired response) and Fetch responses."""
    import pandas as pd

    frames = list(frames)
    by_number = _frame_index(frames)
    rows: list[dict] = []
    for frame in frames:
        response = by_number.get(frame.response_frame) if frame.response_frame is not None else None
        rows.extend(record_rows(frame, response))
    table = pd.DataFrame(rows, columns=RECORD_COLUMNS)
    table = table.astype({"frame": "Int64", "partition": "Int32", "offset": "Int64", "batch_base_offset": "Int64",
                          "magic": "Int8", "producer_id": "Int64", "producer_epoch": "Int16",
                          "base_sequence": "Int32", "transactional": bool, "control": bool, "crc_ok": bool})
    # a timestamp pandas cannot hold (past year 2262, or a corrupt batch's) is NaT, not an error
    table["timestamp"] = pd.to_datetime(table["timestamp"].astype("Int64"), unit="ms", utc=True, errors="coerce")
    for name in ("kind", "topic", "timestamp_type", "codec"):
        table[name] = table[name].astype("string")
    return table


# ---------------------------------------------------------------- connections

def connections_table(connections: Iterable):
    """One row per TCP stream carrying Kafka: mappings (or objects with ``row()``) with CONNECTION_COLUMNS;
    ``first_time``/``last_time`` as epoch seconds."""
    import pandas as pd

    rows = [c.row() if hasattr(c, "row") else dict(c) for c in connections]
    table = pd.DataFrame(rows, columns=CONNECTION_COLUMNS)
    table = table.astype({"stream": "Int64", "client_bytes": "Int64", "server_bytes": "Int64",
                          "client_packets": "Int64", "server_packets": "Int64", "requests": "Int64",
                          "responses": "Int64", "gaps": "Int64", "gap_bytes": "Int64", "midstream": bool})
    for name in ("first_time", "last_time"):
        table[name] = pd.to_datetime(table[name].astype("float64") * 1e9, unit="ns", utc=True)
    for name in ("client", "server", "state"):
        table[name] = table[name].astype("string")
    return table
