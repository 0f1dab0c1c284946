"""kafkalab.spark.read_capture gives the single-process engine's rows, row for row: on every shipped capture cut
into ranges at arbitrary bytes (mid-record), on several client hosts' interleaved connections, on a capture
rotated into files that connections cross, and with bad files among good ones."""
from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import kafkalab
import kafkalab.dissect.columns
from kafkalab.pcap import CaptureError
from kafkalab.spark import read_capture, register
from tests.spark.captures import (HEAVY_CLIENT, corrupt_gzip, heavy_connection_pcap, interleaved_hosts_pcap,
                                  nested_capture_pcap, rotate, unreadable)
from kafkalab.spark.decode import _py
from tests.spark.equality import TABLES, _plain, assert_same_rows, engine_rows, spark_rows

CAPTURES = sorted((Path(__file__).parents[2] / "captures").glob("*.pcap"))


def test_every_shipped_capture_split_mid_record_gives_the_engines_rows(spark_local):
    def on_spark(capture):
        # three ranges per file, cut at byte offsets that fall inside records
        spark_capture = read_capture(spark_local, [capture], target_bytes=capture.stat().st_size // 3 + 7)
        return {table: spark_rows(spark_capture.table(table), table) for table in TABLES}

    with ThreadPoolExecutor(4) as pool:             # Spark runs the captures' jobs side by side
        results = dict(zip(CAPTURES, pool.map(on_spark, CAPTURES)))
    for capture, got in results.items():
        engine = kafkalab.read_capture(capture)
        for table in TABLES:
            assert got[table] == engine_rows(engine, table), f"{capture.name}: {table} differs"


@pytest.fixture(scope="module")
def hosts_capture(tmp_path_factory):
    return interleaved_hosts_pcap(tmp_path_factory.mktemp("hosts") / "hosts.pcap")


def test_interleaved_client_hosts_are_numbered_as_the_engine_numbers_them(spark_local, hosts_capture):
    spark_capture = read_capture(spark_local, [hosts_capture], target_bytes=hosts_capture.stat().st_size // 4)
    engine = kafkalab.read_capture(hosts_capture)
    assert engine.connections["client"].str.split(":").str[0].nunique() == 3      # three groups on Spark
    assert_same_rows(spark_capture, engine)


def test_a_rotated_capture_is_stitched_in_capture_time_order(spark_local, hosts_capture, tmp_path):
    parts = rotate(hosts_capture, tmp_path / "rotated")
    engine = kafkalab.read_capture(parts)
    assert_same_rows(read_capture(spark_local, str(tmp_path / "rotated")), engine)     # a directory
    assert_same_rows(read_capture(spark_local, str(tmp_path / "rotated" / "*.pcap"), target_bytes=4096), engine,
                     tables=("frames", "connections"))


def test_bad_files_are_named_and_the_good_files_rows_kept(spark_local, tmp_path):
    good = CAPTURES[0]
    shutil.copy(good, tmp_path / "good.pcap")
    data = (Path(CAPTURES[-1])).read_bytes()
    (tmp_path / "truncated.pcap").write_bytes(data[:len(data) * 2 // 3 + 5])
    (tmp_path / "notes.txt").write_text("not a capture\n")
    corrupt_gzip(tmp_path / "broken.pcap.gz", CAPTURES[1])
    socket_file = unreadable(tmp_path / "capture.sock")          # a directory lists regular files only: named
    spark_capture = read_capture(spark_local, [str(tmp_path), str(socket_file)])
    notes = spark_capture.diagnostics
    assert len(notes) == 4, notes                                # one line per bad file, each naming it
    assert any("notes.txt" in n and "not a pcap or pcapng file" in n for n in notes), notes
    assert any("broken.pcap.gz" in n and "damaged" in n for n in notes), notes
    assert any("truncated.pcap" in n and "truncated" in n.split(":", 1)[1] for n in notes), notes
    assert any("capture.sock" in n and n.startswith("cannot read") for n in notes), notes
    engine = kafkalab.read_capture([tmp_path / "good.pcap", tmp_path / "truncated.pcap"])
    assert_same_rows(spark_capture, engine, tables=("frames", "connections"))


def test_an_empty_directory_or_only_bad_files_is_a_clear_error(spark_local, tmp_path):
    with pytest.raises(CaptureError, match="no capture files"):
        read_capture(spark_local, str(tmp_path))
    (tmp_path / "notes.txt").write_text("not a capture\n")
    with pytest.raises(CaptureError, match="not a pcap or pcapng file"):
        read_capture(spark_local, str(tmp_path))


def test_no_java_is_named_before_spark_starts(monkeypatch, tmp_path):
    from kafkalab.spark import SparkUnavailable, session

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))                     # no java on it
    with pytest.raises(SparkUnavailable, match="Spark needs Java 17 or newer"):
        session("local[1]")


def test_the_data_source_names_an_empty_input_and_serves_the_good_files_rows(spark_local, tmp_path):
    register(spark_local)
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match="no capture files in"):
        spark_local.read.format("kafkalab").load(str(tmp_path / "empty")).count()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(CAPTURES[0], mixed / "good.pcap")
    (mixed / "notes.txt").write_text("not a capture\n")
    corrupt_gzip(mixed / "broken.pcap.gz", CAPTURES[1])
    frame = spark_local.read.format("kafkalab").option("table", "frames").load(str(mixed))
    assert spark_rows(frame, "frames") == engine_rows(kafkalab.read_capture(mixed / "good.pcap"), "frames")


def test_the_data_source_serves_the_engines_rows(spark_local, hosts_capture):
    register(spark_local)
    engine = kafkalab.read_capture(hosts_capture)
    for table in ("frames", "records"):
        frame = (spark_local.read.format("kafkalab").option("table", table).option("ports", "9092,19092")
                 .load(str(hosts_capture)))
        assert spark_rows(frame, table) == engine_rows(engine, table)


def test_a_file_whose_ranges_do_not_meet_is_read_whole_with_the_engines_rows(spark_local, tmp_path):
    # the second range starts inside a capture carried as packet data: its reader finds a false record start,
    # the first range's walk over the real lengths does not land there, so the file is indexed again by one task
    from kafkalab.spark.plan import plan

    path, middle = nested_capture_pcap(tmp_path / "nested.pcap")
    target = path.stat().st_size // 2 + 1
    units = plan([path], target).units
    assert [u[2] for u in units] == [24, middle]            # two nominal ranges, cut inside the carried capture
    spark = read_capture(spark_local, [path], target_bytes=target)
    assert spark.units == [(0, str(path), -1, -1)]
    assert_same_rows(spark, kafkalab.read_capture(path))


def test_only_the_file_whose_ranges_do_not_meet_is_read_whole_beside_one_read_in_ranges(spark_local, hosts_capture,
                                                                                          tmp_path):
    # two files of one capture: the nested one's ranges do not meet and it is indexed again whole; the other's
    # ranges meet and are kept as their tasks walked them, with the engine's rows for the two files together
    from kafkalab.spark.plan import plan

    nested, middle = nested_capture_pcap(tmp_path / "nested.pcap")
    good = shutil.copy(hosts_capture, tmp_path / "hosts.pcap")
    target = (nested.stat().st_size - 24) // 6 + 1          # six ranges; the fourth starts in the carried capture
    assert middle in [u[2] for u in plan([nested], target).units] and Path(good).stat().st_size > 2 * target
    spark = read_capture(spark_local, [nested, good], target_bytes=target)
    whole = [u for u in spark.units if u[2] < 0]
    ranged = [u for u in spark.units if u[2] >= 0]
    assert [u[1] for u in whole] == [str(nested)] and {u[1] for u in ranged} == {str(good)} and len(ranged) >= 2
    assert all(a[3] == b[2] for a, b in zip(ranged, ranged[1:]))          # the kept ranges meet
    assert_same_rows(spark, kafkalab.read_capture([nested, good]))


def test_a_heavy_connection_is_cut_into_ranges_decoded_by_separate_tasks_with_the_engines_rows(spark_local, tmp_path):
    path = heavy_connection_pcap(tmp_path / "heavy.pcap")
    engine = kafkalab.read_capture(path)
    heavy = engine.connections[engine.connections["client"] == "%s:%d" % HEAVY_CLIENT]
    share = (heavy["client_bytes"] + heavy["server_bytes"]).sum() / (engine.connections["client_bytes"]
                                                                      + engine.connections["server_bytes"]).sum()
    assert share > 0.8
    spark_capture = read_capture(spark_local, [path])
    key = tuple(sorted([HEAVY_CLIENT, ("10.0.9.9", 9092)]))
    assert spark_capture.split.get(key, 1) > 1            # the plan: its ranges went to separate decode tasks
    assert_same_rows(spark_capture, engine)


def test_smaller_decode_shares_cut_the_heavy_connection_into_more_ranges_with_the_engines_rows(spark_local, tmp_path):
    """What a capture far larger than the cluster's cores gets: more decode tasks, each a bounded share."""
    path = heavy_connection_pcap(tmp_path / "heavy.pcap")
    key = tuple(sorted([HEAVY_CLIENT, ("10.0.9.9", 9092)]))
    default = read_capture(spark_local, [path]).split.get(key, 1)
    payload = int(kafkalab.read_capture(path).connections[["client_bytes", "server_bytes"]].sum().sum())
    spark_capture = read_capture(spark_local, [path], task_bytes=payload // 12)
    assert spark_capture.split.get(key, 1) > default
    assert_same_rows(spark_capture, kafkalab.read_capture(path))


def test_ordered_tables_come_in_the_engines_order_without_sorting(spark_local, hosts_capture):
    """Unordered (the default), rows come decode task by decode task; ``ordered=True`` gives the engine's order
    as Spark returns it, with each frame's records in their order."""
    from pyspark.sql import functions as F

    engine = kafkalab.read_capture(hosts_capture)
    spark_capture = read_capture(spark_local, [hosts_capture], ordered=True)
    for table in TABLES:
        columns = [F.unix_micros(F.col(c.name)).alias(c.name) if c.type == "time" else F.col(c.name)
                   for c in kafkalab.dissect.columns.TABLES[table]]
        got = [tuple(_plain(_py(v)) for v in row) for row in spark_capture.table(table).select(*columns).collect()]
        assert got == engine_rows(engine, table), table


def test_the_session_sets_its_jvm_options_unless_told_otherwise(spark_local):
    from kafkalab.spark.session import C2_DIRECTIVES, DRIVER_JVM_OPTIONS, JVM_OPTIONS

    jvm = spark_local.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(DRIVER_JVM_OPTIONS.replace('"', "").split()) <= set(arguments)
    assert set(JVM_OPTIONS.split()) <= set(spark_local.sparkContext.getConf().get("spark.executor.extraJavaOptions").split())
    # Arrow reads without per-value checks (the rows' equality with the engine's is checked by the other tests)
    assert jvm.java.lang.System.getProperty("arrow.enable_unsafe_memory_access") == "true"
    assert jvm.java.lang.System.getProperty("arrow.enable_null_check_for_get") == "false"
    diagnostics = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    # executors elsewhere: the quick compiler alone; this JVM (local mode's executor): C2 for the row-making
    # methods only, as its directives file says (the JVM would not have started had it not read the file)
    assert "-XX:TieredStopAtLevel=1" in JVM_OPTIONS.split()
    assert diagnostics.getVMOption("CompilerDirectivesFile").getValue() == C2_DIRECTIVES
    assert "org/apache/arrow/*.*" in open(C2_DIRECTIVES).read()
    # the quick compiler alone would shrink the code cache to 48 MB, which a long session fills
    assert int(diagnostics.getVMOption("ReservedCodeCacheSize").getValue()) >= 240 << 20
    # the throughput collector: rows made from Arrow allocate a byte array per key and value
    assert diagnostics.getVMOption("UseParallelGC").getValue() == "true"
    # the JVM and its Python workers talk over Unix sockets: no TCP segments to drop and retransmit
    assert spark_local.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "true"


def test_frame_numbers_too_many_to_broadcast_are_joined_by_spark_with_the_same_rows(spark_local, hosts_capture):
    def plan(capture):
        return capture.records._jdf.queryExecution().executedPlan().toString()

    assert "BroadcastHashJoin" in plan(read_capture(spark_local, [hosts_capture]))     # few frames: broadcast
    spark_local.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")                   # as if too many
    try:
        spark_capture = read_capture(spark_local, [hosts_capture])
        assert "BroadcastHashJoin" not in plan(spark_capture)
        assert_same_rows(spark_capture, kafkalab.read_capture(hosts_capture))
    finally:
        spark_local.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_table_rows_are_made_once_with_no_join_or_projection_over_them(spark_local, hosts_capture):
    """Frame numbers reach the tables' rows in the Python task that makes them: the join is over the decode
    tasks' few batch rows, and nothing in the plan sits over the table rows that would copy them again."""
    spark_capture = read_capture(spark_local, [hosts_capture])
    for table in TABLES:
        lines = spark_capture.table(table)._jdf.queryExecution().executedPlan().toString().splitlines()
        top = lines[1] if lines[0].startswith("AdaptiveSparkPlan") else lines[0]     # a plan with an exchange
        assert top.lstrip("+- ").startswith("MapInArrow numbered"), (table, lines[:3])
        assert "Join" not in top, table


@pytest.mark.parametrize("name", ["lossy.pcap", "produce-consume-gzip.pcap", "admin.pcap"])
def test_a_column_is_declared_nullable_exactly_when_it_holds_a_null(spark_local, name):
    """The tables' schemas say which columns hold nulls, as the decode tasks found them: a column (a list's
    elements, a header's key or value) is nullable where the engine's table holds a null there, and declared
    not nullable otherwise, which spares Spark a null check per value."""
    capture = Path(__file__).parents[2] / "captures" / name
    engine = kafkalab.read_capture(capture)
    spark_capture = read_capture(spark_local, [capture])
    for table in TABLES:
        frame = getattr(engine, table)
        fields = {f.name: f for f in spark_capture.table(table).schema.fields}
        for column in kafkalab.dissect.columns.TABLES[table]:
            values = frame[column.name]
            if column.type in ("list<string>", "headers"):
                assert not values.isna().any()
                assert fields[column.name].nullable is False, (table, column.name)
                items = [item for value in values for item in value]
                if column.type == "headers":
                    struct = fields[column.name].dataType.elementType
                    for k, part in enumerate(("key", "value")):
                        held = any((item[part] if isinstance(item, dict) else item[k]) is None for item in items)
                        assert struct[part].nullable is held, (table, column.name, part)
                else:
                    assert fields[column.name].dataType.containsNull is any(item is None for item in items)
                continue
            held = bool(values.isna().any()) if len(values) else False
            assert fields[column.name].nullable is held, (table, column.name, held)


def test_a_released_read_frees_the_rows_it_kept(spark_local, hosts_capture):
    def held():
        return set(spark_local.sparkContext._jsc.getPersistentRDDs().keys())

    before = held()
    spark_capture = read_capture(spark_local, [hosts_capture])
    assert spark_capture.frames.count() == len(kafkalab.read_capture(hosts_capture).frames)
    assert len(held() - before) == 2                        # the decode rows and the frames' numbers
    spark_capture.release()
    assert held() - before == set() and spark_capture.kept == []
