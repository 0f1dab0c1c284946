"""Fuzz target, record layer: mutated record sets (real clients' batches in every codec, and every hostile
set that once broke kafkalab). Decoding and tracing never raise and stay within budget; the broker's gate
either refuses a set or the log stores it with offsets that neither rewind nor leap; recovery never raises."""
from __future__ import annotations

from codec_checks import assert_tiles
from fuzz_support import FUZZ, mutants, tallied
from hypothesis import given

from kafkalab.broker.storage import PartitionLog
from kafkalab.broker.storage.recovery import scan_segment
from kafkalab.broker.validate import check_record_set
from kafkalab.protocol.records import decode_records, iter_batches, trace_records
from kafkalab.protocol.tree import FieldNode


@FUZZ
@given(mutants("records"))
def test_fuzz_records(case):
    _, data = case
    with tallied("records", data):
        for entry in decode_records(data):
            assert isinstance(entry.diagnostics, tuple) and isinstance(entry.records, tuple)
        root = FieldNode("r", "records", "records", 0, len(data))
        trace_records(data, root, 0, "r")
        assert_tiles(root, len(data))
        list(iter_batches(data))
        _check_append(data)
        scan = scan_segment(data)
        assert scan.tail <= len(data)


def _check_append(data: bytes) -> None:
    verdict = check_record_set(data, 1 << 20)
    if verdict.error:
        return
    log = PartitionLog.in_memory(1 << 20)
    log.append(b"".join([]) or _one_record_batch())
    before = log.next_offset
    log.append(data, verdict.counts)
    assert log.next_offset - before == sum(verdict.counts)
    lasts = [e.last_offset for e in log.entries]
    assert all(e.base_offset <= e.last_offset for e in log.entries) and lasts == sorted(lasts)


def _one_record_batch() -> bytes:
    from hostile_inputs import v2_batch, v2_records
    return v2_batch(v2_records([b"first"]), 1)
