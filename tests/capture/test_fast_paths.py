"""The fast paths against the general ones they stand in for: the classic-pcap reader against the record walker
plus the general packet decoder, lazily decoded record batches against eager decoding, the generated facts
functions against the reference walk, the capture decoder against the codec's entry points, and the Arrow
frames table against the pandas one. Each pair must agree exactly."""
from __future__ import annotations

import io
import random
import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafkalab.capture import iter_frames, read_capture
from kafkalab.dissect import decoding
from kafkalab.dissect.facts import body_facts, body_layout, first_error, record_count, topic_partitions
from kafkalab.dissect.frames_table import frames_arrow, frames_table
from kafkalab.pcap import PacketDecoder, TcpPcapWriter, iter_link_records, read_packets
from kafkalab.protocol import decode_request, decode_response
from kafkalab.protocol.records import build_batch, decode_records, encode_records
from kafkalab.protocol.records.batch import decode as decode_batch
from kafkalab.protocol.records.tracing import Trace
from kafkalab.protocol.tree import FieldNode

from tests.capture.builders import golden_manifest, pcap_bytes, write_golden_pcap, GOLDEN

# ---------------------------------------------------------------- pcap

ETH = bytes(12) + b"\x08\x00"


def _ipv4_tcp(payload: bytes, *, sport=40000, dport=9092, seq=1, flags=0x18, frag=0x4000, proto=6, ihl=5,
              total_extra=0, tcp_header=20) -> bytes:
    options = bytes((ihl - 5) * 4)
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, 7, (tcp_header // 4) << 4, flags, 65535, 0, 0)
    tcp += bytes(max(0, tcp_header - 20))
    total = ihl * 4 + len(tcp) + len(payload) + total_extra
    ip = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total & 0xFFFF, 1, frag, 64, proto, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return ip + options + tcp + payload


def _general(data: bytes) -> list:
    decoder = PacketDecoder()
    out = []
    for record in iter_link_records(data):
        packet = decoder.decode(record)
        if packet is not None:
            out.append(packet)
    return out


def _records(rnd: random.Random) -> list[tuple]:
    """A mix of ordinary and awkward packets on several link types."""
    out = []
    for i in range(rnd.randrange(5, 40)):
        payload = bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 30, 200])))
        kind = rnd.randrange(12)
        if kind == 0:
            frame = ETH[:12] + b"\x81\x00\x00\x05\x08\x00" + _ipv4_tcp(payload)        # VLAN
        elif kind == 1:
            frame = ETH + _ipv4_tcp(payload, frag=0x2000)                              # first fragment
        elif kind == 2:
            frame = ETH + _ipv4_tcp(payload, proto=17)                                 # UDP
        elif kind == 3:
            frame = ETH + _ipv4_tcp(payload, ihl=6)                                    # IP options
        elif kind == 4:
            frame = ETH + _ipv4_tcp(payload) + bytes(rnd.randrange(1, 20))             # Ethernet padding
        elif kind == 5:
            frame = ETH + _ipv4_tcp(payload, total_extra=10)                           # cut short
        elif kind == 6:
            frame = ETH + _ipv4_tcp(payload, tcp_header=12)                            # bogus TCP length
        elif kind == 7:
            frame = ETH + _ipv4_tcp(payload, tcp_header=32)                            # TCP options
        elif kind == 8:
            frame = (ETH + _ipv4_tcp(payload))[:rnd.randrange(0, 60)]                  # truncated
        elif kind == 9:
            frame = bytes(12) + b"\x86\xdd" + bytes(40)                                # IPv6, no TCP
        else:
            frame = ETH + _ipv4_tcp(payload, seq=rnd.randrange(2**32), flags=rnd.randrange(64))
        orig = len(frame) + (rnd.randrange(3) - 1 if rnd.random() < 0.1 else 0)
        out.append((1.5 + i, frame, max(orig, 0)))
    return out


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["<", ">"]), st.booleans())
def test_fast_pcap_reader_matches_the_general_path(rnd, order, nanos):
    records = _records(rnd)
    data = pcap_bytes(records, order=order, nanos=nanos, snaplen=rnd.choice([0, 100, 262144]))
    cut = data if rnd.random() < 0.7 else data[:rnd.randrange(24, len(data) + 1)]
    fast_notes, general_notes = [], []
    fast = list(read_packets(cut, fast_notes))
    general = []
    decoder = PacketDecoder()
    for record in iter_link_records(cut, general_notes):
        packet = decoder.decode(record)
        if packet is not None:
            general.append(packet)
    if decoder.pending_fragments():
        general_notes.append(f"{decoder.pending_fragments()} IP datagrams had fragments missing")
    assert fast == general
    assert [n.split(" (byte")[0] for n in fast_notes] == [n.split(" (byte")[0] for n in general_notes]


