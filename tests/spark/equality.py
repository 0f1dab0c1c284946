"""Row-for-row comparison of a capture read on Spark with the single-process engine's tables."""
from __future__ import annotations


from kafkalab.dissect import columns as spec
from kafkalab.spark.decode import _py

TABLES = tuple(spec.TABLES)


def engine_rows(capture, table: str) -> list[tuple]:
    """The engine's rows with times in microseconds (Spark's timestamp resolution)."""
    frame = getattr(capture, table)
    times = {c.name for c in spec.TABLES[table] if c.type == "time"}
    rows = []
    for values in frame.itertuples(index=False, name=None):
        row = [_py(v) for v in values]
        for i, name in enumerate(frame.columns):
            if name in times and row[i] is not None:
                row[i] = row[i] // 1000
        rows.append(tuple(_plain(v) for v in row))
    return rows


def spark_rows(df, table: str) -> list[tuple]:
    """A Spark table's rows in the engine's order: sorted by frame (connections: stream; nulls first), which
    keeps each frame's records in the order their decode task gave them (the sort is stable)."""
    from pyspark.sql import functions as F

    from kafkalab.spark.numbering import SORT

    columns = [F.unix_micros(F.col(c.name)).alias(c.name) if c.type == "time" else F.col(c.name)
               for c in spec.TABLES[table]]
    rows = [tuple(_plain(_py(v)) for v in row) for row in df.select(*columns).collect()]
    at = [c.name for c in spec.TABLES[table]].index(SORT[table][0])
    return sorted(rows, key=lambda row: (row[at] is not None, row[at] or 0))


def _plain(value):
    """Spark Rows (headers' structs) and bytearrays as the engine's plain values."""
    if hasattr(value, "asDict"):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(_plain(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def assert_same_rows(spark_capture, engine_capture, tables=TABLES) -> None:
    for table in tables:
        got = spark_rows(spark_capture.table(table), table)
        want = engine_rows(engine_capture, table)
        assert len(got) == len(want), f"{table}: {len(got)} rows on Spark, {len(want)} in the engine"
        for n, (a, b) in enumerate(zip(got, want)):
            assert a == b, f"{table} row {n} differs:\nspark  {a}\nengine {b}"


__all__ = ["assert_same_rows", "engine_rows", "spark_rows"]
