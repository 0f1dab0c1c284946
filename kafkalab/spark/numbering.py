"""The numbering stage of a distributed read: the decode tasks' local frame and stream numbers made global.

Stream ids follow each connection's first packet: one small fact per connection, collected and numbered on the
driver. Frame numbers follow the frames' sort keys: ``(0, order key of the completing packet, local number)`` for
frames completed by a packet, ``(1, stream id, local number)`` for those completed only at the end of the capture,
then the group (a tiebreak only: the order is total, so a recomputed sort agrees). A capture of up to
:data:`ONE_TASK_FRAMES` frames (the decode tasks report how many) has its narrow key rows sorted and numbered by
one Python task (:func:`_one_task_lookups`). A larger one has them sorted over range partitions (as many as decode
tasks, at least one per core) and kept; each partition's rows are counted, only those counts reach the driver
(one number per partition, however many frames), and a row's number is its partition's first number plus its
place in the partition, in Spark SQL (:func:`frame_numbers`), so that no task holds every key row: serial for a
chatty capture's tens of millions of frames. The parallel way costs more jobs (the sort's sampling, the counts)
and more CPU on two cores: on ``local[2]``, where a window over the whole order in one task took 1.0-1.1 s wall
and 1.4-1.5 s CPU on a 50 MB chatty capture (92,000 frames) and 2.8 s and 3.5 s on a 500 MB one (913,000
frames), the parallel way took 1.4-1.5 s and 2.1-2.5 s, and 3.9-4.2 s and 7.2-7.5 s; what it buys is a step that
spreads over a cluster's cores as the frames grow.

The tables' rows are never shuffled, nor joined: the frame numbers are gathered per group into one narrow
row (the group and an int64 array indexed by local number, :func:`_group_lookup`), which is joined to the
group's kept decode rows (a few rows of Arrow bytes per group); Spark broadcasts the lookups to those
tasks while they are small (``spark.sql.autoBroadcastJoinThreshold``, 10 MB by default: some 1.3 million
frames; beyond that its join moves the decode rows, still a few per group, and each group's lookup). The
Python task that turns a group's batches into rows then gives them global stream and frame numbers and
microsecond times itself, so Spark takes each table row in once, from Arrow, with no join and no projection
after it: a join over the table rows had copied every row again (the JVM's CPU for a 250 MB capture's
records table on ``local[1]``: 3.8 s with the join, 2.7 s without). A table's rows therefore come group by group, each group's in the order the
engine gives them (the decode rows are put back in their kept order after the join); ``ordered=True``
sorts them by frame (one more shuffle of every row, and a sampling pass to cut the ranges), as ``orderBy``
on the table would.
"""
from __future__ import annotations

import numpy as np

from kafkalab.dissect import columns as spec

SORT = {"frames": ["frame"], "exchanges": ["request_frame"], "records": ["frame", "_order"], "connections": ["stream"]}
_FRAME_REFERENCES = {"frames": ["frame", "request_frame", "response_frame"],
                     "exchanges": ["request_frame", "response_frame"], "records": ["frame"], "connections": []}
ORDER = ("phase", "a", "b", "pos", "local", "g")   # the frames' order; ``g`` breaks ties: any rerun agrees
_KEY_NAMES = ("g", "local", "phase", "a", "b", "pos")        # a frame's key row: its group, number and ORDER
_KEYS = ", ".join(f"{name} bigint" for name in _KEY_NAMES)
# Captures with at most this many frames are numbered in one task (:func:`_one_task_lookups`): their key rows
# (48 bytes a frame, 24 MB at this bound) go to one Python task, which sorts them with numpy and gives each group
# its lookup, where the parallel way ran five jobs (a 2 GB capture's 172,000 frames on local[2]: about 1 s from
# the decode's end to the tables' first rows instead of 3 s). Beyond it the keys are sorted and counted by Spark
# over range partitions (:func:`frame_numbers`), so no one task holds every frame of a large capture. Both give
# every frame its place in :data:`ORDER`; neither brings a key row to the driver.
ONE_TASK_FRAMES = 500_000


