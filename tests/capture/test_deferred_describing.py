"""Deferred describing (``FrameStore.defer``): a capture file read whole leaves its large Produce requests (those
expecting a response) and its Produce and Fetch responses undescribed until something asks for their described
columns. The records table must not describe them, and every table (frames, exchanges, records, connections),
Frame and row must be the same whatever is asked first."""
from __future__ import annotations

import random

import pandas as pd
import pytest

import kafkalab.capture.bulk as bulk
import kafkalab.capture.capture as capture_module
import kafkalab.capture.deferred as deferred_module
from kafkalab.capture import read_capture

from tests.capture.builders import write_golden_pcap
from tests.capture.test_bulk_reader import CAPTURES, make_capture


def _captures(tmp_path):
    golden = tmp_path / "golden.pcap"
    write_golden_pcap(golden, mss=700)
    paths = [golden, *sorted(CAPTURES.glob("*.pcap"))]
    for seed in range(12):
        path = tmp_path / f"random{seed}.pcap"
        path.write_bytes(make_capture(random.Random(seed))[0])
        paths.append(path)
    return paths


def _tables(capture, order):
    return {name: getattr(capture, name) for name in order}


def _frames(capture):
    return [(f.row(), f.raw, f.stream_offset, f.topic_ids, f.body, f.inferred, f.message.diagnostics)
            for f in capture]


@pytest.fixture(autouse=True)
def every_produce_request_waits(monkeypatch):
    """The test captures' Produce requests are short: here they wait all the same (see WAITING_BYTES)."""
    monkeypatch.setattr(deferred_module, "WAITING_BYTES", 0)


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    return _captures(tmp_path_factory.mktemp("deferred"))


ORDERS = [("records", "frames", "exchanges", "connections"), ("connections", "records", "exchanges", "frames")]


def _described_in_the_read(path):
    """The capture as read with every frame described during the read (the general pipeline)."""
    capture_module.BULK = False
    try:
        return read_capture(path)
    finally:
        capture_module.BULK = True


@pytest.mark.parametrize("order", ORDERS)
def test_tables_are_the_same_whatever_is_asked_first(captures, order):
    deferred_somewhere = False
    for path in captures:
        first = read_capture(path)
        deferred_somewhere |= not first._store.described
        asked_first = _tables(first, order)
        fresh = read_capture(path)
        usual = _tables(fresh, ("frames", "exchanges", "connections", "records"))
        for name in order:
            pd.testing.assert_frame_equal(asked_first[name], usual[name], obj=f"{path.name} {name}")
        assert _frames(first) == _frames(fresh)
        assert first._analyzer.topic_names == fresh._analyzer.topic_names
        eager = _described_in_the_read(path)
        pd.testing.assert_frame_equal(asked_first["frames"], eager.frames, obj=f"{path.name} frames")
        pd.testing.assert_frame_equal(asked_first["records"], eager.records, obj=f"{path.name} records")
    assert deferred_somewhere                   # the captures do have frames whose describing waits


def test_frames_and_rows_asked_first_describe_the_deferred_frames(captures):
    for path in captures:
        usual = read_capture(path)
        table = usual.frames
        by_frame = read_capture(path)
        assert [by_frame[n].row() for n in range(1, len(by_frame) + 1)] == [f.row() for f in usual]
        by_rows = read_capture(path)
        assert [tuple(row) for row in by_rows.rows()] == [tuple(row) for row in usual.rows()]
        by_filter = read_capture(path)
        pd.testing.assert_frame_equal(by_filter.filter("record_count >= 0"), table)


def test_the_records_table_alone_describes_nothing(tmp_path, monkeypatch):
    calls = []
    describe = deferred_module.describe_deferred

    def counted(indexes, read, columns, extras):
        calls.extend(indexes)
        return describe(indexes, read, columns, extras)

    monkeypatch.setattr(bulk, "describe_deferred", counted)
    path = tmp_path / "golden.pcap"
    write_golden_pcap(path, mss=700)
    capture = read_capture(path)
    deferred = list(capture._store._deferred[0])
    assert deferred and not capture._store.described
    records = capture.records
    assert len(records) and calls == []
    assert not capture._store.described
    frames = capture.frames
    assert capture._store.described
    assert calls == deferred                      # each deferred frame described once, when the table was asked
    described = frames.iloc[deferred]
    assert set(described["api_key"]) <= {0, 1} and set(described["kind"]) == {"request", "response"}
    assert set(described[described["kind"] == "request"]["api_key"]) == {0}        # Produce requests only
    assert described["summary"].str.len().min() > 0 and described["api_name"].notna().all()
    capture.exchanges
    assert len(calls) == len(deferred)


def _long(raw: bytes) -> tuple[bytes, int]:
    """The head and length of ``raw`` as if its body went on for ``WAITING_BYTES`` more (all that is read of
    it is its head, with the size prefix saying so)."""
    length = deferred_module.WAITING_BYTES + len(raw)
    return (length - 4).to_bytes(4, "big") + raw[4:deferred_module.WAITING_HEAD], length


def _produce(version: int, acks: int, transactional_id) -> bytes:
    from kafkalab.protocol import encode_request

    body = {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": None}]}]}
    return encode_request("Produce", version, body, correlation_id=7, client_id="c")


@pytest.mark.parametrize("version", [0, 3, 8, 9, 12])
@pytest.mark.parametrize("transactional_id", [None, "", "tx-1", "x" * 300])
def test_a_produce_request_waits_only_when_it_expects_a_response(version, transactional_id, monkeypatch):
    """The rows stage pairs by acks before describing: a request waits only where its acks, read from the
    header's first bytes through the nullable transactional id (plain or compact by version), is not 0."""
    from kafkalab.protocol import decode_request

    monkeypatch.setattr(deferred_module, "WAITING_BYTES", 4096)
    assert deferred_module.waiting_request(*_long(_produce(version, 1, None))) is not None
    raw = _produce(version, 1, None)
    assert deferred_module.waiting_request(raw, len(raw)) is None          # short: described at once
    monkeypatch.setattr(deferred_module, "WAITING_BYTES", 0)
    waiting = deferred_module.waiting_request
    head = deferred_module.WAITING_HEAD
    tid = transactional_id if version >= 3 else None
    for acks in (0, 1, -1):
        raw = _produce(version, acks, tid)
        assert decode_request(raw).body["acks"] == acks
        waits = waiting(raw[:head], len(raw))
        if tid is not None and len(tid) > head:
            assert waits is None                # acks lies beyond the bytes looked at: described at once
        else:
            assert (waits is not None) == (acks != 0)
            assert waits is None or waits == (0, version, 7, "c")
    raw = _produce(version, 1, tid)
    assert waiting(raw[:head], len(raw) - 1) is None                 # size prefix not the frame's length
    assert waiting(_produce(13, 1, None)[:head], len(_produce(13, 1, None))) is None    # topic ids: at once
