"""On a real standalone cluster (a master and two workers on 127.0.0.1), a rotated capture of several client
hosts decodes to the single-process engine's rows. The job runs in its own process: a session made in the
test process would be reused by getOrCreate."""
from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

import kafkalab
from tests.spark.captures import interleaved_hosts_pcap, rotate
from tests.spark.equality import TABLES, engine_rows

JOB = """
import pickle, sys
from kafkalab.spark import read_capture
from kafkalab.spark.session import session
from tests.spark.equality import TABLES, spark_rows
spark = session(sys.argv[1], "kafkalab-cluster-read", {"spark.executor.memory": "512m"})
capture = read_capture(spark, sys.argv[2], target_bytes=4096)
rows = {table: spark_rows(capture.table(table), table) for table in TABLES}
with open(sys.argv[3], "wb") as out:
    pickle.dump({"master": spark.sparkContext.master, "rows": rows}, out)
spark.stop()
"""


@pytest.mark.slow
def test_a_rotated_capture_decodes_to_the_engines_rows_on_a_standalone_cluster(spark_cluster_url, tmp_path):
    parts = rotate(interleaved_hosts_pcap(tmp_path / "hosts.pcap"), tmp_path / "rotated")
    answer = tmp_path / "answer.pickle"
    job = subprocess.run([sys.executable, "-c", JOB, spark_cluster_url, str(tmp_path / "rotated"), str(answer)],
                         capture_output=True, text=True, timeout=400)
    assert job.returncode == 0, job.stderr[-3000:]
    result = pickle.loads(answer.read_bytes())
    assert result["master"] == spark_cluster_url
    engine = kafkalab.read_capture(parts)
    for table in TABLES:
        assert result["rows"][table] == engine_rows(engine, table), table
