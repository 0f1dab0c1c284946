"""How the codec hands RECORDS fields to the record-batch layer.

The codec reads a RECORDS field's length prefix itself; the bytes inside belong to ``protocol.records``.
Three modes: ``"batches"`` decodes them into batch objects (the default, what users and the dissector want),
``"heads"`` into batch headers where the set is regular (what counting records needs, see
``records.recordset.batch_heads``), ``"raw"`` keeps the bytes as they are (what the broker wants: it stores
and serves batches without re-encoding them): a memoryview into the frame (read-only unless the caller
passed a writable view), so nothing is copied until someone reads the records. Encoding accepts either form.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class RecordsHooks:
    decode: Callable[[bytes], Any]
    trace: Callable[..., None]
    encode: Callable[[Any], bytes | None]


def _decode_batches(data: bytes):
    if not data:
        return []                   # what decode_records gives for no bytes (empty Fetch partitions: common)
    global _decode_records
    if _decode_records is None:
        from ..records import decode_records as _decode_records
    return _decode_records(data)


_decode_records = None              # records.decode_records, imported on first use (records imports the codec)


def _batch_heads(data: bytes):
    global _heads
    if _heads is None:
        from ..records.recordset import batch_heads as _heads
    return _heads(data)


_heads = None                       # records.recordset.batch_heads, imported on first use


def _trace(data: bytes, node, base: int, path: str) -> None:
    from ..records import trace_records
    trace_records(data, node, base, path)


def _encode(value) -> bytes | None:
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        return None if value is None else bytes(value)
    from ..records import encode_records
    return encode_records(value)


RECORDS_HOOKS = {
    "batches": RecordsHooks(_decode_batches, _trace, _encode),
    "raw": RecordsHooks(memoryview, _trace, _encode),
    "heads": RecordsHooks(_batch_heads, _trace, _encode),
}
