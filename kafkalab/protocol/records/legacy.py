"""Legacy message sets, magic 0 and 1 (Kafka < 0.11), including compressed wrapper messages.

A message: offset int64, message_size int32, crc uint32 (CRC-32/zlib of magic..end), magic int8,
attributes int8 (codec in bits 0-2, timestamp type in bit 3 for magic 1), timestamp int64 (magic 1 only),
key and value as int32-length nullable bytes. A *compressed* message is a wrapper: its value is a whole
message set compressed with the codec, and the inner messages carry the real keys and values. Compression
does not nest (the broker rejects it), so inner wrappers are reported, not inflated.
"""
from __future__ import annotations

import struct
import zlib

from ..errors import DecodeError, EncodeError
from .compression import Codec, codec_name, compress, decompress
from .limits import BUDGET_EXCEEDED, Budget
from .model import TIMESTAMP_TYPES, LegacyMessage, Record, with_raw
from .primitives import read_int32_bytes, write_int32_bytes
from .tracing import Trace

_HEAD = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
#: Smallest message_size: crc + magic + attributes + key length + value length (+ timestamp for magic 1).
MIN_MESSAGE_SIZE = {0: 14, 1: 22}
CODEC_MASK, TIMESTAMP_TYPE_BIT = 0x07, 0x08


def inner_offsets(magic: int, wrapper_offset: int, offsets: list[int]) -> list[int]:
    """Absolute offsets of the messages inside a compressed wrapper.

    KIP-31: from magic 1 the inner offsets are relative (0..n-1, assigned by the producer) and the wrapper's
    offset is the absolute offset of the *last* inner message, so the broker need not recompress to assign
    offsets. Magic 0 inner messages carry absolute offsets themselves.
    """
    if magic == 0 or not offsets:
        return list(offsets)
    return [wrapper_offset - offsets[-1] + o for o in offsets]


def inner_timestamp(wrapper_log_append: bool, wrapper_timestamp: int | None, own: int | None) -> int | None:
    """KIP-32: when a magic 1 wrapper says LOG_APPEND_TIME, its timestamp (set by the broker) applies to
    every inner message; with CREATE_TIME the inner messages keep their own."""
    return wrapper_timestamp if wrapper_log_append else own


def decode(buf, pos: int, end: int, *, max_inflated: int, tr: Trace | None = None,
           nested: bool = False, budget: Budget | None = None) -> LegacyMessage:
    """The message in ``buf[pos:end]``; ``end`` = pos + 12 + message_size lies inside ``buf``. ``budget``
    (shared by a record set or frame) caps inflated bytes and the messages a wrapper may hold."""
    if budget is None:
        budget = Budget(max_inflated=max_inflated)
    raw = bytes(buf[pos:end])
    offset, size, crc, magic, attrs = _HEAD.unpack_from(buf, pos)
    diags: list[str] = []
    if size < MIN_MESSAGE_SIZE[magic]:
        message = f"malformed: message size {size} is shorter than a magic {magic} message"
        if tr is not None:
            tr.leaf("offset", "int64", pos, pos + 8, offset)
            tr.leaf("message_size", "int32", pos + 8, pos + 12, size)
            tr.rest("unparsed", pos + 12, end, message)
            tr.note(message)
        return with_raw(LegacyMessage(offset=offset, message_size=size, magic=magic, crc_ok=False,
                                      diagnostics=(message,)), raw)
    computed = zlib.crc32(buf[pos + 16:end])
    if computed != crc:
        diags.append(f"CRC mismatch: expected 0x{crc:08x}, computed 0x{computed:08x}")
    p = pos + 18
    timestamp = None
    if magic == 1:
        (timestamp,) = struct.unpack_from(">q", buf, p)
        p += 8
    if tr is not None:
        fields = [("offset", "int64", 8, offset), ("message_size", "int32", 4, size),
                  ("crc", "uint32", 4, crc), ("magic", "int8", 1, magic), ("attributes", "int8", 1, attrs)]
        if magic == 1:
            fields.append(("timestamp", "int64", 8, timestamp))
        q = pos
        for name, wire_type, width, value in fields:
            tr.leaf(name, wire_type, q, q + width, value, list(diags) if name == "crc" else None)
            q += width
    codec_id = attrs & CODEC_MASK
    log_append = magic == 1 and bool(attrs & TIMESTAMP_TYPE_BIT)
    key = value = None
    inner: tuple[LegacyMessage, ...] = ()
    records: tuple[Record, ...] = ()
    try:
        key, k_end = read_int32_bytes(buf, p, end)
        value, v_end = read_int32_bytes(buf, k_end, end)
    except DecodeError as exc:
        diags.append(f"malformed: {exc.reason}")
        if tr is not None:
            tr.rest("unparsed", p, end, f"malformed: {exc.reason}")
    else:
        if tr is not None:
            _trace_int32_bytes(tr, "key", p, k_end, key)
            tr.leaf("value_length", "int32", k_end, k_end + 4, -1 if value is None else v_end - k_end - 4)
        if codec_id == Codec.NONE:
            if tr is not None:
                tr.leaf("value", "bytes", k_end + 4, v_end, value)
            records = (Record(key=key, value=value, timestamp=timestamp, offset=offset, attributes=attrs),)
        else:
            inner = _decode_wrapped(buf, k_end + 4, v_end, value, codec_id, magic, budget, nested, diags, tr)
            records = _wrapped_records(magic, offset, log_append, timestamp, inner)
        if v_end < end:
            message = f"malformed: {end - v_end} bytes after the message value"
            diags.append(message)
            if tr is not None:
                tr.rest("trailing", v_end, end, message)
    if tr is not None:
        tr.node.diagnostics.extend(d for d in diags if not d.startswith("CRC"))
    msg = LegacyMessage(offset=offset, message_size=size, crc=crc, crc_ok=computed == crc, magic=magic,
                        attributes=attrs, codec=codec_name(codec_id), timestamp_type=TIMESTAMP_TYPES[log_append],
                        timestamp=timestamp, key=key, value=value, inner=inner, records=records,
                        diagnostics=tuple(diags))
    return with_raw(msg, raw)


