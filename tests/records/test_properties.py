"""Property tests: round trips through every codec and magic; corruption and truncation never raise; traces
cover every byte exactly once."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.protocol.records import build_batch, decode_records, encode_records, iter_batches, trace_records
from kafkalab.protocol.tree import FieldNode
from records_golden import COMBOS
from records_treecheck import check_tree

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
maybe_bytes = st.none() | st.binary(max_size=64)
headers = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3)
timestamps = st.integers(min_value=0, max_value=2**41)
v2_records = st.lists(st.tuples(maybe_bytes, maybe_bytes | st.binary(min_size=100, max_size=600), headers,
                                timestamps), max_size=12)
combos = st.sampled_from(COMBOS)


def _for_magic(records, magic):
    return [(k, v, h if magic == 2 else [], ts if magic else None) for k, v, h, ts in records]


def _contents(entries):
    return [(r.key, r.value, list(r.headers), r.timestamp, r.offset) for e in entries for r in e.records]


def _trace(data):
    root = FieldNode("records", "records", "records", 7)
    trace_records(data, root, 7, "records")
    check_tree(root, 7, len(data))
    return root


def _encoded(records, magic, codec, base_offset=0, **kw):
    return encode_records([build_batch(records, magic=magic, codec=codec, base_offset=base_offset, **kw)])


@SETTINGS
@given(records=v2_records, combo=combos, base=st.integers(min_value=0, max_value=2**40))
def test_round_trip_every_codec_and_magic(records, combo, base):
    magic, codec = combo
    recs = _for_magic(records, magic)
    if codec != "none" and not recs:
        recs = [(b"k", b"v", [], 5 if magic else None)]
    data = _encoded(recs, magic, codec, base)
    entries = decode_records(data)
    assert all(not e.diagnostics and e.crc_ok for e in entries)
    got = _contents(entries)
    assert [(k, v, [tuple(x) for x in h], ts) for k, v, h, ts, _ in got] == [
        (k, v, [tuple(x) for x in h], ts) for k, v, h, ts in recs]
    assert [o for *_, o in got] == list(range(base, base + len(recs)))
    assert encode_records(entries) == data
    # encoding again from fields (raw dropped) gives the same contents
    assert _contents(decode_records(encode_records([e.to_dict() for e in entries]))) == got
    _trace(data)


@pytest.mark.parametrize("magic,codec", COMBOS, ids=[f"v{m}-{c}" for m, c in COMBOS])
def test_every_single_byte_corruption_is_diagnosed(magic, codec):
    recs = _for_magic([(b"key", b"value" * 8, [("h", b"1")], 1000 + i) for i in range(3)], magic)
    data = _encoded(recs, magic, codec, 10, **({"producer_id": 9, "producer_epoch": 1, "base_sequence": 0}
                                              if magic == 2 else {}))
    clean = decode_records(data)
    unprotected = set()  # per entry: the offset and (v2) the leader epoch lie outside every checksum
    for b in iter_batches(data):
        unprotected.update(range(b.position, b.position + 8))
        if b.magic == 2:
            unprotected.update(range(b.position + 12, b.position + 16))
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            bad = bytearray(data)
            bad[i] ^= flip
            entries = decode_records(bytes(bad))
            _trace(bytes(bad))
            problems = [d for e in entries for d in e.diagnostics] + [e for e in entries if e.partial]
            if i in unprotected:
                continue  # outside any checksum: a different, equally valid offset/epoch
            assert problems, f"byte {i} ^ 0x{flip:02x} went unnoticed"
    assert encode_records(clean) == data


@pytest.mark.parametrize("magic,codec", COMBOS, ids=[f"v{m}-{c}" for m, c in COMBOS])
def test_truncation_at_every_point(magic, codec):
    recs = _for_magic([(b"k%d" % i, b"v" * 30, [("h", None)], 1000 + i) for i in range(3)], magic)
    one = _encoded(recs, magic, codec)
    data = one + one
    complete = decode_records(one)
    boundaries = {0} | {b.position + b.size for b in iter_batches(data)}
    for cut in range(len(data) + 1):
        entries = decode_records(data[:cut])
        _trace(data[:cut])
        assert all(not e.diagnostics for e in entries)
        assert encode_records(entries) == data[:cut]
        if cut in boundaries:
            assert not any(e.partial for e in entries)
        else:
            assert entries[-1].partial and sum(e.partial for e in entries) == 1
        if cut >= len(one):
            assert _contents(entries[:len(complete)]) == _contents(complete)


@SETTINGS
@given(data=st.binary(max_size=300), seed=st.binary(min_size=1, max_size=2))
def test_garbage_never_raises(data, seed):
    for blob in (data, _encoded([(b"k", b"v", [], 1)], 2, "gzip")[:40] + data, seed * 17 + data):
        entries = decode_records(blob)
        assert encode_records(entries) == blob
        _trace(blob)


@SETTINGS
@given(records=v2_records, combo=combos, edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)),
                                                         min_size=1, max_size=6))
def test_random_multi_byte_corruption_never_raises(records, combo, edits):
    magic, codec = combo
    data = bytearray(_encoded(_for_magic(records, magic) or [(b"k", b"v", [], None)], magic, codec))
    for pos, x in edits:
        data[pos % len(data)] ^= x
    entries = decode_records(bytes(data))
    assert encode_records(entries) == bytes(data)
    _trace(bytes(data))
    for e in entries:
        repr(e)
        e.to_dict()


def test_replace_drops_raw_and_reencodes_from_fields():
    (batch,) = decode_records(_encoded([(b"a", b"1", [], 5), (b"b", b"2", [], 6)], 2, "gzip"))
    edited = dataclasses.replace(batch, records=batch.records[:1], last_offset_delta=None, max_timestamp=None)
    assert edited.raw is None
    (again,) = decode_records(encode_records([edited]))
    assert [r.key for r in again.records] == [b"a"] and again.crc_ok and again.last_offset_delta == 0
