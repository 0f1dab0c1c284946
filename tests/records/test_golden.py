"""Record sets written by kafka-python and librdkafka decode to what they were told to send, re-encode
byte-identically, and kafkalab's own encodings read back identically in kafka-python."""
from __future__ import annotations

import cramjam
import pytest

from records_kafka_python import read_with_kafka_python
from kafkalab.protocol.records import (RecordBatch, build_batch, decode_records, encode_records,
                                       iter_batches)
from kafkalab.protocol.records.lz4frame import header_checksum
from records_golden import COMBOS, DATA, PRODUCERS, TS0, TXN, golden_path, messages_for

CASES = [(p, m, c) for p in PRODUCERS for m, c in COMBOS]
IDS = [f"{p}-v{m}-{c}" for p, m, c in CASES]


def _contents(entries):
    return [(r.key, r.value, [tuple(h) for h in r.headers], r.timestamp) for e in entries for r in e.records]


def _expected(magic):
    return [(k, v, list(h), ts) for k, v, h, ts in messages_for(magic)]


@pytest.mark.parametrize("producer,magic,codec", CASES, ids=IDS)
def test_golden_decodes_to_what_was_sent(producer, magic, codec):
    data = golden_path(producer, magic, codec).read_bytes()
    entries = decode_records(data)
    assert all(not e.diagnostics and e.crc_ok and not e.partial for e in entries)
    assert {e.magic for e in entries} == {magic} and {e.codec for e in entries} == {codec}
    assert _contents(entries) == _expected(magic)
    if magic == 2:
        assert len(entries) == 1 and entries[0].record_count == 5 and entries[0].last_offset_delta == 4
        assert [r.offset for r in entries[0].records] == [0, 1, 2, 3, 4]
    elif codec == "none":
        assert [e.offset for e in entries] == [0, 1, 2, 3, 4]
    else:
        (wrapper,) = entries
        assert [m.offset for m in wrapper.inner] == [0, 1, 2, 3, 4]  # relative (magic 1) or absolute (magic 0)
        offsets = [r.offset for r in wrapper.records]
        # KIP-31: the producer leaves the wrapper offset at 0, so magic 1 inner offsets resolve to -4..0
        assert offsets == ([0, 1, 2, 3, 4] if magic == 0 else [-4, -3, -2, -1, 0])


@pytest.mark.parametrize("producer,magic,codec", CASES, ids=IDS)
def test_golden_reencodes_byte_identically(producer, magic, codec):
    data = golden_path(producer, magic, codec).read_bytes()
    assert encode_records(decode_records(data)) == data


@pytest.mark.parametrize("producer,magic,codec", CASES, ids=IDS)
def test_field_encoding_reads_back_in_kafka_python(producer, magic, codec, kafka_python_reader):
    data = golden_path(producer, magic, codec).read_bytes()
    entries = decode_records(data)
    rebuilt = encode_records([e.to_dict() for e in entries])  # dict form: encoded from fields, not raw bytes
    if codec == "none":
        assert rebuilt == data  # nothing left to chance without a compressor: the fields say it all
    assert read_with_kafka_python(kafka_python_reader, rebuilt) == read_with_kafka_python(kafka_python_reader, data)
    assert _contents(decode_records(rebuilt)) == _expected(magic)


@pytest.mark.parametrize("magic,codec", COMBOS, ids=[f"v{m}-{c}" for m, c in COMBOS])
def test_build_batch_reads_back_in_kafka_python(magic, codec, kafka_python_reader):
    built = build_batch(messages_for(magic), magic=magic, codec=codec, base_offset=100)
    data = encode_records([built])
    got = read_with_kafka_python(kafka_python_reader, data)
    assert [(k, v, h, ts) for _, k, v, h, ts in got] == _expected(magic)
    assert [o for o, *_ in got] == [100, 101, 102, 103, 104]


def test_transactional_batch_fields():
    (batch,) = decode_records((DATA / "kp_v2_txn_gzip.bin").read_bytes())
    assert isinstance(batch, RecordBatch) and batch.transactional and not batch.control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        TXN["producer_id"], TXN["producer_epoch"], TXN["base_sequence"])
    # kafka-python's builder leaves base_offset at 0 and puts the offsets into the deltas
    assert batch.base_offset == 0 and [r.offset_delta for r in batch.records] == [1000, 1001, 1002, 1003, 1004]
    assert batch.last_offset == 1004 and batch.base_timestamp == TS0
    assert batch.max_timestamp == TS0 + 4 and batch.attributes & 0x17 == 0x11


