"""Reassembly properties: permutations, duplicates, overlaps and drops of segments give the clean stream's
frames, minus what was dropped (reported as gaps); sequence numbers wrap."""
from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

from kafkalab.capture import Analyzer, DataReceived, GapDetected, HalfStream
from kafkalab.capture.plausible import (MAX_RESYNC_FRAME, REQUEST_START, RESPONSE_START, request_header_ok,
                                        request_versions)
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



def _exchanges(n: int):
    """n Heartbeat exchanges as (request, response) frames."""
    from kafkalab.protocol import encode_response
    return [(raw, encode_response("Heartbeat", 4, {"throttle_time_ms": 0, "error_code": 0}, correlation_id=i))
            for i, raw in enumerate(_stream(n))]


def _conversation(pairs, isn: int = 1000, server_isn: int = 5000):
    """Packets of a connection: the handshake, then for each exchange the request in two segments, the
    server's acknowledgement (pure ACK) and its response (with an ACK). Each packet is a dict to rearrange."""
    def packet(n, client, seq, ack, flags, payload=b""):
        src, dst = (CLIENT, SERVER) if client else (SERVER, CLIENT)
        return TcpPacket(n, n, src[0], src[1], dst[0], dst[1], seq % 2**32, ack % 2**32, flags, payload)
    out = [packet(0, True, isn, 0, SYN), packet(0, False, server_isn, isn + 1, SYN | ACK),
           packet(0, True, isn + 1, server_isn + 1, ACK)]
    c, s = isn + 1, server_isn + 1
    for request, response in pairs:
        half = len(request) // 2
        out.append(packet(0, True, c, s, ACK | PSH, request[:half]))
        out.append(packet(0, True, c + half, s, ACK | PSH, request[half:]))
        c += len(request)
        out.append(packet(0, False, s, c, ACK))
        out.append(packet(0, False, s, c, ACK | PSH, response))
        s += len(response)
    return out


def _run(packets):
    analyzer = Analyzer()
    frames = []
    for number, p in enumerate(packets, 1):
        frames += analyzer.feed(TcpPacket(number, number * 1000, p.src, p.sport, p.dst, p.dport, p.seq, p.ack,
                                          p.flags, p.payload))
    return analyzer, frames + analyzer.finish()


def test_an_acknowledgement_recorded_before_its_data_loses_nothing():
    """Captures merged from several queues can hold the server's ACK just before the segment it acknowledges:
    the segment is waited for (a few packets), not given up."""
    packets = _conversation(_exchanges(3))
    second = 3 + 4 + 1                                 # exchange 1: its second request segment, then the pure ACK
    packets[second], packets[second + 1] = packets[second + 1], packets[second]
    analyzer, frames = _run(packets)
    assert analyzer.connections[0].gaps == 0
    assert [(f.kind, f.correlation_id) for f in frames] == [(k, i) for i in range(3) for k in ("request", "response")]
    assert all(f.request_frame or f.kind == "request" for f in frames) and not any(f.diagnostics for f in frames)


def test_an_acknowledged_hole_is_given_up_when_the_peer_answers():
    """A segment the capture missed, acknowledged and answered: the gap is reported before the answer, so
    the frames behind the hole still come first and the answer pairs with its request."""
    packets = _conversation(_exchanges(3))
    del packets[3 + 4]                                 # exchange 1's first request segment
    _, frames = _run(packets)
    assert [(f.kind, f.correlation_id) for f in frames] == [
        ("request", 0), ("response", 0), ("response", 1), ("request", 2), ("response", 2)]
    assert frames[2].inferred and frames[4].request_frame == frames[3].frame
    assert any(d.startswith("gap before frame") for d in frames[3].diagnostics)


def test_an_acknowledged_hole_with_only_acknowledgements_after_it_is_given_up_after_a_few_packets():
    frames = _stream(3)
    data = b"".join(frames)
    segments = _segments(data, [len(frames[0]), len(frames[0]) + 5])
    packets = _packets(data, segments, 0, {1})[:-1]
    ack = TcpPacket(9, 9, SERVER[0], SERVER[1], CLIENT[0], CLIENT[1], 7, (1 + len(data)) % 2**32, ACK, b"")
    analyzer = Analyzer()
    got = []
    for p in packets + [ack] * 4:                   # the first acknowledgement, then three more packets
        got += analyzer.feed(p)
    assert [f.correlation_id for f in got] == [0]      # still waiting: the segment may yet be recorded
    got += analyzer.feed(ack)
    assert [f.correlation_id for f in got] == [0, 2] and analyzer.connections[0].gaps == 1


def test_a_false_frame_start_after_a_loss_does_not_hold_back_the_frames_behind_it():
    """After a gap the remains of the cut frame are scanned for a frame start. Zero-heavy remains read as the
    header of a 223 KB Produce v1 request; the whole, decodable frame right behind it wins at once."""
    from kafkalab.capture.framing import FrameCutter
    from kafkalab.capture.plausible import plausible_request

    frames = _stream(3)
    remains = frames[1][len(frames[1]) // 2:]
    assert plausible_request(remains + frames[2], 3) is None       # the false start, waiting for its bytes
    cutter = FrameCutter(plausible_request)
    assert [f.raw for f in cutter.data(0, frames[0])] == [frames[0]]
    cutter.gap(len(frames[0]), len(frames[1]) - len(remains))
    assert cutter.data(len(frames[0]) + len(frames[1]) - len(remains), remains) == []
    (cut,) = cutter.data(sum(map(len, frames[:2])), frames[2])
    assert cut.raw == frames[2] and cut.offset == sum(map(len, frames[:2]))
    assert cut.diagnostics[-1] == f"resynchronised: skipped {len(remains)} bytes to find a frame start"


@settings(max_examples=300, deadline=None)
@given(st.integers(10, MAX_RESYNC_FRAME), st.sampled_from(sorted(request_versions().items())), st.data(),
       st.integers(0, 2**31 - 1))
def test_the_start_patterns_let_every_plausible_header_through(size, api, data, correlation_id):
    """Resynchronisation and role finding skip, in C, every position the start patterns do not match: they
    must match wherever the Python checks could say yes (or frames would be missed after a loss)."""
    api_key, (low, high) = api
    version = data.draw(st.integers(low, high))
    client_id_length = data.draw(st.integers(-1, min(size - 10, 32767)))
    header = struct.pack(">ihhih", size, api_key, version, correlation_id, client_id_length) + b"\0" * 8
    assert request_header_ok(header, 0) and REQUEST_START.match(header)
    response = struct.pack(">ii", data.draw(st.integers(4, MAX_RESYNC_FRAME)), correlation_id)
    assert RESPONSE_START.match(response)
