"""Capture reading: kafkalab (read_capture + frames table, one process) against tshark, side by side.

    python3 bench/bench_capture.py [--bulk-mb 100] [--chatty-frames 200000] [--other-mb 50] [--stream-mb 500]
                                   [--runs 3]

Writes three captures with TcpPcapWriter (bench/capture_gen.py; cached in --workdir, a temporary directory by
default): bulk produce (Produce v7 requests of about 100 KB, answered), chatty (small Fetch/Heartbeat/
OffsetCommit/Metadata exchanges, one frame per TCP segment), a host's traffic (mostly TLS and HTTP, 5% Kafka:
how fast the Kafka is found among the rest) and, for the streaming check, a long mixed capture.

For each of the first three, each tool runs ``--runs`` times in a fresh process and the best run counts:

* tshark: ``tshark -r FILE -n -d tcp.port==9092,kafka -T fields -e frame.number -e kafka.api_key
  -e kafka.api_version -e kafka.correlation_id -e kafka.client_id -e kafka.topic_name -e kafka.error``, output
  to a file (its api_key values are counted afterwards, to check tshark really dissected every frame);
* kafkalab: ``read_capture(FILE)`` then ``.frames`` (every frame's header and body decoded), timed inside the
  process, plus the garbage collector's deferred pass over what was built (``gc.collect(0)``), so nothing is
  left for later; the whole process (interpreter start and imports included) is timed too.

The command line is timed too, as a tshark user would time it: ``kafkalab decode FILE -T fields -e ...`` with
the same fields, written to a file (whole process).

MB/s is file bytes per second; frames/s is Kafka frames (requests + responses) per second. Wall-clock and CPU
time (user + system) are both shown; ratios are kafkalab over tshark. The streaming check reads the long
capture with ``iter_frames`` into Parquet (``kafkalab.capture.write_frames``), in a fresh process whose peak
RSS (``ru_maxrss``) is reported.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import capture_gen  # noqa: E402

TSHARK_FIELDS = ["frame.number", "kafka.api_key", "kafka.api_version", "kafka.correlation_id", "kafka.client_id",
                 "kafka.topic_name", "kafka.error"]

KAFKALAB_RUN = r"""
import gc, json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from kafkalab.capture import read_capture
import pandas
t1 = time.perf_counter(); c1 = time.process_time()
cap = read_capture(sys.argv[1], progress=False)
table = cap.frames
gc.collect(0)
t2 = time.perf_counter(); c2 = time.process_time()
assert len(table) == len(cap)
print(json.dumps({"frames": len(cap), "seconds": t2 - t1, "cpu": c2 - c1, "import_seconds": t1 - t0,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

STREAM_RUN = r"""
import json, resource, sys, time
from kafkalab.capture import write_frames
t0 = time.perf_counter(); c0 = time.process_time()
count = write_frames(sys.argv[1], sys.argv[2], progress=False)
t1 = time.perf_counter(); c1 = time.process_time()
print(json.dumps({"frames": count, "seconds": t1 - t0, "cpu": c1 - c0,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_tshark(path: Path, out: Path) -> dict:
    command = ["tshark", "-r", str(path), "-n", "-d", "tcp.port==9092,kafka", "-T", "fields"]
    for name in TSHARK_FIELDS:
        command += ["-e", name]
    cpu0, start = child_cpu(), time.perf_counter()
    with open(out, "wb") as sink:
        subprocess.run(command, stdout=sink, stderr=subprocess.DEVNULL, check=True)
    seconds, cpu = time.perf_counter() - start, child_cpu() - cpu0
    pdus = 0
    with open(out, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            api_keys = line.split("\t")[1]
            if api_keys:
                pdus += api_keys.count(",") + 1
    return {"seconds": seconds, "cpu": cpu, "pdus": pdus}


def run_tshark_empty(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["tshark", "-r", str(path), "-n", "-T", "fields", "-e", "frame.number"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def run_kafkalab(path: Path) -> dict:
    cpu0, start = child_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", KAFKALAB_RUN, str(path)], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    result = json.loads(done.stdout)
    result["process_seconds"] = time.perf_counter() - start
    result["process_cpu"] = child_cpu() - cpu0
    return result


CLI_FIELDS = ["frame", "api_key", "api_version", "correlation_id", "client_id", "topics", "error_code"]


def run_cli(path: Path, out: Path) -> dict:
    """``kafkalab decode FILE -T fields -e ...``: the command a tshark user would time against tshark's."""
    command = [sys.executable, "-m", "kafkalab", "decode", str(path), "-p", "9092", "-T", "fields", "-o", str(out)]
    for name in CLI_FIELDS:
        command += ["-e", name]
    cpu0, start = child_cpu(), time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return {"seconds": time.perf_counter() - start, "cpu": child_cpu() - cpu0}


def best(runs: list[dict], key: str = "seconds") -> dict:
    return min(runs, key=lambda r: r[key])


def compare(name: str, path: Path, frames: int, runs: int, workdir: Path) -> dict:
    size = path.stat().st_size
    ours = [run_kafkalab(path) for _ in range(runs)]
    cli = best([run_cli(path, workdir / f"{name}.kafkalab.txt") for _ in range(runs)])
    theirs = [run_tshark(path, workdir / f"{name}.tshark.txt") for _ in range(runs)] if shutil.which("tshark") else []
    k = best(ours)
    assert k["frames"] == frames, (k["frames"], frames)
    print(f"\n{name}: {size / 1e6:.1f} MB, {frames:,} Kafka frames (best of {runs})")
    header = f"  {'':<34} {'seconds':>8} {'MB/s':>8} {'frames/s':>10} {'cpu s':>7}"
    print(header)

    def line(label: str, seconds: float, cpu: float) -> None:
        print(f"  {label:<34} {seconds:>8.3f} {size / seconds / 1e6:>8.1f} {frames / seconds:>10,.0f} {cpu:>7.2f}")

    line("kafkalab read+table (in process)", k["seconds"], k["cpu"])
    kp = best(ours, "process_seconds")
    line("kafkalab whole process", kp["process_seconds"], kp["process_cpu"])
    line("kafkalab decode -T fields (CLI)", cli["seconds"], cli["cpu"])
    result = {"size": size, "frames": frames, "kafkalab": k, "kafkalab_process": kp, "cli": cli}
    if theirs:
        t = best(theirs)
        line("tshark whole process", t["seconds"], t["cpu"])
        empty = workdir / "empty.pcap"
        if not empty.exists():
            empty.write_bytes(path.read_bytes()[:24])
        startup = min(run_tshark_empty(empty) for _ in range(runs))
        print(f"  {'(tshark start-up alone: ' + format(startup, '.3f') + ' s)':<34}")
        if t["pdus"] != frames:
            print(f"  note: tshark reported {t['pdus']:,} Kafka PDUs, not {frames:,}")
        print(f"  ratio (kafkalab in process / tshark): {t['seconds'] / k['seconds']:.2f}x wall, "
              f"{t['cpu'] / k['cpu']:.2f}x cpu")
        print(f"  ratio (kafkalab whole process / tshark): {t['seconds'] / kp['process_seconds']:.2f}x wall, "
              f"{t['cpu'] / kp['process_cpu']:.2f}x cpu")
        print(f"  ratio (kafkalab decode CLI / tshark, same fields): {t['seconds'] / cli['seconds']:.2f}x wall, "
              f"{t['cpu'] / cli['cpu']:.2f}x cpu")
        result["tshark"] = t
    return result


def streaming(path: Path, workdir: Path) -> dict:
    out = workdir / "stream.parquet"
    done = subprocess.run([sys.executable, "-c", STREAM_RUN, str(path), str(out)], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    result = json.loads(done.stdout)
    size = path.stat().st_size
    print(f"\nstreaming {size / 1e6:.0f} MB ({result['frames']:,} frames) to Parquet with iter_frames: "
          f"{result['seconds']:.1f} s ({size / result['seconds'] / 1e6:.0f} MB/s), "
          f"peak RSS {result['maxrss_kb'] / 1024:.0f} MiB (limit 200 MiB), Parquet {out.stat().st_size / 1e6:.1f} MB")
    return result


def cached(path: Path, make) -> dict:
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return json.loads(meta.read_text())
    info = make(path)
    meta.write_text(json.dumps(info))
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bulk-mb", type=float, default=100)
    parser.add_argument("--chatty-frames", type=int, default=200_000)
    parser.add_argument("--other-mb", type=float, default=50, help="size of the capture that is mostly not Kafka")
    parser.add_argument("--stream-mb", type=float, default=500, help="0 skips the streaming check")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="where captures are written and kept (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kafkalab-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    bulk_bytes = int(args.bulk_mb * 1e6)
    started = time.perf_counter()
    bulk = workdir / f"bulk-{bulk_bytes}.pcap"
    chatty = workdir / f"chatty-{args.chatty_frames}.pcap"
    bulk_info = cached(bulk, lambda p: capture_gen.write_bulk(p, bulk_bytes))
    chatty_info = cached(chatty, lambda p: capture_gen.write_chatty(p, args.chatty_frames))
    print(f"captures in {workdir} (written in {time.perf_counter() - started:.1f} s); "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    other_bytes = int(args.other_mb * 1e6)
    other = workdir / f"other-{other_bytes}.pcap"
    other_info = cached(other, lambda p: capture_gen.write_other_traffic(p, other_bytes))
    results = {"bulk": compare("bulk produce", bulk, bulk_info["frames"], args.runs, workdir),
               "chatty": compare("chatty small frames", chatty, chatty_info["frames"], args.runs, workdir),
               "other": compare("a host's traffic, 5% Kafka", other, other_info["frames"], args.runs, workdir)}
    if args.stream_mb:
        stream_bytes = int(args.stream_mb * 1e6)
        long = workdir / f"mixed-{stream_bytes}.pcap"
        cached(long, lambda p: capture_gen.write_mixed(p, stream_bytes))
        results["streaming"] = streaming(long, workdir)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
