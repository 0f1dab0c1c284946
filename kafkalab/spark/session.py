"""A SparkSession made for kafkalab's jobs: the right Python in the workers, loopback only, quiet.

Imported by ``import kafkalab.spark`` (it imports no pyspark itself), so its warning filters below apply to
sessions users make themselves too.

Owns the settings every kafkalab Spark job needs whatever the master: Python workers run the interpreter the
driver runs (otherwise they start whatever ``python3`` is first on the PATH, which may lack kafkalab), the driver
binds to 127.0.0.1 unless a cluster master elsewhere is named, the JVMs compile with the quick compiler only
(:data:`JIT_OPTIONS`; the driver's, which makes the rows in local mode, lets the optimising compiler take the
methods that make rows from Arrow: :data:`DRIVER_JIT_OPTIONS`), read Arrow without per-value checks (:data:`ARROW_READ_OPTIONS`) and collect garbage with
the throughput collector (:data:`HEAP_OPTIONS`), the JVM hands Python its input in Arrow batches of at most
8 MB (:data:`ARROW_BATCH_BYTES`), the JVM and its Python workers talk over Unix sockets (:data:`PYTHON_SOCKETS`),
and Spark's console noise stays off unless asked.
"""
from __future__ import annotations

import os
import shutil
import socket
import sys
import warnings

# PySpark 4.x with pandas 3.x, the versions the spark extra installs together: PySpark warns on every pandas
# conversion (toPandas, createDataFrame from pandas, mapInPandas) that it "does not yet fully support pandas
# >= 3", and its toPandas calls ``astype(copy=False)``, a keyword pandas 3 deprecates. kafkalab's Spark jobs
# hand Spark plain Python rows; its tests check toPandas results against the single-process engine on these
# versions (tests/spark/test_pandas_versions.py), so the two notes say nothing a user can act on. They are
# hidden only where PySpark raises them: pandas' warnings about the user's own code still show.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning,
                        module=r"pyspark\.")
warnings.filterwarnings("ignore", message="The copy keyword is deprecated", category=DeprecationWarning,
                        module=r"pyspark\.")


# The JVM's optimising compiler (C2) spent more CPU compiling the code Spark generates for each query than the
# JVM spent running it: a kafkalab job is many short queries over opaque Arrow bytes, whose code never runs
# long enough to repay C2. With the quick compiler alone, a 2 GB capture read on local[2] took 85 s of JVM
# CPU instead of 125 s (bench/bench_spark.py); a user's own setting wins. The quick compiler alone also
# shrinks the JVM's default code cache to 48 MB, which a long session (a notebook, a test suite: hundreds of
# queries, each with classes of its own) fills until the JVM fails; so the cache keeps the size it has
# with both compilers.
JIT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"

# The driver's JVM, which in local mode is also the executor that makes the tables' rows, lets C2 compile the few
# methods that make rows from Arrow (Arrow's vectors, Spark's Arrow column vectors, the generated projections,
# the row writers: :data:`C2_DIRECTIVES`) and nothing else. Those run once per value of millions of rows and
# repay C2 many times over; the rest stays with the quick compiler, as above. A 2 GB capture rotated into 8
# files, read on local[2] (bench/bench_spark.py's read; Spark's executor CPU time per stage from its REST API;
# four runs with the directives, eight with the quick compiler alone): the records rows took 5.3-5.7 s of
# executor CPU instead of 9.5-11.1 s, C2 compiled for 3 s where unrestricted it compiled for 20 s, the JVM's
# CPU for the whole read fell from 27.5-31 s to 25.5-26.8 s and the read's wall time from 33-36 s to
# 31.1-31.8 s. Executors elsewhere (a cluster) keep
# :data:`JIT_OPTIONS`: the directives are a file of this package, which a remote JVM may not see, and a JVM
# that cannot read its directives file does not start.
C2_DIRECTIVES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jit_directives.json")
DRIVER_JIT_OPTIONS = (f'-XX:+UnlockDiagnosticVMOptions "-XX:CompilerDirectivesFile={C2_DIRECTIVES}" '
                      "-XX:ReservedCodeCacheSize=240m")

# Spark makes the tables' rows from the Arrow batches the Python tasks return, one value at a time, and Arrow's
# Java library checks every such read by default: the index against the buffer's bounds, the buffer's reference
# count, and whether the value is null (which Spark has just asked already). With the quick compiler these checks
# were a quarter of the JVM's samples while it made a 250 MB capture's records rows (Java Flight Recorder); without
# them that step's JVM CPU fell from 2.20 s to 1.82 s (median of six, local[1], the two settings run side by side
# at the same time: the machine was shared). The batches come from pyarrow, and the JVM's IPC reader checks each
# buffer's length against the batch once.
ARROW_READ_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"

