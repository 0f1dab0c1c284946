"""Reassembly properties: permutations, duplicates, overlaps and drops of segments give the clean stream's
frames, minus what was dropped (reported as gaps); sequence numbers wrap."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kafkalab.capture import Analyzer, DataReceived, GapDetected, HalfStream
from kafkalab.pcap import TcpPacket
from kafkalab.protocol import encode_request

ACK, PSH, SYN = 0x10, 0x08, 0x02
CLIENT, SERVER = ("10.0.0.1", 40000), ("10.0.0.2", 9092)


def _stream(n: int) -> list[bytes]:
    return [encode_request("Heartbeat", 4, {"group_id": f"g{i}", "generation_id": i, "member_id": "m" * (i % 40)},
                           correlation_id=i, client_id="prop") for i in range(n)]


def _segments(data: bytes, cuts: list[int]):
    points = sorted({c % len(data) for c in cuts} | {0, len(data)})
    return [(a, data[a:b]) for a, b in zip(points, points[1:])]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 10**6), max_size=40), st.randoms(use_true_random=False),
       st.floats(0, 0.3))
def test_halfstream_reorders_duplicates_and_overlaps(isn, cuts, rnd, dup_rate):
    data = b"".join(_stream(12))
    segments = _segments(data, cuts)
    wire = list(segments)
    for start, piece in segments:                  # duplicates and overlapping retransmissions
        if rnd.random() < dup_rate:
            wire.append((start, piece))
        if rnd.random() < dup_rate and start + len(piece) < len(data):
            wire.append((start, data[start:start + len(piece) + 7]))
    rnd.shuffle(wire)
    half = HalfStream()
    half.syn(isn)
    events = []
    for start, piece in wire:
        events += half.segment((isn + 1 + start) % 2**32, piece)
    events += half.finish()
    got = b"".join(e.data for e in events if isinstance(e, DataReceived))
    assert got == data
    assert not [e for e in events if isinstance(e, GapDetected)]


def _packets(data: bytes, segments, isn: int, drop: set[int]):
    out = [TcpPacket(0, 0, *CLIENT[:1], CLIENT[1], SERVER[0], SERVER[1], isn, 0, SYN, b"")]
    for i, (start, piece) in enumerate(segments):
        if i not in drop:
            out.append(TcpPacket(i + 1, i + 1, CLIENT[0], CLIENT[1], SERVER[0], SERVER[1],
                                 (isn + 1 + start) % 2**32, 0, ACK | PSH, piece))
    # the server acknowledges everything (as a real peer does): lost tails become visible
    out.append(TcpPacket(99, 99, SERVER[0], SERVER[1], CLIENT[0], CLIENT[1], 7, (isn + 1 + len(data)) % 2**32,
                         ACK, b""))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 10**6), max_size=30), st.randoms(use_true_random=False),
       st.sets(st.integers(0, 40), max_size=4))
def test_drops_lose_only_touched_frames_and_are_reported(isn, cuts, rnd, drop):
    frames = _stream(15)
    data = b"".join(frames)
    segments = _segments(data, cuts)
    drop = {d for d in drop if d < len(segments)}
    packets = _packets(data, segments, isn, drop)
    body = packets[1:-1]
    rnd.shuffle(body)
    analyzer = Analyzer()
    got = []
    for p in [packets[0]] + body + packets[-1:]:
        got += analyzer.feed(p)
    got += analyzer.finish()
    lost = set()                                   # frames overlapping a dropped segment
    bounds, pos = [], 0
    for raw in frames:
        bounds.append((pos, pos + len(raw)))
        pos += len(raw)
    for d in drop:
        start, piece = segments[d]
        lost |= {i for i, (a, b) in enumerate(bounds) if a < start + len(piece) and start < b}
    by_id = {f.correlation_id: f for f in got if f.api_key == 12}
    assert len(by_id) == len(got) and all(f.raw == frames[f.correlation_id] for f in got)   # nothing invented
    assert set(by_id) == set(range(15)) - lost         # every untouched frame is recovered after resync
    if not drop:
        assert all(not f.diagnostics for f in got)
        return
    assert analyzer.connections[0].gaps >= 1
    for i, frame in sorted(by_id.items()):
        if i - 1 in lost:                              # the first frame after a loss says so...
            assert any(d.startswith("gap before frame") for d in frame.diagnostics), (i, frame.diagnostics)
        else:                                          # ...and frames after a clean one carry no loss notes
            assert not frame.diagnostics, (i, frame.diagnostics)


def test_first_bytes_lost_then_a_false_header_does_not_swallow_the_next_frame():
    """Regression: the stream's first byte is lost; the bytes right after it look like a request header with
    a 1.6 MB size, which waits for bytes that never come (the next segment is lost too). The whole frame 1
    behind that false start must still come out, marked as following a gap."""
    frames = _stream(15)
    data = b"".join(frames)
    segments = _segments(data, [1, 59])                # frame 1 is exactly bytes [29, 59)
    analyzer = Analyzer()
    got = []
    for p in _packets(data, segments, 0, {0, 2}):
        got += analyzer.feed(p)
    got += analyzer.finish()
    assert [f.correlation_id for f in got] == [1]
    assert got[0].diagnostics[0] == "gap before frame: 1 bytes lost at stream offset 0"

