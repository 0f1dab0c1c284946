"""The records inside a v2 record batch: varint-framed, each with deltas against the batch header.

Record: length varint, attributes int8, timestamp_delta varlong, offset_delta varint, key and value as varint
length + bytes (-1 for null), a varint header count, then each header's key (UTF-8) and value the same way.
Owns: reading a batch's record bytes (already inflated) into :class:`~.model.Record` objects and writing one
record back. Reading has two paths that must agree: an untraced hot loop for regular records, and a general
path with full checks, diagnostics and trace nodes that takes over at the first record the loop will not
read. Problems become ``diagnostics``, never exceptions. The batch around the records (header, CRC,
compression, laziness) is :mod:`.batch`.
"""
from __future__ import annotations

from ..errors import DecodeError
from .control import decode_control, encode_control
from .limits import BUDGET_EXCEEDED
from .model import Record
from .primitives import (read_varint, read_varint_bytes, read_varlong, write_varint, write_varint_bytes,
                         write_varlong)
from .tracing import Trace

#: Smallest possible record: length, attributes, timestamp delta, offset delta, key, value, header count.
MIN_RECORD_SIZE = 7


def record_timestamp(log_append_time: bool, base_timestamp: int, max_timestamp: int, delta: int) -> int:
    """KIP-32: in a LOG_APPEND_TIME batch every record's timestamp is the broker's append time, which the
    broker stores as max_timestamp (the per-record deltas stay as the producer wrote them)."""
    return max_timestamp if log_append_time else base_timestamp + delta


def _decode_plain_records(buf, pos: int, end: int, count: int, ctx, records: list) -> int:
    """The untraced hot loop: records whose framing is regular (UTF-8 header keys, fewer than 64 headers,
    lengths that add up) are read inline here, one-byte varints without a call; the first record that is not stops the loop and is left,
    with everything after it, to the general path (which reports what is wrong). Returns where it stopped."""
    base_offset, base_ts, max_ts, log_append, control = ctx
    if control:
        return pos
    append = records.append
    for _ in range(count):
        if pos + MIN_RECORD_SIZE > end:
            return pos
        b = buf[pos]
        if b >= 0x80:
            length, p = read_varint(buf, pos, end)
        else:
            length, p = (b >> 1) ^ -(b & 1), pos + 1
        stop = p + length
        if length < MIN_RECORD_SIZE - 1 or stop > end:
            return pos
        attrs, b = buf[p], buf[p + 1]
        if b < 0x80:
            ts_delta, q = (b >> 1) ^ -(b & 1), p + 2
        else:
            ts_delta, q = read_varlong(buf, p + 1, stop)
        b = buf[q]
        if b < 0x80:
            offset_delta, q = (b >> 1) ^ -(b & 1), q + 1
        else:
            offset_delta, q = read_varint(buf, q, stop)
        key, q = read_varint_bytes(buf, q, stop)
        value, q = read_varint_bytes(buf, q, stop)
        if q >= stop:
            return pos
        hc = buf[q]
        q += 1
        if hc:
            if hc >= 0x80 or hc & 1:            # 64 headers or more, or a negative count: the general path
                return pos
            headers = []
            for _ in range(hc >> 1):
                hkey, q = read_varint_bytes(buf, q, stop)
                hvalue, q = read_varint_bytes(buf, q, stop)
                headers.append((hkey.decode(), hvalue))
            headers = tuple(headers)
        else:
            headers = ()
        if q != stop:
            return pos
        append(Record(key, value, headers, max_ts if log_append else base_ts + ts_delta,
                      base_offset + offset_delta, offset_delta, ts_delta, attrs - 256 if attrs > 127 else attrs,
                      None))
        pos = stop
    return pos


def read_batch_records(buf, pos, end, count, ctx, records, diags, tr, batch_path) -> None:
    """Append the ``count`` records in ``buf[pos:end]`` to ``records`` (``ctx``: base offset, base and max
    timestamps, log-append time, control batch), noting problems in ``diags`` and, with ``tr``, the trace."""
    available = end - pos
    if count < 0 or count * MIN_RECORD_SIZE > available:
        diags.append(f"malformed: record count {count} cannot fit in {available} bytes")
    if tr is None:
        start = pos
        try:
            pos = _decode_plain_records(buf, pos, end, count, ctx, records)
        except (DecodeError, UnicodeDecodeError, AttributeError, IndexError):
            records.clear()           # something irregular inside a record: let the general path say what
            pos = start
        if len(records) == count and pos == end:
            return
    _decode_records_general(buf, pos, end, count, ctx, records, diags, tr, batch_path)


