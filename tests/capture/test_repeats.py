"""The repeats memo (kafkalab.dissect.repeats and .shapes): frames that differ only in values no description
reads (offsets, epochs, member ids) share one description; frames that differ in a value a description
reads (a topic, a partition, an error code, acks) or in their layout do not; and whatever it gives is what
decoding and describing the frame gives."""
from __future__ import annotations

import random

from kafkalab.dissect import decoding
from kafkalab.dissect.frame import describe_body
from kafkalab.dissect.repeats import Repeats
from kafkalab.protocol import encode_request, encode_response
from kafkalab.protocol.correlation import expects_response


def described_request(raw: bytes) -> tuple:
    """What decoding gives, in the memo's order: the description, then correlation id, client id, size."""
    api_key, name, version, correlation_id, client_id, body, size, _, _ = decoding.request_parts(raw)
    topics, code, error, count, notes, summary, _ = describe_body(api_key, name, version, "request", body, None)
    assert not notes
    return (api_key, name, version, code, error, tuple(topics), count, summary, expects_response(api_key, body),
            correlation_id, client_id, size)


def described_response(raw: bytes, api_key: int, version: int) -> tuple:
    name, correlation_id, body, size, _, _ = decoding.response_parts(raw, api_key, version)
    topics, code, error, count, notes, summary, _ = describe_body(api_key, name, version, "response", body, None)
    assert not notes
    return (api_key, name, version, code, error, tuple(topics), count, summary, True, correlation_id, None, size)


def as_described(seen: tuple | None) -> tuple | None:
    """A repeat's values with its topics (the memo's one list, see repeats.DESCRIPTION) as a tuple, as
    ``described_request`` gives them."""
    if seen is None:
        return None
    assert isinstance(seen[5], list)
    return seen[:5] + (tuple(seen[5]),) + seen[6:]


def seen_request(repeats: Repeats, raw: bytes) -> tuple | None:
    """Ask the memo, and remember the frame (as the capture reader does) when it has not seen it."""
    seen = repeats.request(raw)
    if seen is None:
        repeats.remember_request(raw, described_request(raw)[:9], [])
    return as_described(seen)


def seen_response(repeats: Repeats, raw: bytes, api_key: int, version: int) -> tuple | None:
    seen = repeats.response(raw, api_key, version)
    if seen is None:
        repeats.remember_response(raw, described_response(raw, api_key, version)[:9], [])
    return as_described(seen)


def fetch(offset: int, partition: int = 3, topic: str = "orders", *, client_id: str = "consumer-1",
          correlation_id: int = 1, max_wait_ms: int = 500) -> bytes:
    return encode_request("Fetch", 11, {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "current_leader_epoch": 0, "fetch_offset": offset, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20}]}], "forgotten_topics_data": [], "rack_id": ""},
        correlation_id=correlation_id, client_id=client_id)


def produce_response(base_offset: int, error_code: int = 0, partition: int = 3, correlation_id: int = 1) -> bytes:
    return encode_response("Produce", 7, {"responses": [{"name": "orders", "partition_responses": [
        {"index": partition, "error_code": error_code, "base_offset": base_offset, "log_append_time_ms": -1,
         "log_start_offset": 0}]}], "throttle_time_ms": 0}, correlation_id=correlation_id)


def commit(member_id: str, offset: int, version: int = 7) -> bytes:
    return encode_request("OffsetCommit", version, {
        "group_id": "group-1", "generation_id_or_member_epoch": 4, "member_id": member_id, "group_instance_id": None,
        "topics": [{"name": "orders", "partitions": [{"partition_index": 2, "committed_offset": offset,
                                                      "committed_leader_epoch": 0, "committed_metadata": ""}]}]},
        correlation_id=9, client_id="consumer-1")


def test_requests_differing_only_in_offsets_share_a_description():
    repeats = Repeats()
    assert seen_request(repeats, fetch(1000)) is None
    again = fetch(987654321, correlation_id=2)
    assert seen_request(repeats, again) == described_request(again)


def test_the_header_columns_come_from_each_frame():
    repeats = Repeats()
    seen_request(repeats, fetch(1000, client_id="consumer-1"))
    other = fetch(2000, client_id="consumer-2", correlation_id=77)
    got = seen_request(repeats, other)
    assert got is not None and got[9:] == (77, "consumer-2", len(other) - 4) == described_request(other)[9:]


def test_values_a_description_reads_are_never_shared():
    repeats = Repeats()
    seen_request(repeats, fetch(1000))
    assert seen_request(repeats, fetch(1000, partition=4)) is None               # another partition
    assert seen_request(repeats, fetch(1000, topic="ordera")) is None            # another topic, same length
    assert seen_request(repeats, fetch(1000, max_wait_ms=100)) is None           # a summary field
    seen_response(repeats, produce_response(10), 0, 7)
    assert seen_response(repeats, produce_response(20), 0, 7) == described_response(produce_response(20), 0, 7)
    assert seen_response(repeats, produce_response(30, error_code=6), 0, 7) is None  # an error code
    acks = [encode_request("Produce", 7, {"transactional_id": None, "acks": a, "timeout_ms": 100, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": None}]}]}, correlation_id=1, client_id="p")
        for a in (1, 0)]
    seen_request(repeats, acks[0])
    assert seen_request(repeats, acks[1]) is None                                # acks=0: no response expected
    assert described_request(acks[1])[8] is False


def test_strings_no_description_reads_are_left_out_unless_they_are_not_ascii():
    for version in (7, 8):                                                       # classic and compact strings
        repeats = Repeats()
        seen_request(repeats, commit("consumer-1-member", 5, version))
        other = commit("consumer-2-member", 6, version)
        assert seen_request(repeats, other) == described_request(other)
        assert repeats.request(commit("consumer-é-member", 7, version)) is None     # UTF-8, not ASCII


def test_whatever_the_memo_gives_is_what_decoding_gives():
    rnd = random.Random(5)
    repeats = Repeats()
    hits = 0
    for i in range(600):
        choice = rnd.randrange(3)
        if choice == 0:
            raw = fetch(rnd.randrange(1 << 40), rnd.randrange(3), rnd.choice(["a", "b", "ab"]),
                        client_id=rnd.choice(["c1", "c22", None]), correlation_id=i)
            seen = seen_request(repeats, raw)
            expected = described_request(raw)
        elif choice == 1:
            raw = commit(rnd.choice(["m", "mm", "m2"]), rnd.randrange(1 << 40), rnd.choice([7, 8]))
            seen = seen_request(repeats, raw)
            expected = described_request(raw)
        else:
            raw = produce_response(rnd.randrange(1 << 40), rnd.choice([0, 0, 0, 6]), rnd.randrange(3), i)
            seen = seen_response(repeats, raw, 0, 7)
            expected = described_response(raw, 0, 7)
        if seen is not None:
            hits += 1
            assert seen == expected, raw
    assert hits > 500


def test_repeats_give_one_topics_list_for_equal_topics() -> None:
    """Every repeat of remembered frames naming the same topics gives the same list (the rows share it; a
    Frame made of a row gets its own copy), whichever frame it was remembered from."""
    repeats = Repeats()
    for raw in (fetch(1000), fetch(1000, max_wait_ms=100), produce_response(5)):
        seen_request(repeats, raw) if raw[4:6] == b"\0\x01" else seen_response(repeats, raw, 0, 7)
    first, second = repeats.request(fetch(2000)), repeats.request(fetch(3000, max_wait_ms=100))
    answer = repeats.response(produce_response(6), 0, 7)
    assert first[5] == ["orders"] and first[5] is second[5] is answer[5]
