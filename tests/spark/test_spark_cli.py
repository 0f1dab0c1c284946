"""``kafkalab spark``: Parquet partitioned by date and API with the engine's rows, and one-line errors with
exit status 2 for what stops it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kafkalab
from tests.spark.captures import corrupt_gzip, unreadable

CAPTURE = Path(__file__).parents[2] / "captures" / "admin.pcap"


def run(*args, timeout=300, **environment):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]), **environment)
    env = {name: value for name, value in env.items() if value is not None}
    return subprocess.run([sys.executable, "-m", "kafkalab", "spark", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_frames_are_written_as_parquet_partitioned_by_date_and_api(tmp_path):
    pytest.importorskip("pyspark")
    job = run(CAPTURE, "-o", tmp_path, "--master", "local[1]", "--table", "frames")
    assert job.returncode == 0, job.stderr[-2000:]
    written = pq.read_table(tmp_path / "frames").to_pandas()
    engine = kafkalab.read_capture(CAPTURE).frames
    assert sorted(written["frame"]) == list(engine["frame"])
    assert set(written["api_name"].astype(str)) == set(engine["api_name"])
    assert {p.name.split("=")[0] for p in (tmp_path / "frames").iterdir() if p.is_dir()} == {"date"}


@pytest.mark.parametrize("args, says", [
    (["{tmp}/missing.pcap"], "no such capture file"),
    (["{tmp}"], "no capture files"),
    (["{notes}"], "not a pcap or pcapng file"),
    ([str(CAPTURE), "--master", "spark://127.0.0.1:1"], "cannot reach the Spark master"),
    (["{sock}"], "cannot read"),
])
def test_what_stops_it_is_named_in_one_line_with_exit_2(tmp_path, args, says):
    notes = tmp_path / "notes.txt"
    empty = tmp_path / "empty"
    empty.mkdir()
    sock = unreadable(tmp_path / "capture.sock")
    args = [a.format(tmp=empty, notes=notes, sock=sock) for a in args]
    notes.write_text("not a capture\n")
    job = run(*args, "-o", tmp_path / "out", timeout=60)
    assert job.returncode == 2
    assert says in job.stderr and len(job.stderr.strip().splitlines()) == 1


def test_no_java_is_named_in_one_line_with_exit_2(tmp_path):
    pytest.importorskip("pyspark")
    job = run(CAPTURE, "-o", tmp_path / "out", timeout=60, PATH=str(tmp_path), JAVA_HOME=None)   # no java
    assert job.returncode == 2
    assert "Spark needs Java 17 or newer" in job.stderr and len(job.stderr.strip().splitlines()) == 1


def test_bad_files_are_named_and_the_good_files_rows_written(tmp_path):
    """A truncated file, a non-capture file, a corrupt gzip and an unreadable file beside a good capture: one
    stderr line naming each, exit 0, and the rows of what could be read."""
    pytest.importorskip("pyspark")
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "good.pcap").write_bytes(CAPTURE.read_bytes())
    lossy = (CAPTURE.parent / "lossy.pcap").read_bytes()
    (inputs / "truncated.pcap").write_bytes(lossy[:len(lossy) * 2 // 3 + 5])
    (inputs / "notes.txt").write_text("not a capture\n")
    corrupt_gzip(inputs / "broken.pcap.gz", CAPTURE.parent / "produce-consume-gzip.pcap")
    sock = unreadable(tmp_path / "capture.sock")
    job = run(inputs, sock, "-o", tmp_path / "out", "--master", "local[1]", "--table", "frames")
    assert job.returncode == 0, job.stderr[-2000:]
    named = [line for line in job.stderr.splitlines() if line.startswith("kafkalab: ")]
    for name in ("truncated.pcap", "notes.txt", "broken.pcap.gz", "capture.sock"):
        assert sum(name in line for line in named) == 1, (name, named)
    written = pq.read_table(tmp_path / "out" / "frames").to_pandas()
    engine = kafkalab.read_capture([inputs / "good.pcap", inputs / "truncated.pcap"]).frames
    assert sorted(written["frame"]) == list(engine["frame"])
    assert sorted(written["summary"]) == sorted(engine["summary"])
