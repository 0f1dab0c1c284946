"""PySpark 4.x and pandas 3.x, as the spark extra installs them: the versions here are the ones pyproject.toml
allows, every pandas path kafkalab's tables take through PySpark gives the engine's values, and PySpark's
notes about pandas 3 (a blanket "not yet fully supported" FutureWarning and a deprecated ``copy=`` keyword
inside its toPandas) do not reach the user, while pandas' warnings about the user's own code still do.

The paths run in a fresh interpreter with every warning shown (``-W always``), as a user's script or
notebook would: warning filters are process-wide, so the test process's own cannot stand in for them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import kafkalab

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "captures" / "produce-consume-zstd.pcap"

SCRIPT = r"""
import json, sys
import pandas as pd
import kafkalab.spark
from kafkalab.notebook import plots
from kafkalab.spark import read_capture, register, session

spark = session("local[1]", "pandas-versions")
cap = read_capture(spark, sys.argv[1])
frames = cap.frames.toPandas()                              # toPandas through Arrow
records = cap.records.toPandas()
register(spark)                                             # the data source, then toPandas
served = spark.read.format("kafkalab").option("table", "exchanges").load(sys.argv[1]).toPandas()
back = spark.createDataFrame(frames[["frame", "api_name", "latency_ms"]]).toPandas()   # pandas -> Spark -> pandas
doubled = (cap.frames.select("frame")
           .mapInPandas(lambda batches: (b.assign(frame=b["frame"] * 2) for b in batches), "frame long")
           .toPandas())
stats = plots.latency_stats(cap.exchanges)                  # the plots take Spark tables through toPandas
spark.stop()
pd.Series([1, 2]).astype("int64", copy=False)              # the user's own deprecated call: still warned about
print(json.dumps({
    "frames": frames["frame"].tolist(), "apis": frames["api_name"].tolist(),
    "micros": ((frames["time"] - pd.Timestamp(0)) // pd.Timedelta("1us")).tolist(),   # naive, in UTC
    "records": len(records), "values": records["value"].map(bytes).map(len).sum().item(),
    "served": served["request_frame"].tolist(), "back": back["frame"].tolist(),
    "doubled": sorted(doubled["frame"].tolist()), "joins": int(stats.loc["JoinGroup", "requests"])}))
"""


def extra(name: str) -> dict[str, Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {Requirement(s).name: Requirement(s) for s in project["optional-dependencies"][name]}


def test_the_installed_pyspark_pandas_and_pyarrow_are_the_ones_the_spark_extra_allows():
    pytest.importorskip("pyspark")
    for name, requirement in extra("spark").items():
        assert requirement.specifier.contains(version(name)), (name, version(name), str(requirement))
    assert version("pandas").split(".")[0] == "3"          # the combination PySpark warns about is the one tested


def test_pandas_paths_give_the_engines_values_and_no_pyspark_warning(tmp_path):
    pytest.importorskip("pyspark")
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="always")
    run = subprocess.run([sys.executable, "-W", "always", "-c", SCRIPT, str(CAPTURE)], capture_output=True,
                         text=True, timeout=300, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    engine = kafkalab.read_capture(CAPTURE)
    assert got["frames"] == engine.frames["frame"].tolist() and got["apis"] == engine.frames["api_name"].tolist()
    assert got["micros"] == [t.value // 1000 for t in engine.frames["time"]]   # Spark keeps microseconds
    assert got["records"] == len(engine.records)
    assert got["values"] == int(engine.records["value"].map(len).sum())
    assert got["served"] == engine.exchanges["request_frame"].tolist()
    assert got["back"] == got["frames"] and got["doubled"] == [2 * f for f in got["frames"]]
    assert got["joins"] == int((engine.exchanges["api_name"] == "JoinGroup").sum())
    warned = [line for line in run.stderr.splitlines() if "Warning:" in line]
    about_pandas = [line for line in warned if "pyspark" in line and ("pandas" in line or "copy keyword" in line)]
    assert not about_pandas, about_pandas                  # (in the driver and in the Python workers)
    assert any("copy keyword is deprecated" in line for line in warned), warned   # the user's own call
