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

CAPTURE = Path(__file__).parents[2] / "captures" / "admin.pcap"


def run(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
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
])
def test_what_stops_it_is_named_in_one_line_with_exit_2(tmp_path, args, says):
    notes = tmp_path / "notes.txt"
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [a.format(tmp=empty, notes=notes) for a in args]
    notes.write_text("not a capture\n")
    job = run(*args, "-o", tmp_path / "out", timeout=60)
    assert job.returncode == 2
    assert says in job.stderr and len(job.stderr.strip().splitlines()) == 1
