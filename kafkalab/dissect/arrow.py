"""Arrow arrays from Python values, built from numpy buffers.

Why not ``pyarrow.array``: it imports pandas on first use (to recognise pandas objects), which costs tens of
MiB of memory and a second of start-up; a streaming Parquet writer needs neither. These builders cover the
column types of the frames table: nullable integers, floats and booleans, UTC timestamps, strings and lists
of strings. ``None`` is null everywhere.
"""
from __future__ import annotations

from typing import Sequence


def _validity(values: Sequence):
    """(validity buffer or None, null count, boolean mask of nulls or None)."""
    import numpy as np
    import pyarrow as pa

    if None not in values:
        return None, 0, None
    mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    return pa.py_buffer(np.packbits(~mask, bitorder="little")), int(mask.sum()), mask


def numbers(values: Sequence, arrow_type, numpy_type: str):
    """Integers or floats (``numpy_type`` e.g. "int16", "float64") with ``None`` as null."""
    import numpy as np
    import pyarrow as pa

    validity, nulls, mask = _validity(values)
    if mask is None:
        data = np.array(values, dtype=numpy_type)
    else:
        data = np.array([0 if v is None else v for v in values], dtype=numpy_type)
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(data)], null_count=nulls)


def booleans(values: Sequence):
    import numpy as np
    import pyarrow as pa

    bits = np.packbits(np.array(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)], null_count=0)


def timestamps_ns(nanoseconds, arrow_type):
    """An int64 numpy array of nanoseconds since the epoch as a timestamp array of ``arrow_type``."""
    import numpy as np
    import pyarrow as pa

    data = np.ascontiguousarray(nanoseconds, dtype="int64")
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)], null_count=0)


def strings(values: Sequence):
    """UTF-8 strings (Arrow ``string``: 32-bit offsets) with ``None`` as null."""
    import numpy as np
    import pyarrow as pa

    validity, nulls, _ = _validity(values)
    encoded = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype="int64")
    np.cumsum(np.fromiter(map(len, encoded), dtype="int64", count=len(encoded)), out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        return pa.array(list(values), type=pa.string())          # > 2 GiB of text in one batch: let pyarrow cope
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [validity, pa.py_buffer(offsets.astype("int32")), pa.py_buffer(b"".join(encoded))],
                                 null_count=nulls)


def string_lists(values: Sequence):
    """Lists of strings (``None`` or a list); Arrow ``list<string>``."""
    import numpy as np
    import pyarrow as pa

    validity, nulls, _ = _validity(values)
    lengths = np.fromiter((0 if v is None else len(v) for v in values), dtype="int64", count=len(values))
    offsets = np.zeros(len(values) + 1, dtype="int32")
    np.cumsum(lengths, out=offsets[1:])
    flat = [item for v in values if v for item in v]
    child = strings(flat)
    return pa.Array.from_buffers(pa.list_(pa.string()), len(values), [validity, pa.py_buffer(offsets)],
                                 null_count=nulls, children=[child])
