"""Capture reading, whole process (interpreter start and imports included), side by side with tshark.

    python3 bench/bench_capture.py [--bulk-mb 500] [--chatty-mb 50] [--other-mb 0] [--runs 1]
                                   [--workdir DIR] [--json FILE] [--no-records] [--no-stream]

The captures are written by ``bench/capture_gen.py`` (cached in ``--workdir``) and shaped like real traffic:
MSS-sized segments of 96 interleaved connections, Produce and Fetch with JSON record batches (30% gzip, 15%
empty fetches, no repeated Produce requests or Fetch responses), and a chatty one of small frames alone in their
packets. Sizes are selectable (``--bulk-mb 5 --chatty-mb 2`` runs in seconds).

Every case is a fresh process, timed from outside (wall and CPU of the child), with its peak RSS (``wait4``):

* ``tshark -r FILE -n -Y kafka -T fields -e frame.number -e kafka.api_key ...``: the tool a user would pick;
  output to a file; its Kafka PDUs are counted afterwards, to check it really dissected every frame;
* ``read_capture(FILE).frames``: every frame's header and body decoded, as a table;
* ``kafkalab decode FILE -T fields -e ...`` with the same fields as tshark (the command line);
* on the bulk capture, ``read_capture(FILE).records`` (every batch's CRC checked, every record made) against
  a naive pure-Python pass: reassemble, cut frames, decode Produce requests and Fetch responses and
  CRC-check every batch and iterate every record with kafka-python 3's reader;
* ``kafkalab decode`` of a capture holding one frame, against tshark on the same file (start-up);
* streaming the bulk capture to Parquet with ``iter_frames`` (``kafkalab.capture.write_frames``): peak RSS.

Ratios are tshark (or the naive pass) over kafkalab, of wall time and of CPU time: above 1 means kafkalab is
faster. On a machine shared with other work, wall time includes waiting for a CPU; the CPU ratio does not.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
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
CLI_FIELDS = ["frame", "api_key", "api_version", "correlation_id", "client_id", "topics", "error_code"]

FRAMES_RUN = r"""
import sys
from kafkalab.capture import read_capture
cap = read_capture(sys.argv[1], progress=False)
table = cap.frames
assert len(table) == len(cap)
print(len(cap))
"""

RECORDS_RUN = r"""
import sys
from kafkalab.capture import read_capture
print(len(read_capture(sys.argv[1], progress=False).records))
"""

STREAM_RUN = r"""
import sys
from kafkalab.capture import write_frames
print(write_frames(sys.argv[1], sys.argv[2], progress=False))
"""

# The anchor for the records table: what a Python programmer would write in an afternoon with kafka-python 3.
NAIVE_RUN = r"""
import struct, sys
from collections import defaultdict
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.producer import ProduceRequest
from kafka.record import MemoryRecords

data = open(sys.argv[1], "rb").read()
payloads, next_seq = defaultdict(list), {}
pos = 24
while pos + 16 <= len(data):
    stored = struct.unpack_from("<I", data, pos + 8)[0]
    packet = data[pos + 16:pos + 16 + stored]
    pos += 16 + stored
    if packet[12:14] != b"\x08\x00" or packet[23] != 6:
        continue
    ihl = (packet[14] & 15) * 4
    total = struct.unpack_from(">H", packet, 16)[0]
    tcp = 14 + ihl
    sport, dport, seq = struct.unpack_from(">HHI", packet, tcp)
    flags = packet[tcp + 13]
    key = (packet[26:30], sport, packet[30:34], dport)
    if flags & 2:
        next_seq[key] = (seq + 1) & 0xFFFFFFFF
        continue
    payload = packet[tcp + (packet[tcp + 12] >> 4) * 4:14 + total]
    if payload and next_seq.get(key) == seq:        # in order: keep (retransmissions and holes: dropped)
        payloads[key].append(payload)
        next_seq[key] = (seq + len(payload)) & 0xFFFFFFFF


def frames(chunks):
    stream, at = b"".join(chunks), 0
    while at + 4 <= len(stream):
        size = struct.unpack_from(">i", stream, at)[0]
        if at + 4 + size > len(stream):
            break
        yield stream[at + 4:at + 4 + size]
        at += 4 + size


def check(records):
    global count
    batches = MemoryRecords(records)
    while batches.has_next():
        batch = batches.next_batch()
        assert batch.validate_crc()
        for record in batch:
            count += 1
            record.value


