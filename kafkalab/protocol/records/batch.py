"""Record batches, magic 2 (KIP-98): a fixed 61-byte header, then varint-framed records (maybe compressed).

Layout: base_offset int64, batch_length int32 (bytes after this field), partition_leader_epoch int32,
magic int8, crc uint32 (CRC-32C of attributes..end), attributes int16, last_offset_delta int32,
base_timestamp int64, max_timestamp int64, producer_id int64, producer_epoch int16, base_sequence int32,
record count int32, records. base_offset, batch_length and partition_leader_epoch sit *before* the CRC'd
span on purpose: the broker rewrites them without recomputing the checksum.

:func:`decode` never raises on bad data: problems become ``diagnostics`` (and trace node diagnostics).
Without a trace it checks the header, the record count's plausibility and the CRC (C code, cheap), and
leaves the records to be decoded when first read (see ``RecordBatch`` in :mod:`.model`): most readers of
a capture want counts, offsets and CRCs, not every record.
:func:`encode` reuses the decoded bytes of an untouched batch and otherwise builds the batch from fields.
"""
from __future__ import annotations

import struct

from ..errors import DecodeError, EncodeError
from . import checksum
from .compression import Codec, codec_name, compress, decompress
from .control import decode_control, encode_control
from .limits import BUDGET_EXCEEDED, Budget
from .model import TIMESTAMP_TYPES, Record, RecordBatch, with_raw
from .primitives import (read_varint, read_varint_bytes, read_varlong, write_varint, write_varint_bytes,
                         write_varlong)
from .tracing import Trace

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
CRC_START = 21  # attributes: first byte the CRC covers
_PREFIX = struct.Struct(">qiibI")
_BODY_HEAD = struct.Struct(">hiqqqhii")
#: (name, wire type, size) of the header fields in wire order, for traces
HEADER_FIELDS = (("base_offset", "int64", 8), ("batch_length", "int32", 4), ("partition_leader_epoch", "int32", 4),
                 ("magic", "int8", 1), ("crc", "uint32", 4), ("attributes", "int16", 2),
                 ("last_offset_delta", "int32", 4), ("base_timestamp", "int64", 8), ("max_timestamp", "int64", 8),
                 ("producer_id", "int64", 8), ("producer_epoch", "int16", 2), ("base_sequence", "int32", 4),
                 ("record_count", "int32", 4))
#: Smallest possible record: length, attributes, timestamp delta, offset delta, key, value, header count.
MIN_RECORD_SIZE = 7
CODEC_MASK, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, CONTROL_BIT, DELETE_HORIZON_BIT = 0x07, 0x08, 0x10, 0x20, 0x40


def header_problem(buf, pos: int, size: int, *, max_records: int | None = None) -> str | None:
    """Why the v2 batch header at ``buf[pos:pos + size]`` cannot be stored, or None. These are the fields a
    CRC cannot vouch for (the base offset, length and magic sit before the CRC'd span; a correct CRC over
    nonsense proves nothing), checked as Kafka's LogValidator.validateBatch does: the offset range
    ``last_offset_delta + 1`` must be positive and equal the record count, and the count must fit the bytes
    (uncompressed) or ``max_records`` (compressed: known before inflating)."""
    if size < HEADER_SIZE:
        return f"batch of {size} bytes is shorter than the {HEADER_SIZE}-byte v2 header"
    head = HEADER.unpack_from(buf, pos)
    length, magic, attrs, last_delta, count = head[1], head[3], head[5], head[6], head[12]
    if magic != 2:
        return f"magic {magic} in a v2 batch"
    if length != size - 12:
        return f"batch length {length} does not match its {size - 12} bytes"
    if last_delta < 0:
        return f"last offset delta {last_delta} gives an empty or negative offset range"
    if count != last_delta + 1:
        return f"record count {count} differs from the offset range {last_delta + 1} (last offset delta)"
    codec_id = attrs & CODEC_MASK
    if codec_id > 4:
        return f"unknown compression codec {codec_id}"
    if codec_id == 0 and count * MIN_RECORD_SIZE > size - HEADER_SIZE:
        return f"record count {count} cannot fit in {size - HEADER_SIZE} bytes"
    if max_records is not None and count > max_records:
        return f"record count {count} exceeds the limit of {max_records} records per batch"
    return None


