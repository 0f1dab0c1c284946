"""Spark fixtures: a local[2] session and a real standalone cluster (a master and two workers on 127.0.0.1),
each started once per test session and stopped at its end."""
from __future__ import annotations

import importlib.util
import os

import pytest

from tests.tools import require, require_tool


def _spark_or_skip():
    """pyspark and Java, else skip (fail under CI): see tests/tools.py."""
    require("pyspark", importlib.util.find_spec("pyspark") is not None, "the spark extra (make test)")
    if not os.environ.get("JAVA_HOME"):
        require_tool("java")


@pytest.fixture(scope="session")
def spark_local():
    _spark_or_skip()
    from kafkalab.spark.session import session
    # one session serves every test; each test's cached reads are let go when it ends (below)
    spark = session("local[2]", "kafkalab-tests", {"spark.driver.memory": "2g"})
    yield spark
    spark.stop()


@pytest.fixture(autouse=True)
def _release_kept_reads(request):
    """Each read keeps its index and decode rows for its DataFrames (see kafkalab.spark.keep); a test's reads are
    let go when it ends, so one session's heap does not fill up over the whole suite."""
    yield
    if "spark_local" in request.fixturenames:
        spark = request.getfixturevalue("spark_local")
        for rdd in spark.sparkContext._jsc.getPersistentRDDs().values():
            rdd.unpersist(False)
        spark.catalog.clearCache()


@pytest.fixture(scope="session")
def spark_cluster_url(tmp_path_factory):
    _spark_or_skip()
    from tests.spark.cluster import StandaloneCluster
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as url:
        yield url