count = 0
for key in list(payloads):
    if key[3] != 9092:
        continue
    asked = {}
    for frame in frames(payloads[key]):
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        asked[correlation_id] = (api_key, version)
        if api_key == 0:
            for topic in ProduceRequest.decode(frame, version=version, header=True).topic_data:
                for partition in topic.partition_data:
                    if partition.records:
                        check(partition.records)
    back = (key[2], key[3], key[0], key[1])
    for frame in frames(payloads.get(back, [])):
        api_key, version = asked.get(struct.unpack_from(">i", frame)[0], (None, None))
        if api_key == 1:
            for topic in FetchResponse.decode(frame, version=version, header=True).responses:
                for partition in topic.partitions:
                    if partition.records:
                        check(partition.records)
print(count)
"""


def run(command: list[str], out: Path | None = None) -> dict:
    """Run a process to the end; wall seconds, CPU seconds and peak RSS of that process alone."""
    start = time.perf_counter()
    with open(out or os.devnull, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        error = process.stderr.read().decode(errors="replace")
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise RuntimeError(f"{command[:3]} failed ({process.returncode}): {error[-2000:]}")
    return {"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024}


def python(script: str, *args) -> list[str]:
    return [sys.executable, "-c", script, *map(str, args)]


def tshark(path: Path) -> list[str]:
    command = ["tshark", "-r", str(path), "-n", "-d", "tcp.port==9092,kafka", "-Y", "kafka", "-T", "fields"]
    for name in TSHARK_FIELDS:
        command += ["-e", name]
    return command


def cli(path: Path) -> list[str]:
    command = [sys.executable, "-m", "kafkalab", "decode", str(path), "-p", "9092", "-T", "fields"]
    for name in CLI_FIELDS:
        command += ["-e", name]
    return command


def tshark_pdus(out: Path) -> int:
    pdus = 0
    with open(out, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            api_keys = line.split("\t")[1]
            if api_keys:
                pdus += api_keys.count(",") + 1
    return pdus


def best(command: list[str], runs: int, out: Path | None = None) -> dict:
    return min((run(command, out) for _ in range(runs)), key=lambda r: r["seconds"])


class Table:
    """The results, printed as they come and kept for ``--json``."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        print(f"{'case':<44} {'seconds':>8} {'cpu s':>7} {'MB/s':>7} {'peak MiB':>9} {'ratio':>7} {'cpu ratio':>9}")

    def add(self, case: str, result: dict, size: int | None = None, anchor: dict | None = None) -> None:
        ratio = anchor["seconds"] / result["seconds"] if anchor else None
        cpu_ratio = anchor["cpu"] / result["cpu"] if anchor else None
        row = {"case": case, **result, "ratio": ratio, "cpu_ratio": cpu_ratio}
        self.rows.append(row)
        rate = f"{size / result['seconds'] / 1e6:7.1f}" if size else f"{'':>7}"
        shown = f"{ratio:6.2f}x {cpu_ratio:8.2f}x" if ratio else ""
        print(f"{case:<44} {result['seconds']:8.2f} {result['cpu']:7.2f} {rate} {result['rss_mib']:9.0f} {shown}",
              flush=True)


def frames_case(table: Table, name: str, path: Path, info: dict, runs: int, workdir: Path) -> None:
    size = path.stat().st_size
    print(f"-- {name}: {size / 1e6:.0f} MB, {info.get('packets', 0):,} packets, {info['frames']:,} Kafka frames")
    theirs = None
    if shutil.which("tshark"):
        out = workdir / f"{path.stem}.tshark.txt"
        theirs = best(tshark(path), runs, out)
        pdus = tshark_pdus(out)
        table.add("tshark -Y kafka -T fields", theirs, size)
        if pdus != info["frames"]:
            print(f"   note: tshark reported {pdus:,} Kafka PDUs, not {info['frames']:,}")
    counted = workdir / f"{path.stem}.count.txt"
    table.add("read_capture(f).frames", best(python(FRAMES_RUN, path), runs, counted), size, theirs)
    got = int(counted.read_text())
    if got != info["frames"]:
        print(f"   note: kafkalab read {got:,} frames, not {info['frames']:,}")
    table.add("kafkalab decode -T fields (same fields)", best(cli(path), runs, workdir / "cli.txt"), size, theirs)