def validate(buf, pos: int, end: int, *, max_inflated: int, max_records: int) -> tuple[str | None, int]:
    """(problem or None, record count) of the message at ``buf[pos:end]``, checked the way a broker must
    before storing it, without building a single record: framing, magic, its CRC and, for a compressed
    wrapper, the CRC, magic and framing of every inner message (which the outer CRC does not vouch for: it
    was computed over the compressed bytes). Inflation is capped by ``max_inflated`` and the walk stops past
    ``max_records`` messages, so a small wrapper of a million tiny messages costs one capped inflate."""
    offset, size, crc, magic, attrs = _HEAD.unpack_from(buf, pos)
    if magic not in (0, 1) or size < MIN_MESSAGE_SIZE[magic] or size != end - pos - 12:
        return f"message of magic {magic} and size {size} is malformed", 0
    if zlib.crc32(memoryview(buf)[pos + 16:end]) != crc:
        return "message CRC mismatch", 0
    codec_id = attrs & CODEC_MASK
    if codec_id == Codec.NONE:
        return None, 1
    try:
        key, k_end = read_int32_bytes(buf, pos + 18 + (8 if magic == 1 else 0), end)
        value, v_end = read_int32_bytes(buf, k_end, end)
        if value is None or v_end != end:
            return "compressed message without a value or with trailing bytes", 0
        inflated, _ = decompress(codec_id, value, magic=magic, limit=max_inflated)
    except DecodeError as exc:
        return f"compressed message: {exc.reason}", 0
    return _validate_inner(inflated, magic, max_records)


def renumber_wrapper(chunk, first: int, *, max_inflated: int) -> tuple[bytes, int]:
    """A validated magic 0 compressed wrapper with its inner messages numbered from ``first``: (bytes, next
    offset). Magic 0 inner offsets are absolute and sit inside the compressed value, so the broker must
    recompress (as Kafka does); the inner offsets lie outside the inner CRCs, so they are patched in the
    inflated bytes without decoding a message."""
    _, _, _, magic, attrs = _HEAD.unpack_from(chunk, 0)
    codec_id = attrs & CODEC_MASK
    key, k_end = read_int32_bytes(chunk, 18, len(chunk))
    value, _ = read_int32_bytes(chunk, k_end, len(chunk))
    inflated = bytearray(decompress(codec_id, value, magic=magic, limit=max_inflated)[0])
    pos = count = 0
    while pos + 12 <= len(inflated):
        struct.pack_into(">q", inflated, pos, first + count)
        pos += 12 + struct.unpack_from(">i", inflated, pos + 8)[0]
        count += 1
    if not count:
        return bytes(chunk), first + 1
    body = struct.pack(">bb", magic, attrs) + write_int32_bytes(key) + \
        write_int32_bytes(compress(Codec(codec_id), bytes(inflated), magic=magic))
    return struct.pack(">qiI", first + count - 1, len(body) + 4, zlib.crc32(body)) + body, first + count


def _validate_inner(buf: bytes, magic: int, max_records: int) -> tuple[str | None, int]:
    pos, end, count = 0, len(buf), 0
    while pos < end:
        if end - pos < 12 + MIN_MESSAGE_SIZE[0]:
            return f"inner message set truncated at byte {pos}", count
        _, size, crc, inner_magic, attrs = _HEAD.unpack_from(buf, pos)
        stop = pos + 12 + size
        if inner_magic != magic or size < MIN_MESSAGE_SIZE[magic] or stop > end:
            return f"inner message {count} is malformed (magic {inner_magic}, size {size})", count
        if attrs & CODEC_MASK:
            return f"inner message {count} is compressed again (compression does not nest)", count
        if zlib.crc32(buf[pos + 16:stop]) != crc:
            return f"inner message {count} fails its CRC", count
        count += 1
        if count > max_records:
            return f"more than {max_records} messages in one compressed wrapper", count
        pos = stop
    return (None, count) if count else ("compressed message holds no messages", 0)


