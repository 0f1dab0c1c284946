"""kafkalab on Spark beside the single-process engine and tshark, on a generated real-shaped capture
(bench/capture_gen.py).

    python3 bench/bench_spark.py [--size 20_000_000] [--files 1] [--masters local[1],local[2]] [--dir DIR]
                                 [--tshark] [--driver-memory 6g]

Writes a capture of about ``--size`` bytes into ``--dir`` (``--files`` > 1: the same traffic rotated into that
many files; kept and reused when present), then measures, each in a fresh process:

* the engine: ``kafkalab.read_capture`` with all four tables made (pandas);
* kafkalab on Spark on each master: ``kafkalab.spark.read_capture`` with all four tables materialised in the
  JVM (``write.format("noop")``, no row goes to Python), excluding SparkSession start-up (a read of a small
  shipped capture first starts the Python workers and loads the code; then the timed read);
* with ``--tshark``, the anchor: ``xargs -P2 tshark -r F -Y kafka -T fields -e kafka.api_key ...`` over the
  files (rotated captures: one tshark per file, two at a time).

For each: wall seconds, CPU seconds (the engine and tshark: the process tree's, from ``wait4``; Spark: the
driver's, the JVM's and the Python workers' during the read, sampled from /proc every 0.25 s), MB/s, and the peak RSS of the driver (the Python process; for Spark also the
JVM's, which in local mode holds the executor). The machine may be shared: CPU time is the steadier number.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ENGINE = """
import resource, sys, time, kafkalab
t = time.perf_counter()
cap = kafkalab.read_capture(sys.argv[1:] if len(sys.argv) > 2 else sys.argv[1])
for table in ("frames", "exchanges", "records", "connections"):
    getattr(cap, table)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, 0, 0)
"""

SPARK = """
import os, resource, sys, threading, time
from kafkalab.spark import read_capture
from kafkalab.spark.session import session
spark = session(sys.argv[1], "kafkalab bench", {"spark.driver.memory": sys.argv[2]})
me, tick = os.getpid(), os.sysconf("SC_CLK_TCK")
jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
peak, cpu, stop = [0], {}, [False]

def tree():                     # this process's descendants: the JVM, the Python daemon and its workers
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                parent[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
            except OSError:
                pass
    def ours(pid):
        while pid in parent and pid != me:
            pid = parent[pid][0]
        return pid == me
    return {pid: used for pid, (_, used) in parent.items() if pid != me and ours(pid)}

def watch():                    # the JVM's resident memory and the tree's CPU time, sampled
    while not stop[0]:
        for pid, used in tree().items():
            cpu[pid] = max(cpu.get(pid, 0), used)
        try:
            with open(f"/proc/{jvm}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        peak[0] = max(peak[0], int(line.split()[1]) * 1024)
        except OSError:
            pass
        time.sleep(0.25)

def read(paths):
    cap = read_capture(spark, paths)
    for table in ("frames", "exchanges", "records", "connections"):
        cap.table(table).write.format("noop").mode("overwrite").save()

read([os.path.join(sys.argv[3], "captures", "admin.pcap")])     # warm-up: Python workers started, code loaded
base = {pid: used for pid, used in tree().items()}
mine = resource.getrusage(resource.RUSAGE_SELF)
threading.Thread(target=watch, daemon=True).start()
t = time.perf_counter()
read(sys.argv[4:])
took = time.perf_counter() - t
time.sleep(0.3)
stop[0] = True
after = resource.getrusage(resource.RUSAGE_SELF)
used = sum(cpu[pid] - base.get(pid, 0) for pid in cpu) + after.ru_utime - mine.ru_utime + after.ru_stime - mine.ru_stime
print(took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, peak[0], used)
spark.stop()
"""

TSHARK_FIELDS = ["kafka.api_key", "kafka.api_version", "kafka.correlation_id", "kafka.client_id",
                 "kafka.topic_name"]


def measured(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process tree, stdout) of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{command[:3]} failed:\n{out.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def capture_files(directory: Path, size: int, files: int) -> list[Path]:
    from bench.capture_gen import write_bulk
    from tests.spark.captures import rotate

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"bench-{size}.pcap"
    if not path.exists():
        write_bulk(path, size)
    if files == 1:
        return [path]
    rotated = directory / f"bench-{size}-x{files}"
    found = sorted(rotated.glob("*.pcap")) if rotated.exists() else []
    return found if len(found) == files else rotate(path, rotated, files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "kafkalab-bench"))
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--tshark", action="store_true", help="also time the tshark anchor")
    parser.add_argument("--no-engine", action="store_true")
    args = parser.parse_args()
    files = capture_files(Path(args.dir), args.size, args.files)
    megabytes = sum(f.stat().st_size for f in files) / 1e6
    print(f"{megabytes:.1f} MB in {len(files)} file(s); load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{'reader':<24} {'wall s':>8} {'cpu s':>8} {'MB/s':>7} {'driver RSS MB':>14} {'JVM RSS MB':>11}")

    def row(name, wall, cpu, rss=0, jvm=0):
        print(f"{name:<24} {wall:8.1f} {cpu:8.1f} {megabytes / wall:7.1f} {rss / 1e6:14.0f} {jvm / 1e6:11.0f}",
              flush=True)

    engine = None
    if not args.no_engine:
        wall, cpu, out = measured([sys.executable, "-c", ENGINE, *map(str, files)])
        took, rss, _, _ = map(float, out.split()[-4:])
        engine = took
        row("engine (one process)", took, cpu, rss)
    for master in args.masters.split(","):
        wall, cpu, out = measured([sys.executable, "-c", SPARK, master, args.driver_memory, ROOT, *map(str, files)])
        took, rss, jvm, used = map(float, out.split()[-4:])
        row(f"spark {master}", took, used, rss, jvm)
        if engine:
            print(f"{'':<24} {took / engine:.2f}x the engine's wall time")
    if args.tshark:
        fields = [arg for field in TSHARK_FIELDS for arg in ("-e", field)]
        command = ["sh", "-c", 'printf "%s\\n" "$@" | xargs -P2 -I{} tshark -r {} -Y kafka -T fields '
                   + " ".join(fields) + " > /dev/null", "tshark", *map(str, files)]
        wall, cpu, _ = measured(command)
        row("tshark fields, xargs -P2", wall, cpu)


if __name__ == "__main__":
    main()
