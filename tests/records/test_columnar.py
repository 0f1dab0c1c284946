"""The column-wise record reader agrees with the batch objects, record for record.

Rows of the records table built column-wise (``dissect.records_table``) are compared with rows made from
the reference decoder's objects (``decode_records``), on the golden corpus (kafka-python and librdkafka,
magic 0/1/2, every codec) and on generated record sets mixing every codec, magic, null keys and values,
headers, log-append time, control batches, corrupted checksums, damaged records and a partial tail.
"""
from __future__ import annotations

import os
import random
import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.dissect import columns as spec
from kafkalab.dissect.records_table import _Builder
from kafkalab.protocol.records import build_batch, decode_records, encode_records
from records_golden import COMBOS, PRODUCERS, golden_path

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def columnar_rows(sets, kind="response", base=None) -> list[tuple]:
    """Rows of the records table for record sets, read column-wise (one flush per call: one Arrow batch)."""

    builder = _Builder()
    for i, data in enumerate(sets):
        builder.add(7, kind, "t", i, base, data)
    builder.flush()
    table = builder.table()
    assert table.schema == spec.arrow_schema("records")
    rows = table.to_pylist()
    return [_normal(r) for r in rows]


def reference_rows(sets, kind="response", base=None) -> list[tuple]:
    rows = []
    for i, data in enumerate(sets):
        before = 0
        for batch in decode_records(data):
            for index, record in enumerate(getattr(batch, "records", ()) or ()):
                if kind == "request":
                    offset = base + before + index if base is not None else None
                else:
                    offset = record.offset
                rows.append({
                    "frame": 7, "kind": kind, "topic": "t", "partition": i, "offset": offset,
                    "timestamp": record.timestamp, "timestamp_type": getattr(batch, "timestamp_type", None),
                    "key": record.key, "value": record.value,
                    "headers": [{"key": k.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
                                 "value": v} for k, v in record.headers],
                    "batch_base_offset": batch.base_offset, "magic": batch.magic, "codec": batch.codec,
                    "producer_id": getattr(batch, "producer_id", None),
                    "producer_epoch": getattr(batch, "producer_epoch", None),
                    "base_sequence": getattr(batch, "base_sequence", None),
                    "transactional": bool(getattr(batch, "transactional", False)),
                    "control": record.control is not None or bool(getattr(batch, "control", False)),
                    "crc_ok": bool(getattr(batch, "crc_ok", True))})
            before += len(getattr(batch, "records", ()) or ())
    return [_normal(r, millis=True) for r in rows]


def _normal(row: dict, millis: bool = False) -> tuple:
    ts = row["timestamp"]
    if ts is not None and not millis:
        ts = int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else ts // 1_000_000
    return tuple(row[name] if name != "timestamp" else ts for name in spec.names("records"))


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("magic,codec", COMBOS)
def test_golden_corpus(producer: str, magic: int, codec: str) -> None:
    path = golden_path(producer, magic, codec)
    if not path.exists():
        pytest.skip(f"{path.name} not in the corpus")
    data = path.read_bytes()
    assert columnar_rows([data]) == reference_rows([data])
    assert columnar_rows([data], "request", 500) == reference_rows([data], "request", 500)


def _batch(rng: random.Random, codec: str, base_offset: int, log_append: bool = False) -> bytes:
    records = []
    for i in range(rng.randrange(1, 40)):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.choice((0, 3, 12, 13, 40)))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice((0, 1, 12, 100, 300, 5000)))
        headers = [(f"h{j}-é", None if rng.random() < 0.3 else rng.randbytes(rng.choice((0, 5, 20))))
                   for j in range(rng.choice((0, 0, 1, 2, 70)))]
        records.append((key, value, headers, 1_700_000_000_000 + rng.randrange(-5, 10**6)))
    batch = build_batch(records, codec=codec, base_offset=base_offset, producer_id=rng.randrange(-1, 99),
                        producer_epoch=rng.randrange(0, 9), base_sequence=rng.randrange(0, 9999),
                        transactional=rng.random() < 0.2)
    data = bytearray(encode_records([batch]))
    if log_append:                         # the broker's stamp: attribute bit and max_timestamp, new CRC
        struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x08)
        struct.pack_into(">q", data, 35, 1_800_000_000_000)
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def _legacy(rng: random.Random, magic: int, codec: str) -> bytes:
    records = [(rng.randbytes(4), rng.randbytes(30), [], 1_700_000_000_000 + i if magic else None)
               for i in range(rng.randrange(1, 5))]
    return encode_records([build_batch(records, codec=codec if codec != "zstd" else "gzip", magic=magic)])