# The JVM's throughput collector instead of G1. Making the tables' rows from Arrow allocates a short-lived byte
# array for every key and value (Spark's Arrow reader copies each binary value out before it copies it into the
# row), and the decode tasks' pieces of up to 8 MB each (:data:`.decode.PIECE_BYTES`) are large objects that G1
# allocated alone in regions of their own (with its default regions, any object over 1 MB; 32 MB regions had
# kept them ordinary). The parallel collector has neither G1's per-store barriers nor its region bookkeeping: a
# 2 GB capture rotated into 8 files, read on local[2], G1 (32 MB regions) and the parallel collector run in turn,
# two rounds: 35.7 and 40.9 s wall, 68.5 and 77.9 s of CPU with G1; 34.7 and 35.0 s, 65.3 and 66.4 s with the
# parallel collector, and the JVM's peak memory 6.5-6.8 GB to 4.9-5.0 GB. Its pauses stop every thread, which
# a batch job does not mind.
HEAP_OPTIONS = "-XX:+UseParallelGC"

# All three together, against the options before them, two reads of a 250 MB capture rotated into 8 files on
# local[1], each run beside the other at the same time: the JVM's CPU 8.4 and 8.3 s to 7.7 and 7.5 s, of which the
# records rows' 2.64 and 2.39 s to 1.63 and 1.77 s (Spark's executor CPU time); the whole read's 14.8 and 14.2 s
# to 13.7 and 13.6 s. A user's own extraJavaOptions replace them all.
JVM_OPTIONS = f"{JIT_OPTIONS} {ARROW_READ_OPTIONS} {HEAP_OPTIONS}"
DRIVER_JVM_OPTIONS = f"{DRIVER_JIT_OPTIONS} {ARROW_READ_OPTIONS} {HEAP_OPTIONS}"

# The JVM hands a Python task its input in Arrow batches of up to 10,000 rows by default. kafkalab's rows going
# to Python are few and large (a decode task's batches of a table, up to about 8 MB each, see
# :data:`.decode.PIECE_BYTES`; 2 MB when this was measured), so one batch grew to a whole partition's bytes,
# built by reallocating and copying ever larger buffers and held whole. Capped at 8 MB, the JVM's CPU in making
# a 250 MB capture's records rows fell from 2.8 s to 2.1-2.3 s (local[1]); a user's own setting wins.
ARROW_BATCH_BYTES = 8 << 20


# Where the platform has them, the JVM and its Python workers talk over Unix domain sockets instead of TCP on the
# loopback interface. A table's rows go from a Python task to the JVM while the JVM is still sending that task its
# input, and over TCP a 2 GB read on local[1] once stalled for minutes: the Python task's receive queue had outgrown
# its buffer (34 MB queued), the kernel dropped segments both ways, and each side's retransmission timer had backed
# off to two minutes (``ss -tmi``: ``backoff:12``, ``rto:120000``), with the JVM waiting to read and the task
# waiting to write. A Unix socket has no segments to drop: a full buffer only makes the writer wait. Read times
# were about the same (2 GB on local[2]: 31.4-38.8 s over Unix sockets in six runs, 32.7-35.8 s over TCP in three).
PYTHON_SOCKETS = "spark.python.unix.domain.socket.enabled"


class SparkUnavailable(RuntimeError):
    """Spark cannot run here; the message says what to install or change."""


def check_java() -> None:
    """Spark needs a Java runtime; say so in one line instead of a JVM launch failure."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return
    if shutil.which("java") is None:
        raise SparkUnavailable("Spark needs Java 17 or newer: install it (Debian: apt-get install "
                               "openjdk-17-jre-headless) or set JAVA_HOME")


def session(master: str = "local[*]", app_name: str = "kafkalab", config: dict[str, str] | None = None):
    """A SparkSession for ``master`` (``local[N]``, ``spark://host:port``, ``yarn``, ``k8s://...``)."""
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable("Spark support needs pyspark: pip install 'kafkalab[spark]'") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    local = master.startswith("local") or "127.0.0.1" in master or "localhost" in master
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.pyspark.python", sys.executable)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")          # kafkalab's times are UTC
               .config("spark.sql.execution.arrow.maxBytesPerBatch", str(ARROW_BATCH_BYTES)))
    if hasattr(socket, "AF_UNIX"):
        builder = builder.config(PYTHON_SOCKETS, "true")
    if local:
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    builder = builder.config("spark.driver.extraJavaOptions", DRIVER_JVM_OPTIONS)
    builder = builder.config("spark.executor.extraJavaOptions", JVM_OPTIONS)
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("KAFKALAB_SPARK_LOG_LEVEL", "ERROR"))
    return spark
