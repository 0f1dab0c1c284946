"""The frames table: Frames, or rows of their values, as a pandas DataFrame or an Arrow table.

Owns: the row layout every reader hands the table builders (``ROW_FIELDS``: the frames table's columns with
``ts``, epoch seconds, in place of ``time``) and the conversion of such columns into the column spec's types
(:mod:`.columns`), in one pass per column, so that captures, the broker journal, Spark and the notebooks all
get the same table. Kept apart from :mod:`.frame` (the Frame and what describes it) because building tables
is the only part that needs numpy, pandas and pyarrow, which are imported on first use.
"""
from __future__ import annotations

from operator import attrgetter

from . import columns as spec

FRAME_COLUMNS = spec.names("frames")
ROW_FIELDS = tuple(name for name in FRAME_COLUMNS if name != "time") + ("ts",)
row_values = attrgetter(*ROW_FIELDS)     # a Frame's row: these values in this order (readers may add raw,
                                         # stream_offset, topic_ids and the decoded message after them)

INTEGER_COLUMNS = {c.name: c.type.capitalize() for c in spec.FRAMES if c.type.startswith("int")}  # "Int64"...
STRING_COLUMNS = tuple(c.name for c in spec.FRAMES if c.type == "string")
_TYPES = spec.types("frames")


def frames_table(frames):
    """The ``frames`` table: one row per Frame, FRAME_COLUMNS, Arrow-friendly dtypes. Built column by column
    from one pass over the frames (no per-row dicts), each column converted by pyarrow in one call."""
    frames = frames if isinstance(frames, list) else list(frames)
    return rows_table([row_values(f) for f in frames])


def rows_table(rows):
    """The frames table from rows: sequences holding ``ROW_FIELDS`` in that order (more items after them
    are ignored), or Frame objects."""
    rows = [r if r.__class__ in (list, tuple) else row_values(r) for r in rows]
    if rows:
        columns = dict(zip(ROW_FIELDS, zip(*rows)))
    else:
        columns = {name: () for name in ROW_FIELDS}
    return columns_table(columns)


def columns_table(columns: dict):
    """The frames table from columns: ``ROW_FIELDS`` names -> sequences of values."""
    import numpy as np
    import pandas as pd

    n = len(columns["frame"])
    data = {}
    for name in FRAME_COLUMNS:
        kind = _TYPES[name]
        if kind == "time":
            micros = spec.epoch_micros_array(columns["ts"])
            data[name] = pd.DatetimeIndex(micros.astype("datetime64[us]"), tz="UTC").as_unit("ns")
            continue
        values = columns[name]
        if name in INTEGER_COLUMNS:
            data[name] = integer_array(values, INTEGER_COLUMNS[name])
        elif name in STRING_COLUMNS:
            data[name] = string_array(values)
        elif kind == "float64":
            data[name] = float_array(values)
        elif kind == "bool":
            data[name] = np.array(values, dtype=bool)
        else:                                    # lists: topics, diagnostics
            data[name] = np.fromiter(spec.shared_lists(values), dtype=object, count=n)
    return pd.DataFrame(data, columns=FRAME_COLUMNS, copy=False)        # the arrays made here: nothing to copy



def frames_arrow(frames):
    """The frames table as a :class:`pyarrow.Table` with :func:`frames_schema` (no pandas involved): what
    streaming writers (Parquet) use, batch by batch, with the same columns and types as :func:`frames_table`."""
    import pyarrow as pa

    from . import arrow

    frames = frames if isinstance(frames, list) else list(frames)
    schema = frames_schema()
    if frames:
        columns = dict(zip(ROW_FIELDS, zip(*map(row_values, frames))))
    else:
        columns = {name: () for name in ROW_FIELDS}
    arrays = []
    for arrow_field in schema:
        name = arrow_field.name
        kind = arrow_field.type
        if _TYPES[name] == "time":
            micros = spec.epoch_micros_array(columns["ts"])
            arrays.append(arrow.timestamps_ns(micros * 1000, kind))
        elif name in INTEGER_COLUMNS:
            arrays.append(arrow.numbers(columns[name], kind, INTEGER_COLUMNS[name].lower()))
        elif name in STRING_COLUMNS:
            arrays.append(arrow.strings(columns[name]))
        elif _TYPES[name] == "float64":
            arrays.append(arrow.numbers(columns[name], kind, "float64"))
        elif _TYPES[name] == "bool":
            arrays.append(arrow.booleans(columns[name]))
        else:
            arrays.append(arrow.string_lists(columns[name]))
    return pa.Table.from_arrays(arrays, schema=schema)


def frames_schema():
    """The Arrow schema of the frames table (Parquet files written by kafkalab use it)."""
    return spec.arrow_schema("frames")


def integer_array(values, dtype: str):
    """A pandas nullable integer array (``"Int64"``, ``"Int16"``...) from Python ints and Nones."""
    import pandas as pd
    import pyarrow as pa

    try:
        arrow_type = getattr(pa, dtype.lower())()
        return pd.api.types.pandas_dtype(dtype).__from_arrow__(pa.array(values, type=arrow_type))
    except (pa.ArrowException, TypeError, ValueError, OverflowError, AttributeError):
        return pd.array(list(values), dtype=dtype)


def string_array(values):
    """A pandas ``string`` array from Python strings and Nones: pyarrow-backed, exactly what
    ``pd.array(values, dtype="string")`` gives, without its per-item checks."""
    import pandas as pd
    import pyarrow as pa

    if pd.StringDtype().storage == "pyarrow":
        try:
            return pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(values, type=pa.large_string())]))
        except (pa.ArrowException, TypeError, ValueError):
            pass
    return pd.array(list(values), dtype="string")


def float_array(values):
    """float64 numpy array, None as NaN."""
    import numpy as np
    import pyarrow as pa

    try:
        return pa.array(values, type=pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowException, TypeError, ValueError):
        return np.array([np.nan if v is None else v for v in values], dtype="float64")
