"""``read_capture(spark, paths, ports)``: a capture decoded on Spark, with the rows the single-process engine
gives (:func:`kafkalab.read_capture` on the same files as one capture).

Stages (Spark schedules and shuffles; kafkalab's own stages decode):

1. **Plan** (driver, :mod:`.plan`): files in capture-time order, cut into read units; each range is resolved to
   record boundaries by a task, and a file whose ranges do not meet exactly is read whole.
2. **Index** (a task per unit, :mod:`.packets`): the unit's TCP segments with their global order key.
3. **Group**: the distinct connections go to the driver (one small tuple each), which puts the connections of
   one client host in one group (both ends' groups are joined when the ports do not say which end is the
   client). The requests a client host made on its other connections (the last tier of inference) are then
   all in its group, and so are the Metadata responses that host's clients usually learn topic names from.
   The packets are shuffled by group.
4. **Decode** (a task per group, :mod:`.decode`): the engine over the group's packets in global order.
   If a frame names a topic id its group could not name but another group could, the facts are not local
   and the capture is decoded again as one group (exact, not parallel).
5. **Number**: stream ids by the order key of each connection's first packet (collected: one per
   connection); frame numbers by sorting the frames' keys (the completing packet's order key, then the local
   number; frames completed only at the end of the capture after all others, by stream id) with
   ``sortBy``/``zipWithIndex``; a cogroup by group rewrites every frame reference in the four tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalab.dissect import columns as spec

from .decode import decode_group
from .packets import connection_key, read_unit, resolve_unit
from .plan import TARGET_BYTES, plan

DEFAULT_PORTS = frozenset({9092, 9093, 9094})
_SORT = {"frames": ["frame"], "exchanges": ["request_frame"], "records": ["frame", "_order"],
         "connections": ["stream"]}


@dataclass
class SparkCapture:
    """The four tables of a capture as Spark DataFrames, and what was wrong with the input files."""
    frames: object
    exchanges: object
    records: object
    connections: object
    diagnostics: list[str] = field(default_factory=list)

    def table(self, name: str):
        return getattr(self, name)


def spark_type(type_name: str):
    from pyspark.sql import types as T

    simple = {"int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
              "float64": T.DoubleType(), "bool": T.BooleanType(), "string": T.StringType(),
              "binary": T.BinaryType(), "time": T.TimestampType(), "list<string>": T.ArrayType(T.StringType())}
    if type_name == "headers":
        return T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                         T.StructField("value", T.BinaryType())]))
    return simple[type_name]


def spark_schema(table: str):
    """The Spark schema of ``table`` from the one column spec (times: microsecond timestamps)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(c.name, spark_type(c.type)) for c in spec.TABLES[table]])


def _read_schema(table: str):
    """The schema rows are made in: times as int64 nanoseconds, records with their order inside a frame."""
    from pyspark.sql import types as T

    fields = [T.StructField(c.name, T.LongType() if c.type == "time" else spark_type(c.type))
              for c in spec.TABLES[table]]
    return T.StructType(fields + ([T.StructField("_order", T.LongType())] if table == "records" else []))


def group_of_connections(keys: list, ports) -> dict:
    """Connection key -> group: one group per client host (union of both ends when the ports are ambiguous)."""
    kafka = DEFAULT_PORTS | frozenset(ports or ())
    parent: dict[str, str] = {}

    def find(host: str) -> str:
        while parent.setdefault(host, host) != host:
            parent[host] = parent[parent[host]]
            host = parent[host]
        return host

    for (a, b) in keys:
        if (a[1] in kafka) == (b[1] in kafka):
            parent[find(a[0])] = find(b[0])
        else:
            find(b[0] if a[1] in kafka else a[0])
    roots = sorted({find(h) for h in parent})
    number = {root: n for n, root in enumerate(roots)}

    def client(a, b):
        if (a[1] in kafka) == (b[1] in kafka):
            return a[0]
        return b[0] if a[1] in kafka else a[0]
    return {key: number[find(client(*key))] for key in keys}


def _units(sc, units: list) -> list:
    """The read units with ranges resolved by tasks; a file whose ranges do not meet is read whole."""
    ranged = [u for u in units if u[2] >= 0]
    if not ranged:
        return units
    checks = sc.parallelize(ranged, len(ranged)).map(resolve_unit).collect()
    by_file: dict[int, list] = {}
    for unit, start, end, lands in checks:
        by_file.setdefault(unit[0], []).append((unit, start, end, lands))
    out = [u for u in units if u[2] < 0]
    for rank, parts in by_file.items():
        parts.sort(key=lambda p: p[0][2])
        meets = all(p[3] for p in parts) and all(a[2] == b[1] for a, b in zip(parts, parts[1:]))
        if meets:
            out += [(rank, unit[1], start, end) for unit, start, end, _ in parts if end > start]
        else:
            out.append((rank, parts[0][0][1], -1, -1))
    return sorted(out)


