"""kafkalab's data pipeline on Spark, through PySpark: Spark schedules, shuffles and stores; kafkalab's own stages
decode every byte. pyspark is imported by the modules below, never by ``import kafkalab``.

``read_capture(spark, paths, ports)`` (:mod:`.pipeline`) gives the four tables as DataFrames, with the rows
:func:`kafkalab.read_capture` gives; ``register(spark)`` (:mod:`.source`) adds ``spark.read.format("kafkalab")``;
``session(master)`` (:mod:`.session`) makes a SparkSession set up for both.

Importing this package imports :mod:`.session` (no pyspark), whose warning filters quiet PySpark's notes
about pandas 3 (see there).
"""
from .session import SparkUnavailable, session


def read_capture(spark, paths, ports=None, **options):
    from .pipeline import read_capture as run

    return run(spark, paths, ports, **options)


def register(spark) -> None:
    from .source import register as run

    run(spark)


__all__ = ["SparkUnavailable", "read_capture", "register", "session"]
