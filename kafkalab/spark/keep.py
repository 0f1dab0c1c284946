"""How a distributed read keeps the rows it scans more than once: the index rows (scanned for the driver's facts, then
routed to the decode tasks) and the decode rows (scanned for the facts, the numbering and each table).

On a cluster they are cached as ``DataFrame.cache()`` caches (``MEMORY_AND_DISK_DESER``: in memory as objects,
spilled to disk when memory runs short), so that an executor's loss costs only the recomputation of its share from
the lineage. In local mode the one JVM is both driver and executor: an executor lost is the session lost, and
lineage buys nothing. There they are kept as a local checkpoint, which stores each row as the one copy Spark made of
it, where the cache builds column buffers from the rows (copying the bytes again and again as the buffers grow) and
makes garbage the collector then has to clear. A 2 GB capture rotated into 8 files, read on local[2]
(bench/bench_spark.py's read, two runs each): 24.8-25.2 s and 16.1-18.2 s of the JVM's CPU cached, 22.6-23.1 s and
14.9-15.9 s checkpointed. Kept serialized (``MEMORY_AND_DISK``, as reads kept them before), every scan of them
deserialized them all, the records' batches with the rest, however little it wanted: 28.8 s and 22.3 s (with smaller
read tasks and routing in Python then, which cost about 1.5 s of that).
"""
from __future__ import annotations


def local(spark) -> bool:
    """Whether ``spark`` runs in local mode (one JVM for the driver and the executor; ``local-cluster`` has
    executors of their own)."""
    master = spark.sparkContext.master
    return master == "local" or master.startswith("local[")


def keep(frame):
    """``frame``, computed now (one job) and kept for the scans that follow: a local checkpoint in local mode,
    else cached (see the module docstring). :func:`release` frees it."""
    from pyspark import StorageLevel

    if local(frame.sparkSession):
        return frame.localCheckpoint(eager=True)
    kept = frame.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    kept.count()
    return kept


def release(frame) -> None:
    """Free what :func:`keep` kept of ``frame``, or what ``persist`` cached (a checkpoint's blocks are not a
    cache ``unpersist`` drops)."""
    frame.unpersist()
    plan = frame._jdf.queryExecution().logical()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)