def read_capture(spark, paths, ports=None, *, target_bytes: int = TARGET_BYTES) -> SparkCapture:
    """The frames, exchanges, records and connections of the capture in ``paths`` (files, globs,
    directories; several files are one capture) as DataFrames, decoded on ``spark``."""
    sc = spark.sparkContext
    ports = sorted(set(ports or ()))
    capture_plan = plan(paths, target_bytes)
    units = _units(sc, capture_plan.units)
    width = max(1, min(len(units), sc.defaultParallelism * 2))
    read = sc.parallelize(units, len(units)).flatMap(read_unit).cache()
    facts = (read.map(lambda p: p if p[0] == "note" else ("key", connection_key(p))).distinct().collect())
    notes = sorted(text for kind, text in facts if kind == "note")
    keys = [key for kind, key in facts if kind == "key"]
    packets = read.filter(lambda p: p[0] != "note")
    groups = group_of_connections(keys, ports)
    decoded = _decode(sc, packets, groups, ports, width)
    facts = decoded.filter(lambda item: item[0] in ("topics", "stream")).collect()
    topics = [item[1:] for item in facts if item[0] == "topics"]
    known = set().union(*(k for _, k in topics)) if topics else set()
    if any(u & known for u, _ in topics) and len(set(groups.values())) > 1:
        decoded.unpersist()
        decoded = _decode(sc, packets, {key: 0 for key in keys}, ports, 1)
        facts = decoded.filter(lambda item: item[0] == "stream").collect()
    streams = [(item[1], item[2]) for item in facts if item[0] == "stream"]
    tables, sizes = _numbered(sc, decoded, streams, width)
    frames = {name: _frame(spark, tables, name, sizes, width) for name in spec.TABLES}
    read.unpersist()
    return SparkCapture(frames["frames"], frames["exchanges"], frames["records"], frames["connections"],
                        capture_plan.problems + notes)


def _decode(sc, packets, groups: dict, ports, width: int):
    bc = sc.broadcast(groups)
    return (packets.map(lambda p: (bc.value[connection_key(p)], p))
            .groupByKey(width)
            .flatMap(lambda kv: decode_group(kv[0], list(kv[1]), ports))
            .cache())


def _numbered(sc, decoded, streams: list, width: int):
    stream_ids = {local: n for n, (_, local) in enumerate(sorted(streams))}
    bc = sc.broadcast(stream_ids)

    def sort_key(item):
        phase, where, number = item[1]
        group = item[2][0]
        return (0, where, number) if phase == 0 else (1, bc.value[(group, where)], number)

    numbers = (decoded.filter(lambda item: item[0] == "fkey")
               .sortBy(sort_key, numPartitions=width)
               .zipWithIndex()
               .map(lambda pair: (pair[0][2][0], (pair[0][2][1], pair[1] + 1))))
    rows = decoded.filter(lambda item: item[0] in ("frame", "exchange", "record", "conn")) \
                  .map(lambda item: (item[1][0], (item[0], item[1], item[2])))
    tables = numbers.cogroup(rows, width).flatMap(lambda kv: _renumber(kv[0], kv[1][0], kv[1][1], bc.value))
    tables = tables.cache()
    frames = tables.filter(lambda item: item[0] == "frame").count()
    return tables, {"frame": frames, "exchange": frames, "record": frames, "conn": len(stream_ids)}


def _renumber(group, numbers, rows, stream_ids: dict) -> list:
    number = dict(numbers)

    def of(local):
        return None if local is None else number[local]
    out = []
    for kind, key, row in rows:
        row = dict(row)
        if kind == "frame":
            row["frame"], row["request_frame"], row["response_frame"] = (
                of(row["frame"]), of(row["request_frame"]), of(row["response_frame"]))
        elif kind == "exchange":
            row["request_frame"], row["response_frame"] = of(row["request_frame"]), of(row["response_frame"])
        elif kind == "record":
            row["frame"], row["_order"] = of(row["frame"]), key[2]
        row["stream"] = stream_ids[(group, row["stream"])] if "stream" in row else None
        out.append((kind, row))
    return out


_KIND = {"frames": "frame", "exchanges": "exchange", "records": "record", "connections": "conn"}


def _frame(spark, tables, name: str, sizes: dict, width: int):
    """The table's DataFrame in its order: rows range-partitioned by their first sort column, whose values
    are known to run from 0 or 1 to the table's size (no sampling job), and sorted within partitions."""
    from pyspark.sql import functions as F

    schema = _read_schema(name)
    names = schema.fieldNames()
    kind = _KIND[name]
    order = [names.index(column) for column in _SORT[name]]
    size = sizes[kind] + 1
    rdd = (tables.filter(lambda item: item[0] == kind)
           .map(lambda item: (tuple(item[1].get(names[i]) for i in order), tuple(item[1].get(n) for n in names)))
           .repartitionAndSortWithinPartitions(width, lambda key: min(width - 1, key[0] * width // size))
           .values())
    frame = spark.createDataFrame(rdd, schema)
    for column in spec.TABLES[name]:
        if column.type == "time":
            frame = frame.withColumn(column.name, F.timestamp_micros(F.expr(f"`{column.name}` div 1000")))
    return frame.drop("_order") if name == "records" else frame
