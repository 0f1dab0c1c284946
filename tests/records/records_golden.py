"""What the golden producers were told to send (tests/records/data/README.md says how the files were made)."""
from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"
TS0 = 1_700_000_000_000

#: (key, value, headers, timestamp) - headers only for magic 2
MESSAGES = [
    (b"key-0", b"value-0" * 10, [("trace-id", b"abc"), ("empty", b""), ("null", None)], TS0),
    (None, b"no key", [], TS0 + 1),
    (b"key-2", None, [("bin", b"\x00\xff")], TS0 + 2),
    (b"", b"", [], TS0 + 3),
    (b"key-4", bytes(range(256)) * 4, [], TS0 + 4),
]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: i for i, name in enumerate(CODECS)}
COMBOS = [(magic, codec) for magic in (0, 1, 2) for codec in CODECS if not (codec == "zstd" and magic < 2)]
PRODUCERS = ("kp", "rdk")  # kafka-python 3.0.12, librdkafka via confluent-kafka

#: the kafka-python transactional batch: producer state it was built with
TXN = {"producer_id": 123456789, "producer_epoch": 7, "base_sequence": 42, "base_offset": 1000}


def messages_for(magic: int):
    """The messages as that format can carry them (no headers before magic 2, no timestamps in magic 0)."""
    return [(k, v, h if magic == 2 else [], ts if magic >= 1 else None) for k, v, h, ts in MESSAGES]


def golden_path(producer: str, magic: int, codec: str) -> Path:
    return DATA / f"{producer}_v{magic}_{codec}.bin"
