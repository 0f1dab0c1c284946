"""The repeats memo on frames carrying records (kafkalab.dissect.shapes.RecordsShape): Produce requests and
Fetch responses whose batches differ (never the same bytes, never the same length) share one description
when all else a description reads is alike and their batches hold as many records; a damaged batch, a
frame with several record sets or a different record count is never given a remembered description; and
whatever the memo gives is what decoding and describing the frame gives."""
from __future__ import annotations

import random

from kafkalab.dissect import decoding
from kafkalab.dissect.frame import describe_body
from kafkalab.dissect.repeats import Repeats
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.correlation import expects_response
from kafkalab.protocol.records import build_batch, encode_records
from kafkalab.protocol.records.recordset import regular_count


def described(raw: bytes, kind: str, api_key: int = 0, version: int = 0) -> tuple:
    """What decoding gives, in the memo's order (see repeats.DESCRIPTION), then the header's columns; and
    the frame's diagnostics."""
    if kind == "request":
        api_key, name, version, correlation_id, client_id, body, size, _, _ = decoding.request_parts(raw)
    else:
        name, correlation_id, body, size, _, _ = decoding.response_parts(raw, api_key, version)
        client_id = None
    topics, code, error, count, notes, summary, _ = describe_body(api_key, name, version, kind, body, None)
    answered = expects_response(api_key, body) if kind == "request" else True
    return (api_key, name, version, code, error, tuple(topics), count, summary, answered, correlation_id,
            client_id, size), notes


def seen(repeats: Repeats, raw: bytes, kind: str, api_key: int = 0, version: int = 0) -> tuple | None:
    """Ask the memo, and remember the frame (as the capture reader does) when it has not seen it."""
    got = repeats.request(raw) if kind == "request" else repeats.response(raw, api_key, version)
    if got is None:
        description, notes = described(raw, kind, api_key, version)
        remember = repeats.remember_request if kind == "request" else repeats.remember_response
        remember(raw, description[:9], notes)
    return got if got is None else got[:5] + (tuple(got[5]),) + got[6:]    # topics: the memo's one list


def batches(rnd: random.Random, records: int, sets: int = 1) -> bytes:
    """``sets`` batches holding ``records`` records in all, of random keys and values (of random sizes)."""
    out = []
    for j in range(sets):
        many = records // sets + (j < records % sets)
        values = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(200))) for _ in range(many)]
        out.append(build_batch([(b"k%d" % rnd.randrange(1000), value) for value in values],
                               base_offset=rnd.randrange(1 << 40)))
    return encode_records(out)


def produce(records: bytes | list, version: int = 7, *, topic: str = "orders", partition: int = 3, acks: int = -1,
            correlation_id: int = 1) -> bytes:
    sets = records if isinstance(records, list) else [records]
    partitions = [{"index": partition + i, "records": r} for i, r in enumerate(sets)]
    return encode_request("Produce", version, {"transactional_id": None, "acks": acks, "timeout_ms": 3000,
                                               "topic_data": [{"name": topic, "partition_data": partitions}]},
                          correlation_id=correlation_id, client_id="producer-1")


def fetched(records: bytes, *, partition: int = 3, watermark: int = 0, correlation_id: int = 1) -> bytes:
    return encode_response("Fetch", 11, {"throttle_time_ms": 0, "error_code": 0, "session_id": 7, "responses": [
        {"topic": "orders", "partitions": [{"partition_index": partition, "error_code": 0,
                                            "high_watermark": watermark, "last_stable_offset": watermark,
                                            "log_start_offset": 0, "aborted_transactions": [],
                                            "preferred_read_replica": -1, "records": records}]}]},
        correlation_id=correlation_id)


def test_requests_carrying_other_batches_of_as_many_records_share_a_description():
    rnd = random.Random(1)
    for version in (7, 9):                                                       # classic and compact lengths
        repeats = Repeats()
        assert seen(repeats, produce(batches(rnd, 3), version), "request") is None
        other = produce(batches(rnd, 3, sets=2), version, correlation_id=9)        # other bytes, other length
        assert seen(repeats, other, "request") == described(other, "request")[0]
        assert seen(repeats, produce(batches(rnd, 4), version), "request") is None  # another record count


def test_values_a_description_reads_are_never_shared():
    rnd = random.Random(2)
    repeats = Repeats()
    seen(repeats, produce(batches(rnd, 2)), "request")
    assert seen(repeats, produce(batches(rnd, 2), partition=4), "request") is None
    assert seen(repeats, produce(batches(rnd, 2), topic="ordera"), "request") is None
    assert seen(repeats, produce(batches(rnd, 2), acks=0), "request") is None     # acks=0: no response expected
    seen(repeats, fetched(batches(rnd, 5)), "response", 1, 11)
    again = fetched(batches(rnd, 5), watermark=123456789, correlation_id=4)       # offsets are not read
    assert seen(repeats, again, "response", 1, 11) == described(again, "response", 1, 11)[0]
    assert seen(repeats, fetched(batches(rnd, 5), partition=0), "response", 1, 11) is None


def test_a_batch_whose_crc_does_not_match_is_decoded_and_reported():
    rnd = random.Random(3)
    repeats = Repeats()
    seen(repeats, produce(batches(rnd, 2)), "request")
    records = bytearray(batches(rnd, 2))
    records[-1] ^= 0xFF                                                          # a record's byte: CRC mismatch
    assert regular_count(bytes(records)) is None
    damaged = produce(bytes(records))
    assert seen(repeats, damaged, "request") is None
    description, notes = described(damaged, "request")
    assert notes and "CRC mismatch" in notes[0]
    seen(repeats, damaged, "request")                                            # never remembered
    assert repeats.request(damaged) is None


def test_frames_with_several_record_sets_are_decoded_every_time():
    rnd = random.Random(4)
    repeats = Repeats()
    for _ in range(20):
        raw = produce([batches(rnd, 1), batches(rnd, 1)])
        assert seen(repeats, raw, "request") is None
    assert repeats.learnt <= 8                                                   # and not learnt again and again


def test_whatever_the_memo_gives_is_what_decoding_gives():
    rnd = random.Random(5)
    repeats = Repeats()
    hits = 0
    for i in range(400):
        count = rnd.choice([1, 2, 2, 5])
        if rnd.randrange(2):
            raw = produce(batches(rnd, count, rnd.choice([1, 2])), rnd.choice([7, 9]),
                          topic=rnd.choice(["a", "bb"]), partition=rnd.randrange(2), acks=rnd.choice([-1, 1]),
                          correlation_id=i)
            got, expected = seen(repeats, raw, "request"), described(raw, "request")[0]
        else:
            raw = fetched(batches(rnd, count) if rnd.randrange(4) else b"", partition=rnd.randrange(2),
                          watermark=rnd.randrange(1 << 40), correlation_id=i)
            got, expected = seen(repeats, raw, "response", 1, 11), described(raw, "response", 1, 11)[0]
        if got is not None:
            hits += 1
            assert got == expected, raw
    assert hits > 300
