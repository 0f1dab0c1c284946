"""Shared fixtures of the record-layer tests."""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture
def kafka_python_reader(monkeypatch):
    """kafka-python's ``MemoryRecords``, able to inflate every codec.

    kafka-python needs python-snappy, lz4, zstandard and xxhash for compressed batches. Where those are not
    installed, their one decompression primitive each is replaced by cramjam's (python-snappy >= 0.7 is a
    cramjam wrapper itself); kafka-python's own framing, xerial and old-Kafka LZ4 logic, CRC checks and
    record parsing stay as they are. xxhash (only for the magic 0 LZ4 header fix-up) falls back to
    kafkalab's xxh32, which test_compression checks against reference vectors.
    """
    import cramjam
    import kafka.codec as codec
    import kafka.record.default_records as dr
    import kafka.record.legacy_records as lr
    from kafka.record import MemoryRecords

    if codec.snappy is None:
        monkeypatch.setattr(codec, "snappy", types.SimpleNamespace(
            decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b)))))
    if not codec.has_lz4():
        def lz4_decode(b):
            return bytes(cramjam.lz4.decompress(bytes(b)))
        monkeypatch.setattr(codec, "lz4", types.SimpleNamespace())
        for mod in (codec, dr, lr):
            monkeypatch.setattr(mod, "lz4_decode", lz4_decode, raising=False)
    if codec.xxhash is None:
        from kafkalab.protocol.records.lz4frame import xxh32

        monkeypatch.setattr(codec, "xxhash", types.SimpleNamespace(
            xxh32=lambda b: types.SimpleNamespace(digest=lambda: xxh32(bytes(b)).to_bytes(4, "big"))))
    if codec.zstd is None:
        monkeypatch.setattr(codec, "zstd", types.SimpleNamespace())
        monkeypatch.setattr(dr, "zstd_decode", lambda b: bytes(cramjam.zstd.decompress(bytes(b))))
    return MemoryRecords


