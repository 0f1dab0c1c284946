"""The numbering stage of a distributed read: the decode tasks' local frame and stream numbers made global, in
Spark SQL (no row crosses into Python again).

Stream ids follow each connection's first packet: one small fact per connection, collected and numbered on
the driver. Frame numbers follow the frames' sort keys: ``(0, order key of the completing packet, local
number)`` for frames completed by a packet, ``(1, stream id, local number)`` for those completed only at the
end of the capture; ``row_number`` over that order gives the number. Every frame and stream reference in the
four tables is then rewritten by joins on ``(group, local number)``, and each table is sorted by its key.
"""
from __future__ import annotations

from kafkalab.dissect import columns as spec

_SORT = {"frames": ["frame"], "exchanges": ["request_frame"], "records": ["frame", "_order"],
         "connections": ["stream"]}
_FRAME_REFERENCES = {"frames": ["frame", "request_frame", "response_frame"],
                     "exchanges": ["request_frame", "response_frame"], "records": ["frame"], "connections": []}


def numbered_tables(spark, decoded, streams: list, merge: bool = False) -> dict:
    """The four tables as DataFrames with global numbers (``streams``: (first packet's order key, (group,
    local stream)) for every connection: the ranges of a cut connection share its first packet's key;
    ``merge``: there are such ranges, whose connection rows are merged)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    ids = {key: n for n, key in enumerate(sorted({key for key, _ in streams}))}
    stream_ids = spark.createDataFrame([(g, local, ids[key]) for key, (g, local) in streams],
                                       "_g bigint, _local bigint, _stream bigint")
    keys = (decoded.where("kind = 'fkey'").select("g", "fkey.*")
            .join(F.broadcast(stream_ids), (F.col("g") == F.col("_g")) & (F.col("stream") == F.col("_local")), "left"))
    phase0 = F.col("phase") == 0
    order = [F.col("phase"), F.when(phase0, F.col("rank")).otherwise(F.col("_stream")),
             F.when(phase0, F.col("start")).otherwise(F.col("local")), F.col("pos"), F.col("local")]
    numbers = keys.select(F.col("g").alias("_g"), F.col("local").alias("_local"),
                          F.row_number().over(Window.orderBy(*order)).cast("bigint").alias("_number"))
    numbers = numbers.persist(StorageLevel.MEMORY_AND_DISK)
    return {name: _table(decoded, name, numbers, stream_ids, merge) for name in spec.TABLES}


def _table(decoded, name: str, numbers, stream_ids, merge: bool):
    from pyspark.sql import functions as F

    rows = decoded.where(f"kind = '{name}'").select("g", f"{name}.*")
    for column in _FRAME_REFERENCES[name]:
        rows = (rows.join(numbers, (F.col("g") == F.col("_g")) & (F.col(column) == F.col("_local")), "left")
                .withColumn(column, F.col("_number")).drop("_g", "_local", "_number"))
    if "stream" in rows.columns:
        rows = (rows.join(F.broadcast(stream_ids), (F.col("g") == F.col("_g")) & (F.col("stream") == F.col("_local")),
                          "left").withColumn("stream", F.col("_stream")).drop("_g", "_local", "_stream"))
    if merge and name == "connections":
        from .skew import merge_connections

        rows = merge_connections(rows)
    rows = rows.orderBy(*_SORT[name])
    columns = []
    for c in spec.TABLES[name]:
        column = F.col(f"`{c.name}`")
        if c.type == "time":
            column = F.timestamp_micros(F.expr(f"`{c.name}` div 1000"))
        elif c.name in ("frame", "request_frame", "response_frame", "stream"):
            from .pipeline import spark_type
            column = column.cast(spark_type(c.type))
        columns.append(column.alias(c.name))
    return rows.select(*columns)