def test_control_batch_read_by_kafka_python(kafka_python_reader):
    marker = build_batch(["commit"], control=True, transactional=True, producer_id=7, producer_epoch=1,
                         base_offset=55, base_timestamp=TS0)
    data = encode_records([marker])
    records = kafka_python_reader(data)
    batch = records.next_batch()
    assert batch.is_control_batch and batch.is_transactional and batch.validate_crc()
    (rec,) = list(batch)
    assert rec.commit and not rec.abort and rec.offset == 55
    (decoded,) = decode_records(data)
    assert decoded.records[0].control.type_name == "COMMIT" and decoded.control


@pytest.mark.parametrize("producer", ["kp", "rdk"])
def test_lz4_header_checksum_forms(producer):
    """KIP-57: magic 0 frames carry the broken header checksum, magic 1+ the correct one."""
    for magic in (0, 1, 2):
        entry = decode_records(golden_path(producer, magic, "lz4").read_bytes())[0]
        frame = entry.value if magic < 2 else entry.raw[61:]
        hc_at = 6 + (8 if frame[4] & 0x08 else 0)
        broken = frame[hc_at] == header_checksum(frame[:hc_at], broken=True)
        assert broken == (magic == 0), (producer, magic)  # both producers follow KIP-57
    for magic in (0, 1):
        wrapper = build_batch(messages_for(magic), magic=magic, codec="lz4")
        assert wrapper.value[6] == header_checksum(wrapper.value[:6], broken=magic == 0)
        if magic == 1:  # an independent LZ4 implementation accepts the correct form
            assert bytes(cramjam.lz4.decompress(wrapper.value))
        else:
            with pytest.raises(Exception):
                cramjam.lz4.decompress(wrapper.value)


def test_snappy_framings():
    """Java-style clients (kafka-python) frame snappy with xerial; librdkafka writes raw snappy."""
    kp = decode_records(golden_path("kp", 2, "snappy").read_bytes())[0].raw[61:]
    rdk = decode_records(golden_path("rdk", 2, "snappy").read_bytes())[0].raw[61:]
    assert kp.startswith(b"\x82SNAPPY\x00") and not rdk.startswith(b"\x82SNAPPY\x00")


def test_mixed_magics_and_partial_tail():
    parts = [golden_path("kp", 0, "gzip").read_bytes(), golden_path("rdk", 1, "none").read_bytes(),
             golden_path("rdk", 2, "zstd").read_bytes(), golden_path("kp", 2, "lz4").read_bytes()]
    data = b"".join(parts[:3]) + parts[3][:100]
    entries = decode_records(data)
    kinds = [(type(e).__name__, e.magic, e.partial) for e in entries]
    assert kinds == [("LegacyMessage", 0, False)] + [("LegacyMessage", 1, False)] * 5 + [
        ("RecordBatch", 2, False), ("RecordBatch", 2, True)]
    assert all(not e.diagnostics for e in entries)
    assert encode_records(entries) == data
    bounds = list(iter_batches(data))
    assert [b.magic for b in bounds] == [0, 1, 1, 1, 1, 1, 2, 2] and bounds[-1].partial
    assert [b.record_count for b in bounds[:7]] == [None, 1, 1, 1, 1, 1, 5]
    assert sum(b.size for b in bounds) == len(data)


@pytest.mark.parametrize("magic,codec", COMBOS, ids=[f"v{m}-{c}" for m, c in COMBOS])
def test_librdkafka_live_capture(magic, codec):
    """Fresh bytes from the installed librdkafka (not only the committed ones) decode as sent."""
    pytest.importorskip("confluent_kafka")
    from records_fakebroker import capture

    data = capture(magic, codec, messages_for(magic), timeout=10)
    entries = decode_records(data)
    assert all(not e.diagnostics and e.crc_ok for e in entries)
    assert {e.magic for e in entries} == {magic} and {e.codec for e in entries} == {codec}
    assert _contents(entries) == _expected(magic)
    assert encode_records(entries) == data
