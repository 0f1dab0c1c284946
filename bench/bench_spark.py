"""kafkalab on Spark beside the single-process engine, on a generated real-shaped capture (bench/capture_gen.py).

    python3 bench/bench_spark.py [--size 20_000_000] [--masters local[1],local[2]] [--files 1]

Writes a capture of about ``--size`` bytes (``--files`` > 1: the same traffic rotated into that many files),
then times ``kafkalab.read_capture`` (all four tables made) in a fresh process, and
``kafkalab.spark.read_capture`` (all four tables collected) on each master, excluding SparkSession start-up
(the second of two runs on one session, so Python workers are warm). Prints seconds, MB/s and the ratios.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ENGINE = """
import sys, time, kafkalab
t = time.perf_counter()
cap = kafkalab.read_capture(sys.argv[1:] if len(sys.argv) > 2 else sys.argv[1])
for table in ("frames", "exchanges", "records", "connections"):
    getattr(cap, table)
print(time.perf_counter() - t)
"""

SPARK = """
import sys, time
from kafkalab.spark import read_capture
from kafkalab.spark.session import session
spark = session(sys.argv[1])
for _ in range(2):
    t = time.perf_counter()
    cap = read_capture(spark, sys.argv[2:])
    for table in ("frames", "exchanges", "records", "connections"):
        cap.table(table).foreach(lambda row: None)
    took = time.perf_counter() - t
print(took)
spark.stop()
"""


def timed(code: str, *args: str) -> float:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20_000_000)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--files", type=int, default=1)
    args = parser.parse_args()
    from bench.capture_gen import write_bulk
    from tests.spark.captures import rotate

    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "bench.pcap"
        write_bulk(path, args.size)
        files = [path] if args.files == 1 else rotate(path, Path(work) / "rotated", args.files)
        megabytes = sum(f.stat().st_size for f in files) / 1e6
        engine = timed(ENGINE, *map(str, files))
        print(f"{megabytes:.1f} MB in {len(files)} file(s)")
        print(f"engine (one process)  {engine:7.2f} s  {megabytes / engine:6.1f} MB/s")
        for master in args.masters.split(","):
            took = timed(SPARK, master, *map(str, files))
            print(f"spark {master:<15} {took:7.2f} s  {megabytes / took:6.1f} MB/s  ({took / engine:.2f}x the engine)")


if __name__ == "__main__":
    main()