def record_timestamp(log_append_time: bool, base_timestamp: int, max_timestamp: int, delta: int) -> int:
    """KIP-32: in a LOG_APPEND_TIME batch every record's timestamp is the broker's append time, which the
    broker stores as max_timestamp (the per-record deltas stay as the producer wrote them)."""
    return max_timestamp if log_append_time else base_timestamp + delta


def decode(buf, pos: int, end: int, *, max_inflated: int, tr: Trace | None = None,
           budget: Budget | None = None) -> RecordBatch:
    """The batch in ``buf[pos:end]`` (``end`` = pos + 12 + batch_length, already known to be in ``buf``).
    ``budget`` (shared by the batches of a record set or frame) caps records and inflated bytes; a batch
    claiming more records than it allows is not decoded and says so ("budget exceeded")."""
    if budget is None:
        budget = Budget(max_inflated=max_inflated)
    raw = bytes(buf[pos:end])
    if end - pos < HEADER_SIZE:
        base_offset, length = struct.unpack_from(">qi", buf, pos)
        message = f"malformed: batch length {length} is shorter than the v2 header"
        if tr is not None:
            tr.leaf("base_offset", "int64", pos, pos + 8, base_offset)
            tr.leaf("batch_length", "int32", pos + 8, pos + 12, length)
            tr.rest("unparsed", pos + 12, end, message)
        return with_raw(RecordBatch(base_offset=base_offset, batch_length=length, crc_ok=False,
                                    diagnostics=(message,)), raw)
    head = HEADER.unpack_from(buf, pos)
    (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq, count) = head
    diags: list[str] = []
    computed = checksum.crc32c(memoryview(buf)[pos + CRC_START:end])
    if computed != crc:
        diags.append(f"CRC mismatch: expected 0x{crc:08x}, computed 0x{computed:08x}")
    codec_id = attrs & CODEC_MASK
    fits = codec_id != Codec.NONE or 0 <= count * MIN_RECORD_SIZE <= end - pos - HEADER_SIZE
    over = budget.records_problem(count) if count > 0 and fits else None     # (else: bounded by its bytes)
    if over:
        diags.append(over)
    elif tr is None and fits:
        return _lazy_batch(head, computed, raw, budget, diags)
    if tr is not None:
        p = pos
        for (name, wire_type, size), value in zip(HEADER_FIELDS, head):
            tr.leaf(name, wire_type, p, p + size, value, list(diags) if name == "crc" else None)
            p += size
    log_append = bool(attrs & TIMESTAMP_TYPE_BIT)
    control = bool(attrs & CONTROL_BIT)
    records: list[Record] = []
    rbuf, rpos, rend, rtr = None, 0, 0, None
    if over:
        if tr is not None:
            tr.rest("records", pos + HEADER_SIZE, end, over)
    else:
        rbuf, rpos, rend, rtr = _records_region(buf, pos, end, codec_id, budget, tr, diags)
    if rbuf is not None:
        ctx = (base_offset, base_ts, max_ts, log_append, control)
        _decode_records(rbuf, rpos, rend, count, ctx, records, diags, rtr, tr.path if tr is not None else "")
    batch = RecordBatch(
        base_offset=base_offset, batch_length=length, partition_leader_epoch=epoch, magic=magic, crc=crc,
        crc_ok=computed == crc, attributes=attrs, codec=codec_name(codec_id),
        timestamp_type=TIMESTAMP_TYPES[log_append], transactional=bool(attrs & TRANSACTIONAL_BIT),
        control=control, delete_horizon=bool(attrs & DELETE_HORIZON_BIT), last_offset_delta=last_delta,
        base_timestamp=base_ts, max_timestamp=max_ts, producer_id=pid, producer_epoch=pepoch,
        base_sequence=bseq, record_count=count, records=tuple(records), diagnostics=tuple(diags))
    if tr is not None:
        tr.node.diagnostics.extend(d for d in diags if not d.startswith("CRC"))
    return with_raw(batch, raw)


def _lazy_batch(head: tuple, computed: int, raw: bytes, budget: Budget, diags: list[str]) -> RecordBatch:
    """The batch with its header checked and its records left undecoded until first accessed: most readers
    of a capture want counts, offsets and CRCs, not every record (see ``RecordBatch.__getattr__``)."""
    (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq, count) = head
    log_append = bool(attrs & TIMESTAMP_TYPE_BIT)
    batch = RecordBatch(
        base_offset, length, epoch, magic, crc, computed == crc, attrs, codec_name(attrs & CODEC_MASK),
        TIMESTAMP_TYPES[log_append], bool(attrs & TRANSACTIONAL_BIT), bool(attrs & CONTROL_BIT),
        bool(attrs & DELETE_HORIZON_BIT), last_delta, base_ts, max_ts, pid, pepoch, bseq, count)
    object.__delattr__(batch, "records")
    object.__delattr__(batch, "diagnostics")
    object.__setattr__(batch, "raw", raw)
    object.__setattr__(batch, "_lazy", (_decode_later, budget, tuple(diags)))
    return batch


