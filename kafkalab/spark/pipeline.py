"""``read_capture(spark, paths, ports)``: a capture decoded on Spark, with the rows the single-process engine
gives (:func:`kafkalab.read_capture` on the same files as one capture).

Stages (Spark schedules and shuffles; kafkalab's own stages decode; what crosses between the JVM and Python
is Arrow batches, and no payload byte is shuffled):

1. **Plan** (driver, :mod:`.plan`): files in capture-time order, cut into read units (whole files, or nominal
   byte ranges of large ones), packed into read tasks of at most 256 MB, two per core at least; only file
   heads and sizes are read.
2. **Index** (:mod:`.packets`, a Spark task per read task): a range's task resolves its start to a record
   boundary (a numpy screen of a small window), then indexes the records whose header starts in its range,
   walking them in the mapped file, and reports where its walk stopped. The unit's TCP segments become index
   rows (order key, addresses, ports, sequence numbers, flags, and the payload's file and offset), read with
   numpy and packed per connection: Spark sees one row per connection and unit. The driver collects, in one job,
   each connection's bytes, the files' problems and the ranges' walks, and checks that each file's ranges meet
   exactly (:func:`.plan.settle`: every walk stops on the next range's start); a file whose ranges do not (a
   false boundary, a damaged file, a pcapng head redefined mid-file) has its rows dropped and is indexed again
   whole by one task (rare: the only case where a byte is indexed twice).
3. **Group**: one row per connection (its key and payload bytes) goes to the driver, which puts the
   connections of one client host in one group (both ends' groups are joined when the ports do not say which
   end is the client): the requests a client host made on its other connections (the last tier of
   inference) are then all in its group, and so are the Metadata responses that host's clients usually learn
   topic names from. Groups are packed into decode tasks of about equal bytes (:func:`decode_tasks`); the
   packed index rows get their task's label by a broadcast join in the JVM (a cut connection's are split at
   its cuts by a Python task) and are shuffled to it.
4. **Decode** (a task each, :mod:`.decode`): the task reads its payloads by offset from the shared files and
   runs the engine's bulk stages over them in global order, giving Arrow batches (``applyInArrow``), each
   carried to the JVM as the bytes of one narrow row (kind, group, batch, LZ4-compressed), kept. If a frame
   names a topic id its task could not name but another task could, the facts are not local and the capture
   is decoded again as one task (exact, not parallel).
5. **Number** (:mod:`.numbering`): stream ids by the order key of each connection's first packet
   (collected: one per connection); frame numbers by the frames' sort keys, sorted and numbered by one
   Python task when the capture has few frames (the decode tasks report how many), otherwise sorted over
   range partitions, each partition counted and its rows numbered from the counts before it (Spark SQL over
   narrow rows, in parallel: only the per-partition counts reach the driver), gathered into one lookup row
   per group, which joins the group's kept decode rows (Spark broadcasts it while the numbers are small);
   the Python task making a group's rows of a table gives them their global numbers. No table row is
   shuffled or joined, so rows come group by group unless ``ordered=True`` sorts them.

The index rows and the decode rows are each made once and kept (:mod:`.keep`) for the scans that follow.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kafkalab.dissect import columns as spec

from .packets import KEY as _KEY
from .packets import KEY_DDL
from .packets import POS_STEP
from .plan import plan, read_tasks, settle

DEFAULT_PORTS = frozenset({9092, 9093, 9094})
DECODE_TASK_BYTES = 256 << 20       # payload bytes a decode task takes on (see decode_width)


@dataclass
class SparkCapture:
    """The four tables of a capture as Spark DataFrames, and what was wrong with the input files."""
    frames: object
    exchanges: object
    records: object
    connections: object
    diagnostics: list[str] = field(default_factory=list)
    split: dict = field(default_factory=dict)    # connection key -> ranges decoded by separate tasks (heavy ones)
    units: list = field(default_factory=list)    # what was read: (rank, path, start, end), -1s for a whole file
    kept: list = field(default_factory=list)     # the rows kept for the tables' reads (see :mod:`.keep`)

    def table(self, name: str):
        return getattr(self, name)

    def release(self) -> None:
        """Free the rows this read keeps for its tables (its decode rows and frame numbers, which otherwise
        stay in the executors' memory until the session ends). The tables cannot be read after it."""
        from .keep import release

        for frame in self.kept:
            release(frame)
        self.kept.clear()


def spark_type(type_name: str, name: str = "", nulls=None):
    """The Spark type of a column of the spec's ``type_name``. ``nulls``: the paths within column ``name`` that
    hold nulls (see :func:`spark_schema`); a list's elements and a struct's fields are nullable unless
    ``nulls`` is given and names none there."""
    from pyspark.sql import types as T

    def null(path: str) -> bool:
        return nulls is None or path in nulls

    simple = {"int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
              "float64": T.DoubleType(), "bool": T.BooleanType(), "string": T.StringType(),
              "binary": T.BinaryType(), "time": T.TimestampType()}
    if type_name == "list<string>":
        return T.ArrayType(T.StringType(), null(f"{name}[]"))
    if type_name == "headers":
        return T.ArrayType(T.StructType([T.StructField("key", T.StringType(), null(f"{name}[].key")),
                                         T.StructField("value", T.BinaryType(), null(f"{name}[].value"))]),
                           null(f"{name}[]"))
    return simple[type_name]


def spark_schema(table: str, nulls=None):
    """The Spark schema of ``table`` from the one column spec (times: microsecond timestamps). Every column is
    nullable, unless ``nulls`` (a set of column paths: ``offset``, ``headers[]`` for a list's elements,
    ``headers[].value`` for a field of them) says which hold nulls: the others are declared not nullable. A
    distributed read declares what its decode tasks saw (:func:`.outputs.null_paths`), which spares Spark
    a null check of every such value when it makes rows (Spark skips the check for a non-nullable column: the
    records rows of a 2 GB capture took 9.5 s of executor CPU instead of 11.0 s)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(c.name, spark_type(c.type, c.name, nulls), nulls is None or c.name in nulls)
                         for c in spec.TABLES[table]])


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


def read_capture(spark, paths, ports=None, *, ordered: bool = False, target_bytes: int | None = None,
                 task_bytes: int = DECODE_TASK_BYTES) -> SparkCapture:
    """The frames, exchanges, records and connections of the capture in ``paths`` (files, globs,
    directories; several files are one capture) as DataFrames, decoded on ``spark``. Their rows come decode
    task by decode task, as Spark's tables do (no order unless asked): ``ordered=True`` sorts each by frame
    (connections by stream), the engine's order, at the cost of a shuffle of every row. ``target_bytes``: the
    capture bytes a read task indexes (None: sized to the capture and the cores, :func:`.plan.read_task_bytes`);
    ``task_bytes``: the payload bytes a decode task decodes (see :func:`decode_width`)."""
    from pyspark.sql import functions as F

    from .keep import keep, release
    from .numbering import numbered_tables

    sc = spark.sparkContext
    ports = sorted(set(ports or ()))
    capture_plan = plan(paths, target_bytes, sc.defaultParallelism)
    files = capture_plan.files
    index = keep(_index(spark, read_tasks(capture_plan.units, capture_plan.target)))
    facts = _index_facts(index)
    units, whole = settle(capture_plan.units, [row["walk"] for row in facts if row["walk"] is not None])
    if whole:                               # ranges that do not meet: those files are indexed again, whole
        again = keep(index.where(~F.col("rank").isin(sorted(whole))).unionByName(
            _index(spark, [[u] for u in units if u[0] in whole])))
        facts = _index_facts(again)         # made from the kept rows of the other files
        release(index)
        index = again
    notes = sorted(row["note"] for row in facts if row["note"] is not None)
    sizes = {((row["ka_ip"], row["ka_port"]), (row["kb_ip"], row["kb_port"])): row["bytes"]
             for row in facts if row["note"] is None and row["walk"] is None}
    groups = group_of_connections(list(sizes), ports)
    wide = decode_width(sum(sizes.values()), sc.defaultParallelism, task_bytes)
    width = max(1, min(len(set(groups.values())), wide))
    cuts = heavy_cuts(spark, index, sizes, wide, files, DEFAULT_PORTS | set(ports))
    if cuts:
        width = wide
    tasks = decode_tasks(groups, sizes, width, cuts)
    decoded = keep(_decode(spark, index, tasks, cuts, files, ports, width))
    facts = _facts(decoded)
    topics = [(set(row["unresolved"]), set(row["known"])) for _, row in facts["topics"]]
    known = set().union(*(k for _, k in topics)) if topics else set()
    if any(u & known for u, _ in topics) and len(topics) > 1:
        release(decoded)
        cuts = {}
        width = 1
        decoded = keep(_decode(spark, index, {(key, 0): 0 for key in sizes}, cuts, files, ports, width))
        facts = _facts(decoded)
    aliases = {(c["rank"], c["start"], c["pos"] - POS_STEP + 1): c["first"] for found in cuts.values() for c in found}
    streams = [(aliases.get(key, key), (g, s["local"])) for g, s in facts["stream"]
               for key in [(s["rank"], s["start"], s["pos"])]]
    frames = sum(row["frames"] for _, row in facts["topics"])
    nulls: dict = {name: set() for name in spec.TABLES}
    for _, row in facts["nulls"]:
        nulls[row["table"]].add(row["column"])
    tables = numbered_tables(spark, decoded, streams, merge=bool(aliases), ordered=ordered, width=width,
                             frames=frames, nulls=nulls)
    release(index)
    return SparkCapture(tables["frames"], tables["exchanges"], tables["records"], tables["connections"],
                        capture_plan.problems + notes, {key: len(found) + 1 for key, found in cuts.items()}, units,
                        [decoded, tables["lookups"]])


def _index_facts(index) -> list:
    """What the driver needs from the index, in one job: each connection's payload bytes (``note`` and
    ``walk`` null), what was wrong with the files (``note``), and each range's walk (``walk``: file rank,
    nominal start, resolved start, where the walk stopped)."""
    from pyspark.sql import functions as F

    return index.groupBy("note", "walk", *_KEY).agg(F.sum("bytes").alias("bytes")).collect()


def decode_width(payload_bytes: int, parallelism: int, task_bytes: int = DECODE_TASK_BYTES) -> int:
    """How many decode tasks share a capture's ``payload_bytes``: two per core at least (a task that ends
    late then idles one core for half as long), and more as the capture grows, so that each task's share
    stays near ``task_bytes`` whatever the input's size, in whole rounds (a multiple of the cores: seven
    equal tasks on two cores leave one core idle for the last task's length). A decode task holds its
    share's tables while it runs: with a fixed number of tasks, a Python worker's memory would grow with the
    capture (a 20 GB capture on two cores would give each of four tasks 5 GB). A
    connection heavier than a share is cut into ranges (:func:`heavy_cuts`), so a share is bounded by
    ``task_bytes`` but for one client host's many light connections, which stay together for inference."""
    wanted = max(1, 2 * parallelism, -(-payload_bytes // max(1, task_bytes)))
    cores = max(1, parallelism)
    return int(-(-wanted // cores) * cores)


def _facts(decoded) -> dict:
    """Kind -> (group, row) for the decode tasks' small facts: each connection's first packet (``stream``),
    the topic ids each task could and could not name (``topics``) and the tables' columns holding nulls
    (``nulls``)."""
    from .decode import part

    out: dict = {"stream": [], "topics": [], "nulls": []}
    for row in decoded.where("kind in ('stream', 'topics', 'nulls')").select("kind", "g", "data").collect():
        out[row["kind"]] += [(row["g"], values) for values in part(row["kind"], row["data"]).to_pylist()]
    return out


def heavy_cuts(spark, index, sizes: dict, width: int, files: list[str], kafka_ports) -> dict:
    """Connection key -> its cuts (see :mod:`.skew`), for each connection on a Kafka port heavier than a task's
    share (a connection found to be Kafka by its traffic alone is not cut: a range might not show it)."""
    from pyspark.sql import functions as F

    from .skew import CUT_COLUMNS, find_cuts

    total = sum(sizes.values())
    share = total / width if width > 1 else 0
    heavy = {key: -(-size // share) for key, size in sizes.items()
             if share and size > share and (key[0][1] in kafka_ports or key[1][1] in kafka_ports)}
    if not heavy:
        return {}
    pieces = spark.createDataFrame([(a[0], a[1], b[0], b[1], int(p)) for (a, b), p in heavy.items()],
                                   f"{KEY_DDL}, pieces bigint")
    rows = index.where(F.col("rows").isNotNull()).join(F.broadcast(pieces), list(_KEY))

    def cut(key, table):
        import pyarrow as pa

        from .packets import unpack

        found = find_cuts(unpack(table.column("rows")), files, int(table.column("pieces")[0].as_py()))
        columns = [f.split()[0] for f in CUT_COLUMNS.split(", ")]
        values = [(*(k.as_py() for k in key), c["rank"], c["start"], c["pos"], c["ts"], *c["client"], *c["server"],
                   c["cseq"], c["sseq"], c["bytes"], *c["first"]) for c in found]
        return pa.Table.from_pylist([dict(zip(columns, v)) for v in values],
                                    schema=pa.schema([(n, pa.string() if t == "string" else pa.int64())
                                                      for n, t in (f.split() for f in CUT_COLUMNS.split(", "))]))

    cuts: dict = {}
    for row in rows.groupBy(*_KEY).applyInArrow(cut, CUT_COLUMNS).collect():
        key = ((row["ka_ip"], row["ka_port"]), (row["kb_ip"], row["kb_port"]))
        cuts.setdefault(key, []).append({
            "rank": row["rank"], "start": row["start"], "pos": row["pos"], "ts": row["ts"],
            "client": (row["client"], row["cport"]), "server": (row["server"], row["sport"]), "cseq": row["cseq"],
            "sseq": row["sseq"], "bytes": row["bytes"], "first": (row["first_rank"], row["first_start"], row["first_pos"])})
    return {key: sorted(found, key=lambda c: (c["rank"], c["start"], c["pos"])) for key, found in cuts.items()}


def decode_tasks(groups: dict, sizes: dict, width: int, cuts: dict | None = None) -> dict:
    """(connection key, range) -> decode task: whole groups (with the first range of any cut connection)
    and the other ranges of cut connections, packed into ``width`` tasks of about equal payload bytes
    (heaviest first, into the task with the fewest bytes so far, never two ranges of one connection in one
    task). A task decodes its share in one run of the engine: a union of whole groups holds every fact
    each of them needs."""
    cuts = cuts or {}
    weight: dict = {}
    for key, group in groups.items():
        first = cuts[key][0]["bytes"] if key in cuts else sizes.get(key, 0)
        weight[("group", group)] = weight.get(("group", group), 0) + first
    for key, found in cuts.items():
        marks = [c["bytes"] for c in found] + [sizes.get(key, 0)]
        for k in range(1, len(marks)):
            weight[("range", key, k)] = marks[k] - marks[k - 1]
    load = [0] * width
    holds: list[set] = [set() for _ in range(width)]
    task_of = {}
    for unit in sorted(weight, key=lambda u: (-weight[u], str(u))):
        keys = {k for k, g in groups.items() if g == unit[1]} if unit[0] == "group" else {unit[1]}
        free = [t for t in range(width) if not (holds[t] & keys & set(cuts))] or list(range(width))
        task = min(free, key=lambda t: (load[t], t))
        task_of[unit] = task
        load[task] += weight[unit]
        holds[task] |= keys
    out = {(key, 0): task_of[("group", group)] for key, group in groups.items()}
    for key, found in cuts.items():
        for k in range(1, len(found) + 1):
            out[(key, k)] = task_of[("range", key, k)]
    return out


def _index(spark, tasks: list):
    """The index rows of every unit (``tasks``: the units each read task takes on, see
    :func:`.plan.read_tasks`), packed per connection (:func:`.packets.unit_pieces`: both directions of a
    connection share its key). The tasks are numbered by ``spark.range``, which the JVM makes alone, and each
    finds its units in the list it carries: a Python RDD of the units would cost every task a second trip
    through a Python worker (the index stage of a 2 GB capture in 30 ranges: 1.9 s of task time of Spark's own
    instead of 3.7 s)."""
    from .packets import PIECE_DDL, unit_pieces

    def index_units(batches):
        for batch in batches:
            for k in batch.column("id").to_pylist():
                for unit in tasks[k]:
                    yield from unit_pieces(unit)

    return spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(index_units, PIECE_DDL)


def _decode(spark, index, tasks: dict, cuts: dict, files: list[str], ports, width: int):
    """The decode tasks' output: each connection's pieces go to its task (a cut connection's are cut at its
    cuts first, and each range gets its synthetic handshake), then the engine decodes each task's index rows,
    reading their payloads from the shared files (no payload bytes travel). Each task is labelled with a number
    Spark's hash partitioning sends to a partition of its own, so the ``width`` tasks run in parallel.

    A whole connection's pieces get their task's label in the JVM, by a join with one small row per connection
    (broadcast): only a cut connection's pieces go through a Python task (:func:`_routed`), which splits them
    at its cuts (a 2 GB capture with no cut connection on local[2]: 0.7 s of a routing stage of Python tasks
    before the decode's, none with the join)."""
    from pyspark.sql import functions as F

    from .decode import decode_group, output_ddl
    from .packets import index_schema, pack, unpack
    from .skew import handshake_rows

    label = _labels(spark, width)
    task_of = {(key, r): label[t] for (key, r), t in tasks.items()}
    whole = spark.createDataFrame([(a[0], a[1], b[0], b[1], g) for ((a, b), r), g in task_of.items()
                                   if r == 0 and (a, b) not in cuts], f"{KEY_DDL}, g bigint")
    pieces = index.where(F.col("rows").isNotNull())
    listed = pieces.join(F.broadcast(whole), list(_KEY)).select("g", "rows")
    if cuts:
        import pyarrow as pa

        cut = spark.createDataFrame([(a[0], a[1], b[0], b[1]) for (a, b) in cuts], KEY_DDL)

        def route(batches):
            for batch in batches:
                yield _routed(batch, task_of, cuts)

        # one routing task per core: a Python task costs Spark some 0.1 s of its own, and routing a unit's
        # pieces costs less
        listed = listed.unionByName(pieces.join(F.broadcast(cut), list(_KEY), "left_semi")
                                    .coalesce(spark.sparkContext.defaultParallelism)
                                    .mapInArrow(route, "g bigint, rows binary"))
        handshakes = [(task_of[(key, k)], pack(pa.Table.from_pylist(handshake_rows(c), schema=index_schema())))
                      for key, found in cuts.items() for k, c in enumerate(found, 1)]
        listed = listed.unionByName(spark.createDataFrame(handshakes, "g bigint, rows binary"))

    def decode(key, table):
        return decode_group(key[0].as_py(), unpack(table.column("rows")), files, ports)

    return listed.repartition(width, "g").groupBy("g").applyInArrow(decode, output_ddl())


def _routed(batch, task_of: dict, cuts: dict):
    """Batches of (task label, packed index rows): each piece of a cut connection in ``batch`` split into its
    ranges."""
    import pyarrow as pa

    from .packets import pack, unpack
    from .skew import range_of

    labels, packed = [], []
    keys = zip(*(batch.column(c).to_pylist() for c in _KEY))
    for k, (ka_ip, ka_port, kb_ip, kb_port) in enumerate(keys):
        key = ((ka_ip, ka_port), (kb_ip, kb_port))
        rows = unpack(batch.column("rows").slice(k, 1))
        ranges = range_of(rows, cuts[key])
        for r in np.unique(ranges).tolist():
            labels.append(task_of[(key, r)])
            packed.append(pack(rows.filter(pa.array(ranges == r))))
    return pa.RecordBatch.from_arrays([pa.array(labels, pa.int64()), pa.array(packed, pa.binary())],
                                      names=["g", "rows"])


def _labels(spark, width: int) -> list[int]:
    """``width`` numbers that Spark's hash partitioning into ``width`` partitions sends to distinct partitions."""
    from pyspark.sql import functions as F

    found: dict[int, int] = {}
    for row in spark.range(0, 64 * width).select("id", F.pmod(F.hash("id"), F.lit(width)).alias("p")).collect():
        found.setdefault(row["p"], row["id"])
    return [found.get(p, p) for p in range(width)]
