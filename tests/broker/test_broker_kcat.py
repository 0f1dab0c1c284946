"""kcat (librdkafka 2.0 from apt) against the broker: keyed records with headers, read back by partition, every
codec, offsets for times (kcat cannot set producer timestamps, so the times are the broker-visible CreateTimes)."""
from __future__ import annotations

import subprocess
import time

import pytest
from tests.tools import require_tool

FORMAT = "%p|%o|%k|%s|%h|%T\\n"


def kcat(broker, *args, data: str | None = None) -> str:
    done = subprocess.run([require_tool("kcat"), "-b", broker.bootstrap_servers, "-m", "15", *args], input=data,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def consume(broker, partition: int, *args) -> list[list[str]]:
    out = kcat(broker, "-C", "-t", "t", "-p", str(partition), "-e", "-f", FORMAT, *(args or ("-o", "beginning")))
    return [line.split("|") for line in out.splitlines()]


def test_kcat_keyed_records_with_headers_by_partition(broker):
    for partition in (0, 1):
        lines = "".join(f"key-{partition}-{i}:value-{partition}-{i}\n" for i in range(10))
        kcat(broker, "-P", "-t", "t", "-p", str(partition), "-K", ":", "-H", "source=kcat", "-H", f"p={partition}",
             data=lines)
    for partition in (0, 1):
        got = [row[:5] for row in consume(broker, partition)]
        assert got == [[str(partition), str(i), f"key-{partition}-{i}", f"value-{partition}-{i}",
                        f"source=kcat,p={partition}"] for i in range(10)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kcat_compression_round_trip(broker, codec):
    values = [f"{i:05d}-" * (i % 30 + 1) for i in range(300)]
    kcat(broker, "-P", "-t", "t", "-p", "0", "-z", codec, "-X", "linger.ms=50", data="\n".join(values) + "\n")
    assert [row[3] for row in consume(broker, 0)] == values
    codecs = {b.codec for f in broker.journal if f.api_name == "Produce" and f.kind == "request"
              for t in f.body["topic_data"] for p in t["partition_data"] for b in p["records"]}
    assert codecs == {codec}


def test_kcat_offsets_for_times(broker):
    for i in range(3):
        kcat(broker, "-P", "-t", "t", "-p", "1", data=f"a{i}\nb{i}\n")
        time.sleep(0.02)
    rows = consume(broker, 1)
    stamps = [int(row[5]) for row in rows]
    assert [row[3] for row in rows] == ["a0", "b0", "a1", "b1", "a2", "b2"] and stamps == sorted(stamps)
    target = stamps[2]                                     # the first record of the second run
    first = min(i for i, ts in enumerate(stamps) if ts >= target)
    assert kcat(broker, "-Q", "-t", f"t:1:{target}").split()[-1] == str(first)
    assert [row[3] for row in consume(broker, 1, "-o", f"s@{target}")] == ["a0", "b0", "a1", "b1", "a2", "b2"][first:]
