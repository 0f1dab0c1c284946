"""A SparkSession made for kafkalab's jobs: the right Python in the workers, loopback only, quiet.

Owns the settings every kafkalab Spark job needs whatever the master: Python workers run the interpreter the
driver runs (otherwise they start whatever ``python3`` is first on the PATH, which may lack kafkalab), the driver
binds to 127.0.0.1 unless a cluster master elsewhere is named, and Spark's console noise stays off unless asked.
"""
from __future__ import annotations

import os
import shutil
import sys
import warnings

# PySpark 4.x warns on every Arrow conversion that it "does not yet fully support pandas >= 3". kafkalab's
# Spark code hands Spark plain Python rows and reads results through Arrow only in its tests and notebooks,
# which the test suite runs with the pandas the product ships (3.x): the warning says nothing actionable.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


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
               .config("spark.sql.session.timeZone", "UTC"))         # kafkalab's times are UTC
    if local:
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("KAFKALAB_SPARK_LOG_LEVEL", "ERROR"))
    return spark
