"""Byte ranges of one capture file, each resolved and walked by a different Spark task on its own (as the index
tasks do), partition the file's records exactly: in local mode and on a real standalone cluster."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from kafkalab.pcap.split import ByteRange, plan_ranges, ranges_meet, read_layout
from kafkalab.spark.packets import index_unit
from tests.capture.builders import pcap_bytes
from tests.capture.test_pcap_split import true_starts


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    rng = random.Random(7)
    packets = [rng.randbytes(rng.choice([60, 1514, rng.randrange(1, 9000)])) for _ in range(3000)]
    path = tmp_path_factory.mktemp("ranges") / "big.pcap"
    path.write_bytes(pcap_bytes([(1_700_000_000 + i * 0.01, p) for i, p in enumerate(packets)]))
    return path


def walks_on(spark, path, pieces):
    """Each range's resolved start and where its walk stopped, found by the index task's own code."""
    layout = read_layout(path)
    nominal = plan_ranges(layout, -(-layout.size // pieces))
    return nominal, spark.sparkContext.parallelize(nominal, len(nominal)).map(
        lambda r: index_unit((0, r.path, r.start, r.end))[2]).collect()


def assert_partition(nominal, walks, path):
    assert len(walks) == len(nominal) > 1 and ranges_meet(nominal, walks)
    starts = true_starts(path.read_bytes())
    assert sorted(s for start, end in walks for s in starts if start <= s < end) == starts


def test_ranges_resolved_by_separate_local_tasks_partition_the_records(spark_local, capture):
    assert_partition(*walks_on(spark_local, capture, 8), capture)


CLUSTER_JOB = """
import json, os, sys, time
from kafkalab.pcap.split import plan_ranges, read_layout
from kafkalab.spark.packets import index_unit
from kafkalab.spark.session import session
spark = session(sys.argv[1], "kafkalab-cluster-test", {"spark.executor.memory": "512m"})
status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
deadline = time.monotonic() + 120
while status().size() < 3 and time.monotonic() < deadline:      # the driver and both workers' executors
    time.sleep(0.5)
layout = read_layout(sys.argv[2])
nominal = plan_ranges(layout, -(-layout.size // 8))
rows = spark.sparkContext.parallelize(nominal, 8).map(
    lambda r: (index_unit((0, r.path, r.start, r.end))[2], os.getpid())).collect()
print(json.dumps({"master": spark.sparkContext.master, "pids": len({pid for _, pid in rows}),
                  "walks": [list(w) for w, _ in rows], "nominal": [[r.start, r.end] for r in nominal]}))
spark.stop()
"""


@pytest.mark.slow
def test_ranges_resolved_on_a_standalone_cluster_partition_the_records(spark_cluster_url, capture):
    job = subprocess.run([sys.executable, "-c", CLUSTER_JOB, spark_cluster_url, str(capture)], capture_output=True,
                         text=True, timeout=300)
    assert job.returncode == 0, job.stderr[-3000:]
    answer = json.loads(job.stdout.strip().splitlines()[-1])
    assert answer["master"] == spark_cluster_url
    assert answer["pids"] >= 2                  # the tasks ran in more than one worker process
    nominal = [ByteRange(str(capture), start, end) for start, end in answer["nominal"]]
    assert_partition(nominal, [tuple(w) for w in answer["walks"]], capture)
