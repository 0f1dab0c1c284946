"""``spark.read.format("kafkalab")``: kafkalab's tables through PySpark's Python Data Source API.

``register(spark)``, then ``spark.read.format("kafkalab").option("table", "frames").option("ports",
"9092,19092").load(paths)`` (files, globs, directories; several files are one capture). The schema is the one
column spec's (:mod:`kafkalab.dissect.columns`), times as microsecond timestamps.

Why the data source is not the distributed reader: a Python ``DataSourceReader`` plans its partitions on the
driver side and reads each in a task, with no shuffle in between, while exact rows need one (both directions
of every connection in one task, then numbering across all of them). So the data source decodes with the
single-process engine while planning (the capture's rows are the engine's by construction) and serves them
in partitions of :data:`ROWS_PER_PARTITION`; for captures beyond one machine use
:func:`kafkalab.spark.read_capture`, which shuffles index rows by connection group (see :mod:`.pipeline`).
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkalab.dissect import columns as spec

from .pipeline import spark_schema

ROWS_PER_PARTITION = 50_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_ports(text: str | None) -> list[int]:
    """``"9092,19092"`` -> [9092, 19092] (ValueError naming the bad item)."""
    ports = []
    for item in (text or "").replace(" ", "").split(","):
        if item:
            if not item.isdigit() or not 0 < int(item) < 65536:
                raise ValueError(f"not a TCP port: {item!r}")
            ports.append(int(item))
    return ports


def _paths(options) -> list[str]:
    if options.get("paths"):
        return list(json.loads(options["paths"]))
    if options.get("path"):
        return [options["path"]]
    raise ValueError("kafkalab data source: name the capture files, e.g. .load('capture.pcap')")


def _table(options) -> str:
    table = options.get("table", "frames")
    if table not in spec.TABLES:
        raise ValueError(f"kafkalab data source: table must be one of {', '.join(spec.TABLES)}, not {table!r}")
    return table


class KafkalabDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafkalab"

    def schema(self):
        return spark_schema(_table(self.options))

    def reader(self, schema) -> DataSourceReader:
        return _Reader(_table(self.options), _paths(self.options), parse_ports(self.options.get("ports")))


class _Rows(InputPartition):
    def __init__(self, rows: list[tuple]) -> None:
        super().__init__(len(rows))
        self.rows = rows


class _Reader(DataSourceReader):
    def __init__(self, table: str, paths: list[str], ports: list[int]) -> None:
        self.table, self.paths, self.ports = table, paths, ports

    def partitions(self):
        from kafkalab.capture.capture import read_capture
        from kafkalab.spark.decode import _py
        from kafkalab.spark.plan import plan

        files = plan(self.paths).files
        capture = read_capture(files if len(files) > 1 else files[0], self.ports)
        times = [c.type == "time" for c in spec.TABLES[self.table]]
        rows = [tuple(_time(v) if t else v for v, t in zip(map(_py, values), times))
                for values in getattr(capture, self.table).itertuples(index=False, name=None)]
        pieces = [rows[k:k + ROWS_PER_PARTITION] for k in range(0, len(rows), ROWS_PER_PARTITION)]
        return [_Rows(piece) for piece in pieces] or [_Rows([])]

    def read(self, partition):
        yield from partition.rows


def _time(nanoseconds):
    return None if nanoseconds is None else _EPOCH + timedelta(microseconds=nanoseconds // 1000)


def register(spark) -> None:
    """Make ``spark.read.format("kafkalab")`` available in ``spark``."""
    spark.dataSource.register(KafkalabDataSource)
