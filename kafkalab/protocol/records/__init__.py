"""The Kafka record layer: legacy message sets (magic 0/1) and record batches (magic 2), any codec.

Decoding never raises on peer data: every batch object carries ``diagnostics`` and a Fetch-truncated tail
comes back as an object with ``partial=True``. Decoded objects keep their wire bytes, so re-encoding an
untouched decode is byte-identical. Module map:

* :mod:`.primitives`  - fixed-width ints and zigzag varints
* :mod:`.compression` - codec table, capped decompression (:mod:`.lz4frame` for LZ4 framing, KIP-57)
* :mod:`.limits`      - record-count caps and the per-frame budget of inflated bytes and records
* :mod:`.batch`       - magic 2 batches (header, CRC, compression); :mod:`.batch_records` - the records in them
* :mod:`.control`     - transaction markers
* :mod:`.legacy`      - magic 0/1 messages and compressed wrappers (KIP-31/KIP-32)
* :mod:`.recordset`   - whole record sets: decode, trace, encode, cheap boundary walks for the broker
* :mod:`.build`       - batches from Python values
"""
from __future__ import annotations

from .batch import rewrite_base_offset
from .build import build_batch, from_dict
from .compression import DEFAULT_MAX_INFLATED, Codec
from .limits import DEFAULT_MAX_RECORDS, Budget, set_limits
from .model import ControlRecord, LegacyMessage, Record, RecordBatch
from .recordset import BatchBounds, assign_offsets, decode_records, encode_records, iter_batches, trace_records

__all__ = ["Record", "RecordBatch", "LegacyMessage", "ControlRecord", "decode_records", "encode_records",
           "trace_records", "build_batch", "from_dict", "Codec", "DEFAULT_MAX_INFLATED", "rewrite_base_offset",
           "iter_batches", "BatchBounds", "assign_offsets", "DEFAULT_MAX_RECORDS", "Budget", "set_limits"]