def _trace_int32_bytes(tr: Trace, name: str, start: int, end: int, value) -> None:
    tr.leaf(f"{name}_length", "int32", start, start + 4, -1 if value is None else end - start - 4)
    tr.leaf(name, "bytes", start + 4, end, value)


def _decode_wrapped(buf, start, end, value, codec_id, magic, budget: Budget, nested, diags, tr):
    """Inflate a wrapper's value and decode the message set inside (one level deep only)."""
    dtr = tr.child("deflated", "compressed", start) if tr is not None else None
    if dtr is not None:
        dtr.end(end)
    problem = None
    if nested:
        problem = "nested compressed message (compression does not nest)"
    elif value is None:
        problem = "malformed: compressed message without a value"
    if problem is None:
        try:
            inflated, notes = decompress(codec_id, value, magic=magic, limit=budget.inflate_limit())
            budget.spend_inflated(len(inflated))
        except DecodeError as exc:
            problem = f"malformed: {codec_name(codec_id)} decompression failed: {exc.reason}"
    if problem is not None:
        diags.append(problem)
        if dtr is not None:
            dtr.note(problem)
        return ()
    diags.extend(notes)
    itr = None
    if dtr is not None:
        dtr.node.diagnostics.extend(notes)
        itr = dtr.inflated(inflated, codec_name(codec_id), start, end)
    return tuple(decode_inner_set(inflated, magic, budget, diags, itr, tr.path if tr else ""))


def decode_inner_set(buf, magic: int, budget: Budget, diags: list[str], tr: Trace | None, path: str):
    """The messages inside a wrapper; a cut-off tail here is data corruption, not a Fetch boundary. Past the
    budget's record or node limits the rest is reported, not decoded."""
    pos, end, i = 0, len(buf), 0
    while pos < end:
        over = budget.records_problem(1) if i < budget.max_records else \
            f"{BUDGET_EXCEEDED}: more than {budget.max_records} messages in one wrapper"
        if over is None and tr is not None and tr.exhausted():
            over = f"{BUDGET_EXCEEDED}: tree node limit reached, inner messages {i}.. not annotated"
        if over:
            diags.append(over)
            if tr is not None:
                tr.rest("undecoded", pos, end, over)
            return
        mpath = f"{path}.inner[{i}]"
        mtr = tr.child(f"inner[{i}]", "message", pos, path=mpath) if tr is not None else None
        size = struct.unpack_from(">i", buf, pos + 8)[0] if end - pos >= 17 else None
        if size is None or size < MIN_MESSAGE_SIZE[0] or pos + 12 + size > end:
            message = f"malformed: inner message set truncated or garbled at byte {pos}"
            diags.append(message)
            if mtr is not None:
                mtr.rest("unparsed", pos, end, message)
                mtr.end(end)
            return
        inner_magic = buf[pos + 16]
        if inner_magic != magic:
            message = f"malformed: inner message magic {inner_magic} differs from wrapper magic {magic}"
            diags.append(message)
            if mtr is not None:
                mtr.rest("unparsed", pos, end, message)
                mtr.end(end)
            return
        msg = decode(buf, pos, pos + 12 + size, max_inflated=budget.max_inflated, tr=mtr, nested=True,
                     budget=budget)
        diags.extend(f"inner[{i}]: {d}" for d in msg.diagnostics)
        if mtr is not None:
            mtr.end(pos + 12 + size)
        yield msg
        pos += 12 + size
        i += 1


def _wrapped_records(magic, wrapper_offset, log_append, wrapper_ts, inner) -> tuple[Record, ...]:
    offsets = inner_offsets(magic, wrapper_offset, [m.offset for m in inner])
    return tuple(Record(key=m.key, value=m.value, offset=o, attributes=m.attributes,
                        timestamp=inner_timestamp(log_append, wrapper_ts, m.timestamp))
                 for m, o in zip(inner, offsets))


# --- encoding ---------------------------------------------------------------------------------------------

def encode(msg: LegacyMessage) -> bytes:
    """Wire bytes of ``msg``: its decoded bytes when untouched, else built from fields (wrappers recompress
    their ``inner`` messages)."""
    if msg.raw is not None:
        return msg.raw
    if msg.magic not in (0, 1):
        raise EncodeError(f"legacy message magic must be 0 or 1, not {msg.magic}")
    codec = Codec.parse(msg.codec)
    value = msg.value
    if codec != Codec.NONE:
        value = compress(codec, b"".join(encode(m) for m in msg.inner), magic=msg.magic)
    attrs = (msg.attributes & ~0x0F) | codec
    if msg.magic == 1 and msg.timestamp_type == "log_append":
        attrs |= TIMESTAMP_TYPE_BIT
    try:
        body = struct.pack(">bb", msg.magic, attrs)
        if msg.magic == 1:
            body += struct.pack(">q", -1 if msg.timestamp is None else msg.timestamp)
        body += write_int32_bytes(msg.key) + write_int32_bytes(value)
        return struct.pack(">qiI", msg.offset, len(body) + 4, zlib.crc32(body)) + body
    except struct.error as exc:
        raise EncodeError(f"legacy message field out of range: {exc}") from None
