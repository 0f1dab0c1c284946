"""``kafkalab spark INPUT... -o OUT_DIR [--master URL] [--table T]... [-p PORT]...``: a capture decoded on Spark
into Parquet.

Each table goes to ``OUT_DIR/<table>/``, partitioned so that the usual questions read few files: frames and
exchanges by ``date`` (UTC, of the frame or request) and ``api_name``, records by ``date`` (of the frame that
carried them... their own timestamp says when they were written, which may be anything) and ``topic``;
connections in one directory. Runs ``local[*]`` unless ``--master`` names a cluster (``spark://``, ``yarn``,
``k8s://``). What stops it is said in one line with exit status 2: no Java or pyspark, no readable capture, a
master that cannot be reached.
"""
from __future__ import annotations

import socket
import sys
from urllib.parse import urlparse

TABLES = ("frames", "exchanges", "records", "connections")
PARTITIONS = {"frames": ("time", "api_name"), "exchanges": ("request_time", "api_name"),
              "records": ("timestamp", "topic"), "connections": None}
EXIT_BAD = 2


def add_parser(subparsers, port_type) -> None:
    spark = subparsers.add_parser(
        "spark", help="decode captures on Spark (local or a cluster) into Parquet",
        description="Decode pcap/pcapng files, globs or directories (one capture: rotated files are stitched) on "
                    "Spark, with the rows 'kafkalab decode' gives, and write the tables as Parquet.")
    spark.add_argument("inputs", nargs="+", metavar="INPUT", help="capture files, globs or directories")
    spark.add_argument("-o", "--output", required=True, metavar="OUT_DIR", help="directory for the Parquet tables")
    spark.add_argument("--master", default="local[*]", metavar="URL",
                       help="Spark master: local[N], spark://HOST:PORT, yarn, k8s://... (default local[*])")
    spark.add_argument("--table", action="append", choices=TABLES, metavar="TABLE",
                       help="frames, exchanges, records or connections (repeatable; default: all four)")
    spark.add_argument("-p", "--port", type=port_type, action="append", default=[], metavar="PORT",
                       help="also treat PORT as Kafka (repeatable; 9092-9094 always are)")
    spark.set_defaults(func=cmd_spark)


def reachable(master: str) -> str | None:
    """None when a ``spark://`` master answers on its port (other masters are left to Spark), else why not."""
    if not master.startswith("spark://"):
        return None
    for address in master[len("spark://"):].split(","):
        where = urlparse("spark://" + address)
        try:
            with socket.create_connection((where.hostname, where.port or 7077), timeout=5):
                return None
        except OSError as exc:
            problem = f"cannot reach the Spark master at {master}: {exc.strerror or exc}"
    return problem


def cmd_spark(args) -> int:
    from kafkalab.pcap import CaptureError

    from .plan import plan
    from .session import SparkUnavailable

    try:
        plan(args.inputs)                      # bad input is named before Spark starts
    except CaptureError as exc:
        return _fail(str(exc))
    problem = reachable(args.master)
    if problem:
        return _fail(problem)
    try:
        return _run(args)
    except (SparkUnavailable, CaptureError) as exc:
        return _fail(str(exc))


def _run(args) -> int:
    from pyspark.sql import functions as F

    from .pipeline import read_capture
    from .session import session

    spark = session(args.master, "kafkalab spark", {"spark.ui.showConsoleProgress": "true"})
    try:
        capture = read_capture(spark, args.inputs, args.port)
        for note in capture.diagnostics:
            print(f"kafkalab: {note}", file=sys.stderr)
        for table in args.table or TABLES:
            frame = capture.table(table)
            writer_columns = PARTITIONS[table]
            path = f"{args.output.rstrip('/')}/{table}"
            if writer_columns:
                when, what = writer_columns
                frame = frame.withColumn("date", F.to_date(F.col(when)))
                frame.write.mode("overwrite").partitionBy("date", what).parquet(path)
            else:
                frame.write.mode("overwrite").parquet(path)
            print(f"{table}: {path}", file=sys.stderr)
    finally:
        spark.stop()
    return 0


def _fail(message: str) -> int:
    print(f"kafkalab spark: {message}", file=sys.stderr)
    return EXIT_BAD


__all__ = ["add_parser", "cmd_spark"]