def _damage(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    what = rng.randrange(4)
    if what == 0:                          # a flipped bit in the records: CRC mismatch
        data[rng.randrange(61, len(data))] ^= 1 << rng.randrange(8)
    elif what == 1:                        # a flipped bit with the CRC made to match: the framing is wrong
        data[rng.randrange(61, len(data))] ^= 1 << rng.randrange(8)
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    elif what == 2:                        # a record count that does not match, CRC made to match
        struct.pack_into(">i", data, 57, struct.unpack_from(">i", data, 57)[0] + rng.choice((-1, 1)))
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    else:                                  # a cut-off tail
        del data[rng.randrange(1, len(data)):]
    return bytes(data)


@settings(max_examples=int(os.environ.get("KAFKALAB_EXAMPLES", "25")), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32))
def test_random_record_sets_of_every_codec_and_magic(seed: int) -> None:
    rng = random.Random(seed)
    sets = []
    for _ in range(rng.randrange(1, 4)):
        parts, offset = [], rng.randrange(0, 10**6)
        for _ in range(rng.randrange(1, 5)):
            kind = rng.randrange(10)
            if kind < 6:
                part = _batch(rng, rng.choice(CODECS), offset, log_append=rng.random() < 0.2)
            elif kind < 8:
                part = _legacy(rng, rng.choice((0, 1)), rng.choice(CODECS))
            else:
                part = _damage(rng, _batch(rng, rng.choice(CODECS), offset))
            parts.append(part)
            offset += 50
        data = b"".join(parts)
        sets.append(data)
    assert columnar_rows(sets) == reference_rows(sets)
    assert columnar_rows(sets, "request", 10) == reference_rows(sets, "request", 10)


@settings(max_examples=int(os.environ.get("KAFKALAB_EXAMPLES", "25")), deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32))
def test_batch_heads_count_and_check_as_the_reference_decoder(seed: int) -> None:
    """What the frames table reads of a record set (records per batch, CRC notes) is the same from batch
    heads as from the reference decoder's objects; sets of whole v2 batches are read as heads only."""
    from kafkalab.dissect.facts import _batch_count
    from kafkalab.protocol.records.recordset import BatchHead, batch_heads

    rng = random.Random(seed)
    regular = b"".join(_batch(rng, rng.choice(CODECS), i * 50) for i in range(rng.randrange(1, 4)))
    mixed = regular + rng.choice([_legacy(rng, rng.choice((0, 1)), "none"), _damage(rng, _batch(rng, "none", 0))])

    def seen(batches):
        return [(_batch_count(b), b.crc_ok or b.partial, b.base_offset if not (b.crc_ok or b.partial) else None)
                for b in batches]

    heads = batch_heads(memoryview(regular))
    assert all(isinstance(h, BatchHead) for h in heads)
    assert seen(heads) == seen(decode_records(regular))
    assert seen(batch_heads(memoryview(mixed))) == seen(decode_records(mixed))
    assert batch_heads(b"") == decode_records(b"") == []


@pytest.mark.parametrize("oddity", ["two members", "trailing bytes", "size that lies", "member cut short",
                                    "nothing inflated"])
