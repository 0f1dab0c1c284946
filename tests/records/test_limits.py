"""Decompression bombs: tiny batches that claim or produce huge inflated sizes end as diagnostics, quickly
and without the memory."""
from __future__ import annotations

import resource
import struct
import time
import zlib

import cramjam
import crc32c
import pytest

from kafkalab.protocol.records import DEFAULT_MAX_INFLATED, decode_records, trace_records
from kafkalab.protocol.records.compression import zstd_inflated_bound
from kafkalab.protocol.tree import FieldNode

GIB = 1 << 30


def _v2_batch(codec_id: int, payload: bytes, count: int = 1) -> bytes:
    """A v2 batch around an arbitrary compressed payload, CRC correct (written by hand on purpose)."""
    body = struct.pack(">hiqqqhii", codec_id, count - 1, 0, 0, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", 0, 9 + len(body), -1, 2, crc32c.crc32c(body)) + body


def _legacy_wrapper(codec_id: int, payload: bytes) -> bytes:
    body = struct.pack(">bbq", 1, codec_id, 0) + struct.pack(">i", -1) + struct.pack(">i", len(payload)) + payload
    return struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body


def _gzip_gib() -> bytes:
    """1 GiB of zeros as 1024 concatenated gzip members (legal: Java's GZIPInputStream reads them all)."""
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(bytes(1 << 20)) + member.flush()
    return one * 1024


def _zstd_gib() -> bytes:
    """1 GiB of zeros as one zstd frame of RLE blocks (no content size), 32 KiB on the wire."""
    block = 128 << 10
    blocks = [struct.pack("<I", (block << 3) | (1 << 1) | (i == 8191))[:3] + b"\x00" for i in range(8192)]
    return struct.pack("<I", 0xFD2FB528) + bytes((0x00, 0x58)) + b"".join(blocks)  # FHD 0, window 128 KiB


def _lz4_gib() -> bytes:
    block = bytes(cramjam.lz4.compress_block(bytes(4 << 20), store_size=False))
    from kafkalab.protocol.records.lz4frame import header_checksum
    head = b"\x04\x22\x4d\x18\x60\x70"
    frame = head + bytes((header_checksum(head, broken=False),))
    return frame + (struct.pack("<I", len(block)) + block) * 256 + b"\x00" * 4


def _snappy_claim() -> bytes:
    return bytes((0x80, 0x80, 0x80, 0x80, 0x04)) + b"\x00" * 64  # raw snappy declaring 1 GiB


def _xerial_claim() -> bytes:
    chunk = _snappy_claim()
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(chunk)) + chunk


BOMBS = {"gzip": (1, _gzip_gib), "snappy": (2, _snappy_claim), "xerial": (2, _xerial_claim),
         "lz4": (3, _lz4_gib), "zstd": (4, _zstd_gib)}


def test_zstd_rle_frame_is_what_it_claims():
    small = _zstd_gib()[:6] + struct.pack("<I", (1000 << 3) | 2 | 1)[:3] + b"\x07"
    assert bytes(cramjam.zstd.decompress(small)) == b"\x07" * 1000
    assert zstd_inflated_bound(_zstd_gib()) == GIB


@pytest.mark.parametrize("name", list(BOMBS))
def test_bomb_in_v2_batch(name):
    codec_id, make = BOMBS[name]
    data = _v2_batch(codec_id, make())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    (batch,) = decode_records(data)
    elapsed = time.monotonic() - start
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert batch.crc_ok and not batch.records
    assert any("decompression failed" in d and "limit" in d for d in batch.diagnostics), batch.diagnostics
    assert elapsed < 5
    assert grown_mib < DEFAULT_MAX_INFLATED / (1 << 20) * 2.5  # bounded by the cap, not by 1 GiB


@pytest.mark.parametrize("name", list(BOMBS))
def test_small_cap_is_honoured(name):
    codec_id, make = BOMBS[name]
    data = _v2_batch(codec_id, make())
    start = time.monotonic()
    (batch,) = decode_records(data, max_inflated=1 << 20)
    assert any("limit" in d for d in batch.diagnostics) and time.monotonic() - start < 1


def test_bomb_in_legacy_wrapper_and_trace():
    data = _legacy_wrapper(1, _gzip_gib())
    (msg,) = decode_records(data, max_inflated=4 << 20)
    assert msg.crc_ok and not msg.inner and any("limit" in d for d in msg.diagnostics)
    root = FieldNode("r", "records", "records", 0)
    trace_records(data, root, 0, "r", max_inflated=4 << 20)
    deflated = root.find("r[0].deflated")
    assert deflated is not None and deflated.wire_type == "compressed" and not deflated.children
    assert any("limit" in d for d in deflated.diagnostics)


def test_record_count_is_checked_before_use():
    """A header claiming 2^31-1 records in a few bytes costs nothing and is reported."""
    (batch,) = decode_records(_v2_batch(0, b"\x0c\x00\x00\x00\x01\x00\x01\x00\x00", count=0x7FFFFFFF))
    assert any("record count 2147483647 cannot fit" in d for d in batch.diagnostics)


# --- budgets: records per batch, bytes and records per record set, tree nodes ---------------------------

TINY_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"        # 7 bytes: no key, no value, no headers