@pytest.mark.parametrize("linktype, wrap", [
    (113, lambda ip: bytes(14) + b"\x08\x00" + ip), (276, lambda ip: b"\x08\x00" + bytes(18) + ip),
    (0, lambda ip: struct.pack("<I", 2) + ip), (108, lambda ip: struct.pack(">I", 2) + ip), (101, lambda ip: ip),
])
def test_fast_pcap_reader_link_types(linktype, wrap):
    records = [(1.0 + i, wrap(_ipv4_tcp(b"x" * i, seq=i))) for i in range(5)]
    data = pcap_bytes(records, linktype=linktype)
    assert list(read_packets(data)) == _general(data) and len(_general(data)) == 5


# ---------------------------------------------------------------- lazy record batches

def _eager(data: bytes):
    """Every batch decoded with a trace, which never takes the lazy path."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        end = min(len(data), pos + 12 + max(length, 0))
        if end - pos < 61 or data[pos + 16] != 2:
            break
        node = FieldNode("r", "records", "records", 0)
        out.append(decode_batch(data, pos, end, max_inflated=64 << 20, tr=Trace(node, "r", 0)))
        pos = end
    return out


@settings(max_examples=80, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
       st.integers(0, 3))
def test_lazy_batches_decode_exactly_as_eager_ones(rnd, codec, damage):
    batches = [build_batch([(b"k%d" % i, bytes(rnd.randrange(256) for _ in range(rnd.randrange(40))),
                             [("h", b"v")] if i % 2 else [], 1_700_000_000_000 + i)
                            for i in range(rnd.randrange(1, 12))], codec=codec, base_offset=b * 100)
               for b in range(rnd.randrange(1, 4))]
    data = bytearray(encode_records(batches))
    for _ in range(damage):                               # flip bytes anywhere: CRCs, counts, varints, payloads
        at = rnd.randrange(len(data))
        data[at] ^= 1 << rnd.randrange(8)
    data = bytes(data)
    lazy = decode_records(data)
    eager = _eager(data)
    for got, want in zip(lazy, eager):
        if got.magic != 2 or got.partial:
            continue
        assert got.crc_ok == want.crc_ok and got.record_count == want.record_count
        assert got.records == want.records
        assert got.diagnostics == want.diagnostics
        assert got == want


def test_a_lazy_batch_reads_as_a_plain_one():
    batch = build_batch([(b"a", b"1"), (b"b", b"2")], codec="lz4")
    (lazy,) = decode_records(encode_records([batch]))
    assert not lazy.decoded
    assert lazy.record_count == 2 and lazy.crc_ok
    assert [r.value for r in lazy.records] == [b"1", b"2"] and lazy.decoded
    assert lazy == batch and hash(lazy) == hash(batch)
    assert encode_records([lazy]) == encode_records([batch])
    (again,) = decode_records(encode_records([batch]))
    import copy
    import pickle
    assert pickle.loads(pickle.dumps(again)) == batch
    assert copy.deepcopy(again).records == batch.records
    assert again.to_dict()["records"][1]["value"] == b"2"


# ---------------------------------------------------------------- facts, decoding, tables

def _golden_messages():
    for entry in golden_manifest():
        raw = (GOLDEN / entry["file"]).read_bytes()
        if entry["direction"] == "request":
            yield entry, raw, decode_request(raw, annotate=True)
        else:
            try:
                yield entry, raw, decode_response(raw, entry["api_key"], entry["api_version"], annotate=True)
            except Exception:          # noqa: BLE001 - a version the schema does not know
                continue


def test_generated_facts_match_the_reference_walk():
    checked = 0
    for entry, _, message in _golden_messages():
        if message.body is None:
            continue
        layout = body_layout(message.api_key, message.kind, message.api_version)
        facts = body_facts(message.api_key, message.kind, message.api_version, message.body)
        names = {k: v for k, v in facts.partitions.items() if isinstance(k, str)}
        assert names == topic_partitions(layout, message.body), entry["file"]
        assert (facts.error_code, facts.error) == first_error(layout, message.body), entry["file"]
        assert facts.record_count == record_count(layout, message.body), entry["file"]
        checked += 1
    assert checked > 100


def test_capture_decoder_matches_the_codec():
    for entry, raw, _ in _golden_messages():
        if entry["direction"] == "request":
            fast = decoding.request(raw)
            try:
                plain = decode_request(raw)
            except Exception:          # noqa: BLE001
                plain = decode_request(raw, annotate=True)
        else:
            fast = decoding.response(raw, entry["api_key"], entry["api_version"])
            try:
                plain = decode_response(raw, entry["api_key"], entry["api_version"])
            except Exception:          # noqa: BLE001
                plain = decode_response(raw, entry["api_key"], entry["api_version"], annotate=True)
        assert (fast.api_key, fast.api_version, fast.correlation_id, fast.body, fast.diagnostics) == \
               (plain.api_key, plain.api_version, plain.correlation_id, plain.body, plain.diagnostics), entry["file"]
        assert getattr(fast, "client_id", None) == getattr(plain, "client_id", None)


@pytest.fixture(scope="module")
def golden_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("fast") / "golden.pcap"
    write_golden_pcap(path)
    return read_capture(path)


def test_dropped_messages_decode_again_to_the_same_thing(golden_capture):
    for frame in golden_capture:
        if frame.kind == "request":
            expected = decode_request(frame.raw, annotate=True)
        elif frame.api_key >= 0 and not frame.inferred:
            expected = decode_response(frame.raw, frame.api_key, frame.api_version, annotate=True)
        else:
            continue
        assert frame.body == expected.body, frame


def test_arrow_and_pandas_tables_agree(golden_capture):
    import pyarrow as pa

    table = frames_arrow(golden_capture.frame_list)
    table.validate(full=True)
    from_pandas = pa.Table.from_pandas(frames_table(golden_capture.frame_list), schema=table.schema,
                                       preserve_index=False)
    assert table.equals(from_pandas)
    assert frames_arrow([]).num_rows == 0 and len(frames_table([])) == 0


def test_frames_come_out_the_same_however_the_bytes_are_cut(tmp_path):
    """The framing fast path (whole frames straight out of a segment) against tiny segments."""
    big = tmp_path / "big.pcap"
    small = tmp_path / "small.pcap"
    write_golden_pcap(big)
    write_golden_pcap(small, mss=7)
    a = [(f.kind, f.api_key, f.correlation_id, f.raw, f.diagnostics) for f in iter_frames(big)]
    b = [(f.kind, f.api_key, f.correlation_id, f.raw, f.diagnostics) for f in iter_frames(small)]
    assert a == b and len(a) > 100


def test_gzip_capture_reads_through_the_general_path(tmp_path):
    import gzip

    path = tmp_path / "golden.pcap"
    write_golden_pcap(path)
    zipped = tmp_path / "golden.pcap.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    assert [f.raw for f in read_capture(zipped)] == [f.raw for f in read_capture(path)]


def test_writer_output_reads_back_through_the_fast_path():
    out = io.BytesIO()
    with TcpPcapWriter(out) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), 5.0)
        writer.send(conn, True, b"\x00" * 100000, 5.1)
    data = out.getvalue()
    assert list(read_packets(data)) == _general(data)


def test_remembered_summaries_are_the_computed_ones(golden_capture, tmp_path):
    """Summaries of the common shapes are remembered across frames: they must equal a fresh computation."""
    from kafkalab.dissect.frame import summarize

    path = tmp_path / "repeat.pcap"
    write_golden_pcap(path)
    frames = list(golden_capture) + list(read_capture(path))           # the second read hits the memo
    for frame in frames:
        layout = body_layout(frame.api_key, frame.kind, frame.api_version) if frame.api_key >= 0 else None
        partitions = topic_partitions(layout, frame.body) if layout is not None and frame.body else {}
        if frame.topic_ids:                                          # topics named by id, resolved by the read
            by_id = body_facts(frame.api_key, frame.kind, frame.api_version, frame.body).partitions
            for key, numbers in by_id.items():
                if not isinstance(key, str) and frame.topic_ids.get(key):
                    partitions.setdefault(frame.topic_ids[key], []).extend(numbers)
        assert frame.summary == summarize(frame, partitions), frame