def test_gzip_batches_inflated_in_place_or_not_read_as_the_reference_decoder(oddity: str) -> None:
    """Gzip records are inflated straight into the reader's buffer when the stream is one whole member of the
    size it declares; every other stream (legal or not) is read as the reference decoder reads it."""
    import gzip

    rng = random.Random(5)
    records = [(rng.randbytes(4), rng.randbytes(rng.choice((10, 300))), [("h", b"v")], 1_700_000_000_000 + i)
               for i in range(20)]
    plain = bytearray(encode_records([build_batch(records, codec="none", base_offset=40)]))
    stream = gzip.compress(bytes(plain[61:]))
    body = {"two members": gzip.compress(bytes(plain[61:200])) + gzip.compress(bytes(plain[200:])),
            "trailing bytes": stream + b"\0\0",
            "size that lies": stream[:-4] + struct.pack("<I", len(plain) - 61 + 1),
            "member cut short": stream[:-9],
            "nothing inflated": gzip.compress(b"")}[oddity]
    data = plain[:61] + body
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 1)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    whole = _batch(rng, "gzip", 0) + bytes(data) + _batch(rng, "gzip", 60)
    assert columnar_rows([whole]) == reference_rows([whole])
    assert columnar_rows([whole], "request", 9) == reference_rows([whole], "request", 9)


@pytest.mark.parametrize("codec", CODECS)
def test_a_batch_fetched_as_it_was_produced_is_read_once_and_gives_its_rows_twice(codec: str) -> None:
    """A Fetch response gives back the batches of Produce requests, with only the base offset and leader
    epoch (outside the checksum) changed: its records are read from the first one's bytes, and its rows are
    what the reference decoder makes of it; so are a repeated batch whose records are damaged (CRC made to
    match) and one that only shares a checksum."""
    rng = random.Random(8)
    produced = _batch(rng, codec, 0)
    fetched = bytearray(produced)
    struct.pack_into(">qi", fetched, 0, 700, len(produced) - 12)
    struct.pack_into(">i", fetched, 12, 3)                  # the leader epoch
    damaged = _damage(random.Random(2), _batch(rng, codec, 100))
    sets = [produced + bytes(fetched), damaged + damaged, produced + _same_crc(produced) + bytes(fetched)]
    assert columnar_rows(sets) == reference_rows(sets)
    assert columnar_rows(sets, "request", 5) == reference_rows(sets, "request", 5)