def _zstd_million() -> bytes:
    """A 671-byte zstd batch whose million records inflate to 7 MB (well under the byte cap)."""
    return _v2_batch(4, bytes(cramjam.zstd.compress(TINY_RECORD * 1_000_000, level=19)), count=1_000_000)


def test_a_batch_claiming_a_million_records_is_not_decoded():
    data = _zstd_million()
    assert len(data) < 700
    start = time.monotonic()
    (batch,) = decode_records(data)
    assert batch.records == () and any("budget exceeded" in d for d in batch.diagnostics), batch.diagnostics
    root = FieldNode("r", "records", "records", 0)
    trace_records(data, root, 0, "r")
    assert sum(1 for _ in root.walk()) < 100
    assert any("budget exceeded" in d for n in root.walk() for d in n.diagnostics)
    assert time.monotonic() - start < 2


def test_inflated_bytes_are_budgeted_across_the_batches_of_a_record_set():
    from kafkalab.protocol.records import build_batch, encode_records
    one = encode_records([build_batch([(None, bytes(100 << 20))], codec="gzip")])
    assert len(one) < 200_000
    batches = decode_records(one * 3)
    decoded = [len(b.records[0].value) if b.records else 0 for b in batches]
    assert decoded == [100 << 20, 100 << 20, 0]                       # 256 MiB per record set by default
    assert any("limit" in d for d in batches[2].diagnostics)


def test_tree_nodes_are_budgeted():
    count = 120_000                                  # a legal 840 KB batch: ten nodes a record
    data = _v2_batch(0, TINY_RECORD * count, count=count)
    root = FieldNode("r", "records", "records", 0)
    trace_records(data, root, 0, "r")
    nodes = sum(1 for _ in root.walk())
    assert nodes <= 100_050, nodes                   # limits.DEFAULT_MAX_NODES, not 1.2 million
    last = root.find("r[0].records.unannotated")
    assert last is not None and last.end == len(data) and "budget exceeded" in last.diagnostics[0]


def _linked_frame(payload: bytes) -> bytes:
    """An lz4 frame with the block-independence flag cleared (legal: such blocks just may not refer back)."""
    from kafkalab.protocol.records.lz4frame import compress, header_checksum
    frame = bytearray(compress(payload, broken_checksum=False))
    frame[4] &= ~0x20
    frame[6] = header_checksum(bytes(frame[:6]), broken=False)
    return bytes(frame)


def test_concatenated_linked_lz4_frames_decode_once_each():
    from kafkalab.protocol.records.lz4frame import decompress
    out, _ = decompress(_linked_frame(b"first ") + _linked_frame(b"second"), 1 << 20, magic=2)
    assert out == b"first second"


def test_linked_lz4_frame_before_a_gigabyte_frame_does_not_inflate_it():
    data = _v2_batch(3, _linked_frame(b"tiny") + _lz4_gib())
    start = time.monotonic()
    (batch,) = decode_records(data, max_inflated=1 << 20)
    assert not batch.records and any("limit" in d for d in batch.diagnostics), batch.diagnostics
    assert time.monotonic() - start < 1


def test_decode_verbose_of_a_tiny_hostile_capture_stays_small(tmp_path):
    """A 1.3 KB pcap (one Produce of the million-record zstd batch) once cost ``kafkalab decode -V`` 65 s and
    8.5 GiB; now the batch is a "budget exceeded" node, under a 1.5 GiB address-space limit."""
    import os
    import socket
    import subprocess
    import sys

    from kafkalab.broker import Broker
    from kafkalab.protocol import encode_request
    body = {"acks": -1, "timeout_ms": 1000, "topic_data": [{"name": "t", "partition_data": [
        {"index": 0, "records": _zstd_million()}]}]}
    pcap = tmp_path / "bomb.pcap"
    with Broker(topics={"t": 1}) as broker:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(encode_request("Produce", 9, body, correlation_id=1, client_id="x"))
            sock.recv(4096)
        broker.write_pcap(pcap)
        port = broker.port
    assert pcap.stat().st_size < 2000
    limit = "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20)); " \
            "from kafkalab.cli import main; sys.exit(main(sys.argv[1:]))"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", limit, "decode", "-V", "-p", str(port), str(pcap)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "budget exceeded" in done.stdout
    assert time.monotonic() - start < 20


def test_inflated_bytes_are_budgeted_across_the_record_sets_of_a_frame():
    """Sixteen partitions of one 127 MiB value each once cost 2.2 GiB: the frame shares one budget."""
    from kafkalab.protocol import decode_request, encode_request
    from kafkalab.protocol.records import build_batch, encode_records
    one = encode_records([build_batch([(None, bytes(100 << 20))], codec="gzip")])
    frame = encode_request("Produce", 9, {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": i, "records": one} for i in range(3)]}]}, correlation_id=1)
    partitions = decode_request(frame).body["topic_data"][0]["partition_data"]
    decoded = [len(p["records"][0].records[0].value) if p["records"][0].records else 0 for p in partitions]
    assert decoded == [100 << 20, 100 << 20, 0]
    assert any("limit" in d for d in partitions[2]["records"][0].diagnostics)
    from kafkalab.protocol.records import set_limits
    previous = set_limits(inflated=400 << 20)                         # the budget is configurable
    try:
        partitions = decode_request(frame).body["topic_data"][0]["partition_data"]
        assert all(len(p["records"][0].records[0].value) == 100 << 20 for p in partitions)
    finally:
        set_limits(**vars(previous))
