"""Spark fixtures: a local[2] session and a real standalone cluster (a master and two workers on 127.0.0.1),
each started once per test session and stopped at its end."""
from __future__ import annotations

import os
import shutil

import pytest


def _spark_or_skip():
    missing = []
    try:
        import pyspark  # noqa: F401
    except ImportError:
        missing.append("pyspark (pip install '.[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing.append("Java 17 (.ci/run: apt-get install openjdk-17-jre-headless)")
    if missing:
        if os.environ.get("CI"):
            pytest.fail("Spark tests need " + " and ".join(missing))
        pytest.skip("Spark tests need " + " and ".join(missing))


@pytest.fixture(scope="session")
def spark_local():
    _spark_or_skip()
    from kafkalab.spark.session import session
    spark = session("local[2]", "kafkalab-tests")
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def spark_cluster_url(tmp_path_factory):
    _spark_or_skip()
    from tests.spark.cluster import StandaloneCluster
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as url:
        yield url