def _same_crc(batch: bytes) -> bytes:
    """Other bytes of the same length with the same (valid) CRC-32C: bits flipped in the batch's last 64
    bytes, chosen by elimination over GF(2) so that their effects on the CRC cancel (it is affine)."""
    body = bytes(batch[21:])
    zero = crc32c.crc32c(bytes(len(body)))
    rows = []                                   # (effect on the CRC, bits flipped), reduced
    for bit in range(8 * (len(body) - 64), 8 * len(body)):
        flip = bytearray(len(body))
        flip[bit // 8] = 1 << (bit % 8)
        effect, bits = crc32c.crc32c(bytes(flip)) ^ zero, {bit}
        for pivot, pivot_bits in rows:
            if effect ^ pivot < effect:
                effect, bits = effect ^ pivot, bits ^ pivot_bits
        if not effect:
            changed = bytearray(batch)
            for b in bits:
                changed[21 + b // 8] ^= 1 << (b % 8)
            assert crc32c.crc32c(bytes(changed[21:])) == crc32c.crc32c(body) and changed != batch
            return bytes(changed)
        rows.append((effect, bits))
    raise AssertionError("no combination found")


def test_columns_sized_too_small_grow() -> None:
    """The columns are sized from the frames' record counts; when more records come, they grow."""
    rng = random.Random(11)
    sets = [b"".join(_batch(rng, rng.choice(CODECS), i * 50) for i in range(30)) for _ in range(3)]
    builder = _Builder(expected=5)
    for i, data in enumerate(sets):
        builder.add(7, "response", "t", i, None, data)
    builder.flush()
    assert [_normal(r) for r in builder.table().to_pylist()] == reference_rows(sets)


def test_control_batches_come_from_the_reference_decoder() -> None:
    """A transaction marker between data batches: its row says control, and the rows stay in wire order."""
    rng = random.Random(3)
    marker = encode_records([build_batch(["commit"], control=True, transactional=True, producer_id=9,
                                         producer_epoch=1, base_offset=60)])
    data = _batch(rng, "none", 0) + marker + _batch(rng, "gzip", 61)
    rows = columnar_rows([data])
    assert rows == reference_rows([data])
    control = [r for r in rows if r[spec.names("records").index("control")]]
    assert len(control) == 1 and control[0][spec.names("records").index("offset")] == 60


def test_a_header_key_that_is_not_utf8_falls_back_to_the_objects() -> None:
    data = bytearray(_batch(random.Random(1), "none", 0))
    at = data.find("h0-é".encode())
    if at < 0:
        pytest.skip("no header in this batch")
    data[at] = 0xFF
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    rows = columnar_rows([bytes(data)])
    assert rows == reference_rows([bytes(data)])
    keys = [h["key"] for r in rows for h in r[spec.names("records").index("headers")]]
    assert any(k.startswith("\ufffd") for k in keys)       # not UTF-8: replaced, the rest kept


@pytest.mark.parametrize("seed", [1, 2])
def test_many_batches_walked_in_lockstep_then_one_by_one(seed: int) -> None:
    """Over LOCKSTEP_MIN batches: their records are found a record at a time for all batches at once, the
    last few batches one by one; damaged batches among them still come from the reference decoder."""
    from kafkalab.protocol.records.columnar import LOCKSTEP_MIN

    rng = random.Random(seed)
    parts = []
    for i in range(2 * LOCKSTEP_MIN + 10):
        part = _batch(rng, rng.choice(CODECS), i * 100, log_append=rng.random() < 0.1)
        parts.append(_damage(rng, part) if rng.random() < 0.05 and i % 7 else part)
    sets = [b"".join(parts[:LOCKSTEP_MIN + 5]), b"".join(parts[LOCKSTEP_MIN + 5:])]
    assert columnar_rows(sets) == reference_rows(sets)
    assert columnar_rows(sets, "request", 3) == reference_rows(sets, "request", 3)


def test_a_record_with_very_many_headers_among_ordinary_ones() -> None:
    rng = random.Random(5)
    crowded = build_batch([(b"k", b"v", [(f"h{i}", b"x") for i in range(3000)], 1)], base_offset=40)
    data = _batch(rng, "none", 0) + encode_records([crowded]) + _batch(rng, "lz4", 41)
    rows = columnar_rows([data])
    assert rows == reference_rows([data])
    assert max(len(r[spec.names("records").index("headers")]) for r in rows) == 3000


@pytest.fixture
def small_limits():
    """Record caps small enough to reach with a few batches: 10 records per batch, 50 per frame."""
    from kafkalab.protocol.records.limits import set_limits

    old = set_limits(max_records=10, records=50)
    yield
    set_limits(**vars(old))


def _records(n: int) -> list:
    return [(b"k%d" % i, b"v" * 20, [], 1_700_000_000_000 + i) for i in range(n)]


def test_a_batch_claiming_more_records_than_allowed_is_not_inflated(small_limits) -> None:
    """The per-batch record cap of the hostile-input limits holds column-wise as in the reference decoder:
    the batch is handed back as its object, which says "budget exceeded" and holds no records."""
    from kafkalab.protocol.records.columnar import Batches, gather

    big = encode_records([build_batch(_records(11), codec="gzip", base_offset=0)])
    small = encode_records([build_batch(_records(10), codec="gzip", base_offset=11)])
    into = Batches.empty()
    others = gather(big + small, None, into)
    assert len(into) == 1 and into.heads[0][12] == 10                 # the allowed batch, column-wise
    ((at, obj),) = others
    assert at == 0 and not obj.records
    assert any("budget exceeded" in d for d in obj.diagnostics)
    assert [d for d in decode_records(big)[0].diagnostics] == list(obj.diagnostics)


def test_the_record_sets_of_one_frame_share_one_budget(small_limits) -> None:
    """Six record sets of 10 records in one frame: the frame budget (50) lets five through; the sixth batch
    is "budget exceeded". A new frame starts with a full budget again."""
    sets = [encode_records([build_batch(_records(10), codec=codec, base_offset=0)])
            for codec in ("none", "gzip") * 3]
    builder = _Builder()
    for i, data in enumerate(sets):
        builder.add(7, "response", "t", i, None, data)
    builder.add(8, "response", "t", 0, None, sets[0])
    builder.flush()
    rows = builder.table().to_pylist()
    per_frame = {}
    for row in rows:
        per_frame.setdefault(row["frame"], set()).add(row["partition"])
    assert per_frame == {7: {0, 1, 2, 3, 4}, 8: {0}}
    assert sum(r["frame"] == 7 for r in rows) == 50