def _decode_records_general(buf, pos, end, count, ctx, records, diags, tr, batch_path) -> None:
    """Records one by one with full checks and diagnostics (and the trace); continues after any records the
    plain loop already read."""
    if tr is not None:
        tr = tr.child("records", "records", pos, path=f"{batch_path}.records")
    i = len(records)
    while i < count and pos < end:
        if tr is not None and tr.exhausted():
            message = f"{BUDGET_EXCEEDED}: tree node limit reached, records {i}.. not annotated"
            diags.append(message)
            tr.rest("unannotated", pos, end, message)
            tr.end(end)
            return
        rtr = tr.child(f"records[{i}]", "record", pos, path=f"{tr.path}[{i}]") if tr is not None else None
        try:
            record, new_pos = _decode_record(buf, pos, end, ctx, diags, rtr)
        except DecodeError as exc:
            diags.append(f"malformed: record {i}: {exc.reason}")
            if rtr is not None:
                covered = rtr.node.children[-1].end - rtr.base if rtr.node.children else pos
                rtr.rest("unparsed", covered, end, f"malformed: {exc.reason}")
                rtr.end(end)
            pos = end
            break
        if rtr is not None:
            rtr.end(new_pos)
        records.append(record)
        pos = new_pos
        i += 1
    if i != count and not any(d.startswith("malformed: record") for d in diags):
        diags.append(f"malformed: record count mismatch: header says {count}, found {i}")
    if pos < end:
        message = f"malformed: {end - pos} bytes after the last record"
        diags.append(message)
        if tr is not None:
            tr.rest("trailing", pos, end, message)
    if tr is not None:
        tr.end(end)


def _decode_record(buf, pos: int, end: int, ctx, diags: list[str], tr: Trace | None):
    """One varint-framed record; raises DecodeError when its framing is unusable."""
    base_offset, base_ts, max_ts, log_append, control = ctx
    length, p = read_varint(buf, pos, end)
    stop = p + length
    if length < MIN_RECORD_SIZE - 1 or stop > end:
        raise DecodeError(f"record length {length} does not fit the {end - p} bytes left", offset=pos)
    attrs = buf[p]
    attrs = attrs - 256 if attrs > 127 else attrs
    ts_delta, q = read_varlong(buf, p + 1, stop)
    offset_delta, r = read_varint(buf, q, stop)
    key, s = read_varint_bytes(buf, r, stop)
    value, t = read_varint_bytes(buf, s, stop)
    header_count, u = read_varint(buf, t, stop)
    if tr is not None:
        tr.leaf("length", "varint", pos, p, length)
        tr.leaf("attributes", "int8", p, p + 1, attrs)
        tr.leaf("timestamp_delta", "varlong", p + 1, q, ts_delta)
        tr.leaf("offset_delta", "varint", q, r, offset_delta)
        _trace_varint_bytes(tr, "key", buf, r, s, key)
        _trace_varint_bytes(tr, "value", buf, s, t, value)
        tr.leaf("headers_count", "varint", t, u, header_count)
    if header_count < 0 or header_count * 2 > stop - u:
        raise DecodeError(f"header count {header_count} cannot fit in {stop - u} bytes", offset=t)
    headers = []
    for h in range(header_count):
        hkey, hvalue, u = _decode_header(buf, u, stop, diags, tr, h)
        headers.append((hkey, hvalue))
    headers = tuple(headers) if headers else ()
    if u != stop:
        message = f"record length says {length} bytes but its fields end {stop - u} bytes earlier"
        diags.append(f"malformed: {message}")
        if tr is not None:
            tr.rest("unparsed", u, stop, f"malformed: {message}")
    # positional arguments (field order of Record): measurably cheaper on this hot path
    record = Record(key, value, headers, record_timestamp(log_append, base_ts, max_ts, ts_delta),
                    base_offset + offset_delta, offset_delta, ts_delta, attrs,
                    _control_of(key, value, diags) if control else None)
    return record, stop


def _decode_header(buf, pos, end, diags, tr, index):
    key_bytes, p = read_varint_bytes(buf, pos, end)
    if key_bytes is None:
        raise DecodeError("null header key", offset=pos)
    try:
        key = key_bytes.decode("utf-8")
    except UnicodeDecodeError:
        key = key_bytes.decode("utf-8", "surrogateescape")  # keeps the bytes for re-encoding
        diags.append(f"header key {key_bytes!r} is not valid UTF-8")
    value, q = read_varint_bytes(buf, p, end)
    if tr is not None:
        htr = tr.child(f"headers[{index}]", "header", pos, path=f"{tr.path}.headers[{index}]")
        _trace_varint_bytes(htr, "key", buf, pos, p, key)
        _trace_varint_bytes(htr, "value", buf, p, q, value)
        htr.end(q)
    return key, value, q


def _trace_varint_bytes(tr: Trace, name: str, buf, start: int, end: int, value) -> None:
    """A varint length leaf then the data leaf (zero-width for null/empty so the path always exists)."""
    _, data_start = read_varint(buf, start, end)
    tr.leaf(f"{name}_length", "varint", start, data_start, -1 if value is None else end - data_start)
    tr.leaf(name, "bytes" if not isinstance(value, str) else "string", data_start, end, value)


def _control_of(key, value, diags):
    try:
        return decode_control(key, value)
    except DecodeError as exc:
        diags.append(f"malformed: control record: {exc.reason}")
        return None


def encode_record(record: Record) -> bytes:
    key, value = record.key, record.value
    if record.control is not None and key is None:
        key, value = encode_control(record.control)
    parts = [bytes((record.attributes & 0xFF,)), write_varlong(record.timestamp_delta),
             write_varint(record.offset_delta), write_varint_bytes(key), write_varint_bytes(value),
             write_varint(len(record.headers))]
    for hkey, hvalue in record.headers:
        parts.append(write_varint_bytes(hkey.encode("utf-8", "surrogateescape") if isinstance(hkey, str) else hkey))
        parts.append(write_varint_bytes(hvalue))
    body = b"".join(parts)
    return write_varint(len(body)) + body
