"""One column spec (``kafkalab.dissect.columns``) and every table, schema and column kind agreeing with it.

The tables of a real capture (frames, exchanges, records, connections) have exactly the spec's columns in
its order, with the pandas dtypes it names; their Arrow forms and the Parquet file of the streaming writer
carry the spec's Arrow schema; the filter language knows every frames column with the kind its type gives.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from kafkalab.capture import read_capture
from kafkalab.dissect import columns as spec
from kafkalab.dissect.filter import COLUMN_KINDS
from kafkalab.dissect.frames_table import frames_arrow

CAPTURE = Path(__file__).resolve().parents[1] / "captures" / "produce-consume-gzip.pcap"


@pytest.fixture(scope="module")
def capture():
    return read_capture(CAPTURE, progress=False)


def expected_dtype(type_name: str):
    return {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64", "float64": "float64",
            "bool": "bool", "string": "string", "time": "datetime64[ns, UTC]", "list<string>": "object"
            }.get(type_name)


@pytest.mark.parametrize("table", list(spec.TABLES))
def test_every_table_has_the_spec_columns_and_dtypes(capture, table: str) -> None:
    frame = getattr(capture, table)
    assert list(frame.columns) == spec.names(table)
    assert len(frame) > 0
    for column in spec.TABLES[table]:
        dtype = frame[column.name].dtype
        wanted = expected_dtype(column.type)
        if wanted is None:                                  # binary, headers: Arrow columns seen by pandas
            assert isinstance(dtype, pd.ArrowDtype) and dtype.pyarrow_dtype == spec.arrow_type(column.type)
        else:
            assert dtype == pd.api.types.pandas_dtype(wanted), (table, column.name, dtype)


def test_the_records_table_is_a_view_of_arrow_columns(capture) -> None:
    from kafkalab.dissect.records_table import records_arrow

    arrow = records_arrow(capture.frame_list)
    assert arrow.schema == spec.arrow_schema("records")
    records = capture.records
    assert arrow.column("value").to_pylist() == list(records["value"])
    assert all(isinstance(h["key"], str) and isinstance(h["value"], (bytes, type(None)))
               for hs in records["headers"] for h in hs)


def test_the_records_tables_columns_can_be_changed_in_place() -> None:
    """The records table's numbers and times are the reader's own arrays (no copy from Arrow): a user may
    still set values in them, as in any pandas table, and the Arrow form of a new read is not affected."""
    from kafkalab.dissect.records_table import records_arrow

    records = read_capture(CAPTURE, progress=False).records
    records.loc[0, "frame"] = 999
    records.loc[1, "offset"] = None
    records.loc[2, "timestamp"] = None
    records.loc[3, "topic"] = "renamed"
    assert records["frame"].iloc[0] == 999 and records["offset"].isna().iloc[1]
    assert records["timestamp"].isna().iloc[2] and records["topic"].iloc[3] == "renamed"
    fresh = read_capture(CAPTURE, progress=False)
    assert records_arrow(fresh.frame_list).column("frame")[0].as_py() != 999


def test_frames_arrow_and_parquet_carry_the_spec_schema(capture, tmp_path) -> None:
    import pyarrow.parquet as pq

    from kafkalab.capture import write_frames

    assert frames_arrow(capture.frame_list).schema == spec.arrow_schema("frames")
    out = tmp_path / "frames.parquet"
    write_frames(CAPTURE, out, progress=False)
    assert pq.read_schema(out).remove_metadata() == spec.arrow_schema("frames")


def test_the_filter_language_knows_every_frames_column_by_its_type() -> None:
    kinds = {"int16": "int", "int32": "int", "int64": "int", "float64": "float", "bool": "bool", "string": "str",
             "time": "time", "list<string>": "list"}
    for column in spec.FRAMES:
        assert COLUMN_KINDS[column.name] == kinds[column.type]


def test_every_column_has_a_meaning_and_a_known_type() -> None:
    for table, columns in spec.TABLES.items():
        assert len({c.name for c in columns}) == len(columns), table
        for column in columns:
            assert column.meaning and isinstance(spec.arrow_type(column.type), pa.DataType)
