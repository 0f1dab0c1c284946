"""Record-layer decode throughput: kafkalab vs kafka-python's reader.

    python bench/bench_records.py

For each codec and record size (100 B, 1 KiB values) a record set of 20 v2 batches x 500 records is built
once; each reader then decodes it completely, verifying every batch CRC and touching every key/value:
kafkalab's batch objects (what trees and ``cap[n]`` use), kafkalab's column-wise reader (what the records
table uses: rows as Arrow columns, no object per record) and kafka-python's ``MemoryRecords``.
Throughput is records/s and MB/s of *uncompressed* record payload, best of 5 runs.
kafka-python needs lz4/python-snappy/zstandard for compressed batches; missing ones are replaced by their
cramjam equivalents (the same primitive kafkalab uses), so the comparison is about framing/parsing cost.
"""
from __future__ import annotations

import random
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cramjam  # noqa: E402

from kafkalab.protocol.records import build_batch, decode_records, encode_records  # noqa: E402

BATCHES, PER_BATCH, RUNS = 20, 500, 5
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _payload(rng: random.Random, size: int) -> bytes:
    words = [b"kafka", b"record", b"batch", b"offset", b"lab", b"%d" % rng.randrange(10**6)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b" "
    return bytes(out[:size])


def make_set(codec: str, size: int) -> tuple[bytes, int]:
    rng = random.Random(size)
    batches = []
    for b in range(BATCHES):
        recs = [(b"key-%d" % i, _payload(rng, size), [("h", b"v")], 1_700_000_000_000 + i) for i in range(PER_BATCH)]
        batches.append(build_batch(recs, codec=codec, base_offset=b * PER_BATCH))
    return encode_records(batches), BATCHES * PER_BATCH * size


def kafkalab_read(data: bytes) -> int:
    n = 0
    for batch in decode_records(data):
        assert batch.crc_ok and not batch.diagnostics
        for r in batch.records:
            n += len(r.value)
    return n


def columnar_read(data: bytes) -> int:
    """The records table's reader: one Arrow record batch of every record (CRCs checked on the way)."""
    import pyarrow.compute as pc

    from kafkalab.dissect.records_table import _Builder

    builder = _Builder()
    builder.add(1, "response", "t", 0, None, data)
    builder.flush()
    batch = builder.table()
    assert all(batch.column("crc_ok").to_pylist())
    return pc.sum(pc.binary_length(batch.column("value"))).as_py()


def _kafka_python():
    import kafka.codec as codec
    import kafka.record.default_records as dr
    from kafka.record import MemoryRecords

    if codec.snappy is None:
        codec.snappy = types.SimpleNamespace(decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))))
    if not codec.has_lz4():
        codec.lz4 = types.SimpleNamespace()
        dr.lz4_decode = lambda b: bytes(cramjam.lz4.decompress(bytes(b)))
    if codec.zstd is None:
        codec.zstd = types.SimpleNamespace()
        dr.zstd_decode = lambda b: bytes(cramjam.zstd.decompress(bytes(b)))

    def read(data: bytes) -> int:
        n = 0
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            assert batch.validate_crc()
            for r in batch:
                n += len(r.value)
        return n
    return read


def best(fn, data) -> float:
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    kp_read = _kafka_python()
    total = BATCHES * PER_BATCH
    print(f"{BATCHES} batches x {PER_BATCH} records, v2, best of {RUNS}; MB/s = uncompressed value bytes")
    print(f"{'codec':8} {'value':>6} {'wire KB':>8} | {'objects rec/s':>14} {'MB/s':>7} | {'columns rec/s':>14} "
          f"{'MB/s':>7} | {'kafka-python rec/s':>18} {'MB/s':>7} | {'objects':>7} {'columns':>7}")
    for size in (100, 1000):
        for codec in CODECS:
            data, payload = make_set(codec, size)
            assert kafkalab_read(data) == columnar_read(data) == kp_read(data) == payload
            ours, cols, theirs = best(kafkalab_read, data), best(columnar_read, data), best(kp_read, data)
            print(f"{codec:8} {size:>5}B {len(data) / 1024:>8.0f} | {total / ours:>14,.0f} {payload / ours / 1e6:>7.1f} | "
                  f"{total / cols:>14,.0f} {payload / cols / 1e6:>7.1f} | "
                  f"{total / theirs:>18,.0f} {payload / theirs / 1e6:>7.1f} | {theirs / ours:>6.2f}x {theirs / cols:>6.2f}x")


if __name__ == "__main__":
    main()
