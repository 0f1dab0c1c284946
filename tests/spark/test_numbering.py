"""Frame numbers are counted in parallel: the key rows are sorted over several range partitions, each partition
counted, and every row numbered from its partition's first number, never by one task holding every row, and the
numbers are the engine's."""
from __future__ import annotations

import random

import pytest

import kafkalab
from kafkalab.spark import numbering, read_capture
from tests.spark.captures import interleaved_hosts_pcap
from tests.spark.equality import assert_same_rows


@pytest.fixture(scope="module")
def hosts_capture(tmp_path_factory):
    return interleaved_hosts_pcap(tmp_path_factory.mktemp("hosts") / "hosts.pcap")


def test_numbers_over_several_sorted_partitions_are_the_whole_orders_row_numbers(spark_local):
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    rng = random.Random(7)
    rows = [(g, local, rng.randrange(2), rng.randrange(3), rng.randrange(4), rng.randrange(5))
            for g in range(6) for local in range(300)]
    rng.shuffle(rows)
    keys = spark_local.createDataFrame(rows, numbering._KEYS)
    ranked = keys.repartitionByRange(5, *numbering.ORDER).sortWithinPartitions(*numbering.ORDER).persist()
    try:
        sizes = [n for _, n in ranked.groupBy(F.spark_partition_id()).count().collect()]
        assert len(sizes) == 5 and sum(sizes) == len(rows)
        got = {(r["g"], r["local"]): r["number"] for r in numbering.frame_numbers(ranked).collect()}
    finally:
        ranked.unpersist()
    whole = keys.select("g", "local", F.row_number().over(Window.orderBy(*numbering.ORDER)).alias("number"))
    assert got == {(r["g"], r["local"]): r["number"] for r in whole.collect()}


def kept_plans(monkeypatch) -> list[str]:
    """The physical plans of the frames a read keeps (:mod:`kafkalab.spark.keep`), as they are kept: a local
    checkpoint's own plan shows only its stored rows."""
    from kafkalab.spark import keep as module

    plans, keep = [], module.keep

    def spy(frame):
        plans.append(frame._jdf.queryExecution().executedPlan().toString())
        return keep(frame)

    monkeypatch.setattr(module, "keep", spy)
    return plans


def test_a_capture_whose_frames_span_several_sorted_partitions_has_the_engines_numbers(spark_local, hosts_capture,
                                                                                          monkeypatch):
    from pyspark.sql import functions as F

    seen = []
    counted = numbering.frame_numbers

    def spy(ranked):
        seen.extend(n for _, n in ranked.groupBy(F.spark_partition_id()).count().collect())
        return counted(ranked)

    monkeypatch.setattr(numbering, "frame_numbers", spy)
    monkeypatch.setattr(numbering, "ONE_TASK_FRAMES", 0)        # as if too many frames for one task
    plans = kept_plans(monkeypatch)
    spark_capture = read_capture(spark_local, [hosts_capture], target_bytes=hosts_capture.stat().st_size // 4)
    assert len([n for n in seen if n]) > 1, seen             # the frames' keys sorted over several partitions
    assert_same_rows(spark_capture, kafkalab.read_capture(hosts_capture))
    plan = "\n".join(plans)                                   # the plans of what the read kept: the sorted keys
    assert "rangepartitioning(phase" in plan
    plan += spark_capture.records._jdf.queryExecution().executedPlan().toString()     # and the lookups' cached one
    assert "Window" not in plan                              # a window over the whole order: all rows in one task
    assert "SinglePartition, ENSURE_REQUIREMENTS" not in plan


def test_a_capture_with_few_frames_is_numbered_in_one_task_with_the_engines_numbers(spark_local, hosts_capture,
                                                                                      monkeypatch):
    monkeypatch.setattr(numbering, "frame_numbers", lambda ranked: pytest.fail("sorted over range partitions"))
    plans = kept_plans(monkeypatch)
    spark_capture = read_capture(spark_local, [hosts_capture], target_bytes=hosts_capture.stat().st_size // 4)
    assert_same_rows(spark_capture, kafkalab.read_capture(hosts_capture))
    plan = spark_capture.records._jdf.queryExecution().executedPlan().toString()      # the lookups' cached plan
    assert "rangepartitioning" not in "\n".join(plans + [plan]) and "MapInArrow _one_task_lookups" in plan