def numbered_tables(spark, decoded, streams: list, merge: bool = False, ordered: bool = False,
                    width: int = 1, frames: int | None = None, nulls: dict | None = None) -> dict:
    """The four tables as DataFrames with global numbers, and under ``lookups`` the frames' numbers per group,
    cached for the tables' reads (``decoded``: the decode tasks' rows, see
    :func:`.decode.output_ddl`; ``streams``: (first packet's
    order key, (group, local stream)) for every connection: the ranges of a cut connection share its first
    packet's key; ``merge``: there are such ranges, whose connection rows are merged; ``ordered``: sort each
    table by frame, or stream for connections; ``width``: the decode tasks, as many ranges as the frames'
    keys are sorted over, with one per core at least; ``frames``: how many frames the capture has, if known:
    up to :data:`ONE_TASK_FRAMES`, one task numbers them; ``nulls``: table -> the paths of its columns
    that hold nulls, the others declared not nullable (see :func:`.pipeline.spark_schema`), or None: all
    nullable)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from .keep import keep, release

    ids = {key: n for n, key in enumerate(sorted({key for key, _ in streams}))}
    by_group: dict[int, dict[int, int]] = {}
    for key, (g, local) in streams:
        by_group.setdefault(g, {})[local] = ids[key]
    stream_ids = {g: _lookup(np.array(list(m), dtype=np.int64), np.array(list(m.values()), dtype=np.int64))
                  for g, m in by_group.items()}
    cores = spark.sparkContext.defaultParallelism
    fkeys = _per_core(decoded.where("kind = 'fkey'").select("g", "data"), cores)
    keys = fkeys.mapInArrow(_sort_keys(stream_ids), _KEYS)
    ranked = None
    if frames is not None and frames <= ONE_TASK_FRAMES:
        lookups = keys.repartition(1).mapInArrow(_one_task_lookups, "g bigint, lookup binary")
    else:
        # the keys are not kept (the range sort's sampling pass makes them again, which costs less than keeping
        # them); the sorted keys are, so that every scan of them sees the same partitions
        ranges = max(width, cores)
        ranked = keep(keys.repartitionByRange(ranges, *ORDER).sortWithinPartitions(*ORDER))
        numbers = frame_numbers(ranked).repartition(ranges, "g")     # not spark.sql.shuffle.partitions' 200
        lookups = numbers.groupBy("g").applyInArrow(_group_lookup, "g bigint, lookup binary")
    # cached, not kept as a checkpoint: Spark then plans the joins below knowing the lookups' real size, and
    # broadcasts them while they are small (a checkpoint's size is unknown to the planner, which then shuffled
    # every decode row of the table to join them)
    lookups = lookups.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    lookups.count()
    if ranked is not None:
        release(ranked)
    out = {"lookups": lookups}
    for name in spec.TABLES:
        blobs = decoded.where(f"kind = '{name}'").select("g", "data")
        if name != "records":
            blobs = _per_core(blobs, cores)
        if _FRAME_REFERENCES[name]:
            blobs = (blobs.withColumn("_piece", F.monotonically_increasing_id())
                     .join(lookups, "g", "left").sortWithinPartitions("_piece"))
        keep = ordered and name == "records"
        found = None if nulls is None else nulls[name]
        rows = blobs.mapInArrow(_numbered(name, stream_ids, keep, found), _schema(name, keep, found))
        if merge and name == "connections":
            from .skew import merge_connections

            rows = merge_connections(rows)
        if ordered:
            rows = rows.orderBy(*SORT[name])
        out[name] = rows.select(*[F.col(f"`{c.name}`") for c in spec.TABLES[name]])
    return out


def _per_core(blobs, cores: int):
    """A kind's decode rows in one partition per core, the neighbouring decode tasks' rows joined (in their
    order): every table but the records is a small part of the decode output, and a task per decode task
    cost more in Spark's and Python's per-task work than its rows took (a 2 GB capture's 8 decode tasks on
    local[2]: the frames, exchanges and connections written in 0.47-1.39 s each, 0.39-0.58 s in a task per
    core)."""
    return blobs.coalesce(max(1, cores))


def frame_numbers(ranked):
    """Each key row's place in the order of ``ranked`` (key rows sorted over range partitions, persisted so that
    every scan sees the same partitions) as ``number`` from 1, beside its ``g`` and ``local``. The rows of
    each partition are counted (one count per partition reaches the driver), the counts summed into each
    partition's first number, and every row numbered by its partition's first number and its place in the
    partition, which ``monotonically_increasing_id`` holds in its lower 33 bits: no task sees all the rows,
    as a window over the whole order would make one do."""
    from pyspark.sql import functions as F

    part = F.spark_partition_id()
    counts = dict(ranked.groupBy(part.alias("p")).count().collect())
    firsts, total = [], 0
    for p in range(max(counts, default=-1) + 1):
        firsts.append(total)
        total += counts.get(p, 0)
    first = F.element_at(F.array(*[F.lit(n) for n in firsts]), part + 1) if firsts else F.lit(0)
    place = F.monotonically_increasing_id() - part.cast("bigint") * (1 << 33)
    return ranked.select("g", "local", (first + place + 1).cast("bigint").alias("number"))


def _one_task_lookups(batches):
    """The mapInArrow function numbering every frame's key rows (``_KEYS``, all in one partition): sorted in
    :data:`ORDER` with numpy and numbered from 1, as one lookup row per group (see :func:`_group_lookup`)."""
    import pyarrow as pa

    keys = pa.Table.from_batches(list(batches), schema=pa.schema([(name, pa.int64()) for name in _KEY_NAMES]))
    column = {name: keys.column(name).to_numpy() for name in ORDER}
    order = np.lexsort([column[name] for name in reversed(ORDER)])
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.arange(1, len(order) + 1, dtype=np.int64)
    by_group = np.argsort(column["g"], kind="stable")
    groups, starts = np.unique(column["g"][by_group], return_index=True)
    if len(groups):
        lookups = [_lookup(column["local"][rows], number[rows]).tobytes() for rows in np.split(by_group, starts[1:])]
        yield pa.RecordBatch.from_pydict({"g": pa.array(groups, pa.int64()),
                                          "lookup": pa.array(lookups, pa.binary())})


def _lookup(local: np.ndarray, number: np.ndarray) -> np.ndarray:
    """An array giving each local number's global number (-1: none)."""
    table = np.full(int(local.max()) + 1 if len(local) else 0, -1, dtype=np.int64)
    table[local] = number
    return table


