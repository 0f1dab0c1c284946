"""Rebuild the committed seed corpus of the fuzz targets: ``python tests/fuzz/make_corpus.py``.

Seeds per layer under ``corpus/<layer>/``: real client frames from the golden corpus (codec, broker), the
record sets inside them (records), small captures of them (pcap), and every hostile input that once broke
kafkalab (named ``bug-*``). A new bug found by fuzzing goes in as a ``bug-*`` seed, through this script or by
hand (the fuzz targets read every file of the directory).
"""
from __future__ import annotations

import json
import random
import struct
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
sys.path[:0] = [str(TESTS.parent), str(TESTS), str(TESTS / "broker")]

import cramjam  # noqa: E402
from hostile_inputs import (gzip_wrapper, legacy_message, million_message_wrapper, produce_body,  # noqa: E402
                            v2_batch, v2_records)

from kafkalab.protocol import decode_request, encode_request  # noqa: E402

CORPUS = HERE / "corpus"
TINY_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"


def golden_frames(max_size: int = 3000) -> dict[tuple[str, str], tuple[dict, bytes]]:
    """The largest golden frame under ``max_size`` of each (API, direction)."""
    chosen: dict[tuple[str, str], tuple[dict, bytes]] = {}
    for entry in json.loads((TESTS / "golden" / "manifest.json").read_text())["files"]:
        key = (entry["api_name"], entry["direction"])
        if entry["size"] < max_size and (key not in chosen or entry["size"] > chosen[key][0]["size"]):
            chosen[key] = (entry, (TESTS / "golden" / entry["file"]).read_bytes())
    return chosen


def golden_produce_requests(max_size: int = 4000):
    """One Produce request per topic (the golden topics are named after client and codec)."""
    seen = set()
    for entry in json.loads((TESTS / "golden" / "manifest.json").read_text())["files"]:
        if entry["api_name"] != "Produce" or entry["direction"] != "request" or entry["size"] > max_size:
            continue
        topics = tuple(entry["topics_mentioned"])
        if topics not in seen:
            seen.add(topics)
            yield entry, (TESTS / "golden" / entry["file"]).read_bytes()


def hostile_record_sets() -> dict[str, bytes]:
    """Every record set that once broke kafkalab (issue 14), small enough to commit."""
    linked = bytearray(_lz4_frame(b"tiny"))
    linked[4] &= ~0x20
    from kafkalab.protocol.records.lz4frame import header_checksum
    linked[6] = header_checksum(bytes(linked[:6]), broken=False)
    return {
        "bug-rewinding-delta": v2_batch(v2_records([b"x"]), 1, last_offset_delta=-3),
        "bug-leaping-delta": v2_batch(v2_records([b"x"]), 1, last_offset_delta=2**31 - 1),
        "bug-zstd-million-records": v2_batch(bytes(cramjam.zstd.compress(TINY_RECORD * 1_000_000, level=19)),
                                             1_000_000, codec=4),
        "bug-legacy-inner-crc": gzip_wrapper(legacy_message(b"good") + legacy_message(b"bad", crc=12345)),
        "bug-legacy-2k-messages": million_message_wrapper(2_000),
        "bug-linked-lz4-then-more": v2_batch(bytes(linked) + _lz4_frame(b"more"), 1, codec=3),
        "bug-magic0-wrapper-2k-messages": gzip_wrapper(legacy_message(b"", magic=0) * 2_000, magic=0),
        "legacy-wrapper-5": gzip_wrapper(b"".join(legacy_message(b"v%d" % i, offset=i) for i in range(5))),
    }


def _lz4_frame(payload: bytes) -> bytes:
    from kafkalab.protocol.records.lz4frame import compress
    records = v2_records([payload])
    return compress(records, broken_checksum=False)


def write(layer: str, name: str, data: bytes) -> None:
    (CORPUS / layer).mkdir(parents=True, exist_ok=True)
    (CORPUS / layer / f"{name}.bin").write_bytes(data)


def main() -> None:
    frames = golden_frames()
    for (api, direction), (entry, raw) in sorted(frames.items()):
        write("codec", f"{entry['api_key']}-{entry['api_version']}-{direction}-{api}", raw)
        if direction == "request":
            write("broker", f"{api}-v{entry['api_version']}", raw)
    for entry, raw in golden_produce_requests():
        for topic in decode_request(raw, records="raw").body.get("topic_data", ()):
            for p in topic["partition_data"]:
                if p["records"]:
                    write("records", f"golden-{entry['client']}-{topic['name']}-{p['index']}", p["records"])
    for name, records in hostile_record_sets().items():
        write("records", name, records)
        if len(records) < 4000:
            write("broker", f"{name}-produce", encode_request("Produce", 9 if name.startswith("bug-r") else 3,
                                                              produce_body(records), correlation_id=1))
    write("broker", "bug-metadata-400-topics", encode_request(
        "Metadata", 12, {"topics": [{"name": f"auto-{i}"} for i in range(400)], "allow_auto_topic_creation": True},
        correlation_id=1))
    write("broker", "bug-create-huge-topic", encode_request("CreateTopics", 7, {"topics": [
        {"name": "huge", "num_partitions": 100_000, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 1000, "validate_only": False}, correlation_id=1))
    write("broker", "bug-announce-100mb", struct.pack(">i", 100 << 20) + b"\x00" * 5)
    _captures()


def _captures() -> None:
    from capture.builders import write_golden_pcap
    from capture.test_bulk_reader import as_pcapng
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "small.pcap"
        write_golden_pcap(path, clients=["kcat"])
        data = path.read_bytes()
    write("pcap", "golden-kcat", data)
    ng = bytearray(as_pcapng(data, random.Random(1)))
    write("pcap", "golden-kcat-ng", bytes(ng))
    pos = 0
    while struct.unpack_from("<I", ng, pos)[0] != 6:
        pos += struct.unpack_from("<I", ng, pos + 4)[0]
    ng[pos + 15] ^= 0x80
    write("pcap", "bug-pcapng-timestamp-out-of-range", bytes(ng))


if __name__ == "__main__":
    main()
