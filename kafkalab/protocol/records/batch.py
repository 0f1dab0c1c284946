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
:func:`encode` reuses the decoded bytes of an untouched batch and otherwise builds the batch from fields.
The records inside the batch are read and written by :mod:`.batch_records`.
"""
from __future__ import annotations

import struct

from ..errors import DecodeError, EncodeError
from . import checksum
from .batch_records import MIN_RECORD_SIZE, encode_record, read_batch_records
from .compression import Codec, codec_name, compress, decompress
from .limits import Budget
from .model import TIMESTAMP_TYPES, Record, RecordBatch, with_raw
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
        read_batch_records(rbuf, rpos, rend, count, ctx, records, diags, rtr, tr.path if tr is not None else "")
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
        read_batch_records(rbuf, rpos, rend, batch.record_count, ctx, records, diags, None, "")
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



def rewrite_base_offset(data: bytes | bytearray, base_offset: int, pos: int = 0) -> bytes | bytearray:
    """Set the base offset of the v2 batch at ``pos`` without re-encoding (it lies outside the CRC).

    A bytearray is patched in place and returned; bytes are copied.
    """
    out = data if isinstance(data, bytearray) else bytearray(data)
    struct.pack_into(">q", out, pos, base_offset)
    return out if isinstance(data, bytearray) else bytes(out)