def records_case(table: Table, path: Path, runs: int, workdir: Path) -> None:
    size = path.stat().st_size
    naive_out, ours_out = workdir / "naive.txt", workdir / "records.txt"
    naive = best(python(NAIVE_RUN, path), runs, naive_out)
    table.add("naive pass (kafka-python 3 reader)", naive, size)
    table.add("read_capture(f).records", best(python(RECORDS_RUN, path), runs, ours_out), size, naive)
    print(f"   records: naive pass {int(naive_out.read_text()):,}, kafkalab {int(ours_out.read_text()):,}")


def startup_case(table: Table, runs: int, workdir: Path) -> None:
    """One exchange on one connection: what is left is start-up."""
    small = workdir / "one-frame.pcap"
    if not small.exists():
        from kafkalab.pcap import TcpPcapWriter
        from kafkalab.protocol import encode_request

        with TcpPcapWriter(small, mss=capture_gen.ETHERNET_MSS) as writer:
            conn = writer.open_connection(capture_gen._client(0), capture_gen.SERVER, capture_gen.START)
            writer.send(conn, True, encode_request("ApiVersions", 3, {"client_software_name": "bench",
                                                                      "client_software_version": "1"},
                                                   correlation_id=1, client_id="bench"), capture_gen.START)
    print("-- start-up: a capture of one frame")
    theirs = best(tshark(small), max(runs, 3)) if shutil.which("tshark") else None
    if theirs:
        table.add("tshark (one frame)", theirs)
    table.add("kafkalab decode (one frame)", best([sys.executable, "-m", "kafkalab", "decode", str(small)],
                                                   max(runs, 3)), None, theirs)


def stream_case(table: Table, path: Path, workdir: Path) -> None:
    print("-- streaming the bulk capture to Parquet (iter_frames)")
    table.add("write_frames(f, parquet)", run(python(STREAM_RUN, path, workdir / "stream.parquet")),
              path.stat().st_size)


def cached(path: Path, make) -> dict:
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return json.loads(meta.read_text())
    started = time.perf_counter()
    info = make(path)
    print(f"   wrote {path.name} in {time.perf_counter() - started:.0f} s")
    meta.write_text(json.dumps(info))
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bulk-mb", type=float, default=500)
    parser.add_argument("--chatty-mb", type=float, default=50)
    parser.add_argument("--other-mb", type=float, default=0, help="a host's traffic, 5%% Kafka (0: skipped)")
    parser.add_argument("--runs", type=int, default=1, help="runs per case; the fastest counts")
    parser.add_argument("--no-records", action="store_true", help="skip the records table against the naive pass")
    parser.add_argument("--no-stream", action="store_true", help="skip streaming to Parquet")
    parser.add_argument("--workdir", type=Path, help="where captures are written and kept (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kafkalab-bench-"))
    # an installed package has its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE set would compile
    # every module again in every timed process (more than the whole start-up of `kafkalab decode`)
    compileall.compile_dir(ROOT / "kafkalab", quiet=1)
    workdir.mkdir(parents=True, exist_ok=True)
    bulk_bytes, chatty_bytes = int(args.bulk_mb * 1e6), int(args.chatty_mb * 1e6)
    bulk = workdir / f"bulk-{bulk_bytes}.pcap"
    chatty = workdir / f"chatty-{chatty_bytes}.pcap"
    bulk_info = cached(bulk, lambda p: capture_gen.write_bulk(p, bulk_bytes))
    chatty_info = cached(chatty, lambda p: capture_gen.write_chatty(p, chatty_bytes))
    print(f"captures in {workdir}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    table = Table()
    frames_case(table, "bulk", bulk, bulk_info, args.runs, workdir)
    frames_case(table, "chatty", chatty, chatty_info, args.runs, workdir)
    if args.other_mb:
        other = workdir / f"other-{int(args.other_mb * 1e6)}.pcap"
        info = cached(other, lambda p: capture_gen.write_other_traffic(p, int(args.other_mb * 1e6)))
        frames_case(table, "a host's traffic, 5% Kafka", other, info, args.runs, workdir)
    if not args.no_records:
        records_case(table, bulk, args.runs, workdir)
    startup_case(table, args.runs, workdir)
    if not args.no_stream:
        stream_case(table, bulk, workdir)
    if args.json:
        args.json.write_text(json.dumps(table.rows, indent=1))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