def _mapped(column, table: np.ndarray):
    """``column``'s local numbers as global ones (null where there is none, as a left join leaves them)."""
    import pyarrow as pa

    values = column.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    inside = (values >= 0) & (values < len(table))
    found = np.where(inside, table[np.where(inside, values, 0)] if len(table) else -1, -1)
    return pa.array(found, type=pa.int64(), mask=found < 0)


def _sort_keys(stream_ids: dict):
    """The mapInArrow function giving each frame's sort key (``a``, ``b``: the order key's rank and start for
    frames completed by a packet; the stream id and local number for the others)."""
    def keys(batches):
        import pyarrow as pa

        from .decode import parts

        for batch in batches:
            for g, part in zip(batch.column("g").to_pylist(), parts(batch, "fkey")):
                phase = part.column("phase").to_numpy()
                local = part.column("local").to_numpy()
                stream = _mapped(part.column("stream"), stream_ids.get(g, np.zeros(0, np.int64)))
                stream = stream.fill_null(-1).to_numpy()
                yield pa.RecordBatch.from_pydict({
                    "g": np.full(len(local), g, dtype=np.int64), "local": local, "phase": phase,
                    "a": np.where(phase == 0, part.column("rank").to_numpy(), stream),
                    "b": np.where(phase == 0, part.column("start").to_numpy(), local),
                    "pos": part.column("pos").to_numpy()})
    return keys


def _group_lookup(key, table):
    """One group's frame numbers as one row: the group and an array of int64 giving each local frame number's
    global number (-1: none), as bytes."""
    import pyarrow as pa

    found = _lookup(table.column("local").to_numpy(), table.column("number").to_numpy())
    return pa.table({"g": pa.array([key[0].as_py()], pa.int64()), "lookup": pa.array([found.tobytes()], pa.binary())})


def _schema(name: str, keep_order: bool = False, nulls: set | None = None):
    """The Spark schema of a table's rows as this stage gives them: its columns (with global numbers and
    microsecond times; ``nulls``: see :func:`.pipeline.spark_schema`), and records' order in their group when
    asked (``ordered=True`` sorts by it)."""
    from pyspark.sql import types as T

    from .pipeline import spark_schema

    extra = [T.StructField("_order", T.LongType())] if keep_order else []
    return T.StructType(list(spark_schema(name, nulls).fields) + extra)


def _arrow_schema(name: str, keep_order: bool = False):
    import pyarrow as pa

    fields = [pa.field(c.name, pa.timestamp("us", tz="UTC") if c.type == "time" else spec.arrow_type(c.type))
              for c in spec.TABLES[name]]
    return pa.schema(fields + ([pa.field("_order", pa.int64())] if keep_order else []))


def _global_batch(name: str, part, g: int, stream_ids: dict, frames: np.ndarray, keep_order: bool = False,
                  nulls: set | None = None):
    """One batch of a table with global stream and frame numbers (``frames``: the group's lookup, see
    :func:`_group_lookup`) and microsecond times. A number the lookups lack, in a column declared not
    nullable (``nulls``: the table's null paths), raises: Spark would take the null for a number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = _arrow_schema(name, keep_order)
    references = _FRAME_REFERENCES[name]
    columns = []
    for field in schema:
        column = part.column(field.name)
        if field.name == "stream" or field.name in references:
            lookup = stream_ids.get(g, np.zeros(0, np.int64)) if field.name == "stream" else frames
            column = _mapped(column, lookup)
            if column.null_count and nulls is not None and field.name not in nulls:
                raise RuntimeError(f"numbering left a {name} row of group {g} without a {field.name} number")
        elif pa.types.is_timestamp(field.type):
            column = pc.divide(column, 1000).cast(field.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _numbered(name: str, stream_ids: dict, keep_order: bool, nulls: set | None = None):
    """The mapInArrow function making a table's rows from its decode rows (with their group's frame lookup
    when the table refers to frames): global stream and frame numbers, microsecond times (``nulls``: see
    :func:`_global_batch`)."""
    def numbered(batches):
        from .decode import parts

        empty = np.zeros(0, np.int64)
        for batch in batches:
            names = batch.schema.names
            lookups = batch.column("lookup").to_pylist() if "lookup" in names else [None] * batch.num_rows
            for g, part, lookup in zip(batch.column("g").to_pylist(), parts(batch, name), lookups):
                frames = empty if lookup is None else np.frombuffer(lookup, dtype=np.int64)
                yield _global_batch(name, part, g, stream_ids, frames, keep_order, nulls)
    return numbered
