"""Regenerate the golden record sets in this directory (see README.md). Run from the repo root with a Python
that has kafka-python 3.0.12 plus lz4, python-snappy, zstandard and xxhash (kafka-python's codec backends),
and confluent-kafka:  python tests/records/data/make_golden.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import records_fakebroker  # noqa: E402
from records_golden import CODEC_IDS, COMBOS, DATA, TXN, golden_path, messages_for  # noqa: E402


def kafka_python_set(magic: int, codec: str, **producer) -> bytes:
    from kafka.record import MemoryRecordsBuilder

    base_offset = producer.pop("base_offset", 0)
    builder = MemoryRecordsBuilder(magic, CODEC_IDS[codec], batch_size=1 << 20, offset=base_offset, **producer)
    for key, value, headers, ts in messages_for(magic):
        assert builder.append(ts, key, value, headers) is not None
    builder.close()
    return bytes(builder.buffer())


def main() -> None:
    DATA.mkdir(exist_ok=True)
    for magic, codec in COMBOS:
        golden_path("kp", magic, codec).write_bytes(kafka_python_set(magic, codec))
        golden_path("rdk", magic, codec).write_bytes(
            records_fakebroker.capture(magic, codec, messages_for(magic)))
    (DATA / "kp_v2_txn_gzip.bin").write_bytes(kafka_python_set(2, "gzip", transactional=True, **TXN))
    print("wrote", len(list(DATA.glob("*.bin"))), "files")


if __name__ == "__main__":
    main()