def _decode_later(batch: RecordBatch, budget: Budget, eager: tuple[str, ...]):
    """(records, diagnostics) of a lazily decoded batch: exactly what :func:`decode` would have produced."""
    raw = batch.raw
    attrs = batch.attributes
    diags = list(eager)
    records: list[Record] = []
    rbuf, rpos, rend, _ = _records_region(raw, 0, len(raw), attrs & CODEC_MASK, budget, None, diags)
    if rbuf is not None:
        ctx = (batch.base_offset, batch.base_timestamp, batch.max_timestamp, bool(attrs & TIMESTAMP_TYPE_BIT),
               bool(attrs & CONTROL_BIT))
        _decode_records(rbuf, rpos, rend, batch.record_count, ctx, records, diags, None, "")
    return tuple(records), tuple(diags)


def _records_region(buf, pos, end, codec_id, budget: Budget, tr, diags):
    """(buffer, start, end, trace) of the record bytes: the batch tail itself, or its inflated form (within
    what the budget still allows)."""
    start = pos + HEADER_SIZE
    if codec_id == Codec.NONE:
        return buf, start, end, tr
    dtr = tr.child("deflated", "compressed", start) if tr is not None else None
    if dtr is not None:
        dtr.end(end)
    try:
        inflated, notes = decompress(codec_id, buf[start:end], magic=2, limit=budget.inflate_limit())
    except DecodeError as exc:
        message = f"malformed: {codec_name(codec_id)} decompression failed: {exc.reason}"
        diags.append(message)
        if dtr is not None:
            dtr.note(message)
        return None, 0, 0, None
    budget.spend_inflated(len(inflated))
    diags.extend(notes)
    if dtr is None:
        return inflated, 0, len(inflated), None
    dtr.node.diagnostics.extend(notes)
    return inflated, 0, len(inflated), dtr.inflated(inflated, codec_name(codec_id), start, end)


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


def _decode_records(buf, pos, end, count, ctx, records, diags, tr, batch_path) -> None:
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


# --- encoding ---------------------------------------------------------------------------------------------

def encode(batch: RecordBatch) -> bytes:
    """Wire bytes of ``batch``: its decoded bytes when untouched, else built from its fields."""
    if batch.raw is not None:
        return batch.raw
    codec = Codec.parse(batch.codec)
    records = batch.records
    try:
        payload = compress(codec, b"".join(encode_record(r) for r in records), magic=2)
        last_delta = batch.last_offset_delta
        if last_delta is None:
            last_delta = records[-1].offset_delta if records else 0
        max_ts = batch.max_timestamp
        if max_ts is None:
            max_ts = max((batch.base_timestamp + r.timestamp_delta for r in records), default=batch.base_timestamp)
        attrs = ((batch.attributes & ~0x7F) | codec | (TIMESTAMP_TYPE_BIT if batch.timestamp_type == "log_append" else 0)
                 | (TRANSACTIONAL_BIT if batch.transactional else 0) | (CONTROL_BIT if batch.control else 0)
                 | (DELETE_HORIZON_BIT if batch.delete_horizon else 0))
        body = _BODY_HEAD.pack(attrs, last_delta, batch.base_timestamp, max_ts, batch.producer_id,
                               batch.producer_epoch, batch.base_sequence, len(records)) + payload
        return _PREFIX.pack(batch.base_offset, 9 + len(body), batch.partition_leader_epoch, 2,
                            checksum.crc32c(body)) + body
    except (struct.error, OverflowError) as exc:
        raise EncodeError(f"record batch field out of range: {exc}") from None


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


def rewrite_base_offset(data: bytes | bytearray, base_offset: int, pos: int = 0) -> bytes | bytearray:
    """Set the base offset of the v2 batch at ``pos`` without re-encoding (it lies outside the CRC).

    A bytearray is patched in place and returned; bytes are copied.
    """
    out = data if isinstance(data, bytearray) else bytearray(data)
    struct.pack_into(">q", out, pos, base_offset)
    return out if isinstance(data, bytearray) else bytes(out)
