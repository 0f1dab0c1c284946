"""The streams and frames stages on whole files (kafkalab.capture.streams): which connections are regular, and
the frames cut from them, checked against what was sent."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kafkalab.capture import read_capture
from kafkalab.capture.frame_store import CaptureFileChanged
from kafkalab.capture.segments import span_bytes
from kafkalab.capture.streams import streams
from kafkalab.pcap import TcpPcapWriter
from kafkalab.pcap.index import packet_index, pcap_records
from kafkalab.protocol import encode_request, encode_response


def _heartbeat(correlation_id: int) -> tuple[bytes, bytes]:
    body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    return (encode_request("Heartbeat", 3, body, correlation_id=correlation_id, client_id="c"),
            encode_response("Heartbeat", 3, {"throttle_time_ms": 0, "error_code": 0}, correlation_id=correlation_id))


def _write(path: Path, mss: int, exchanges: int = 4) -> list[bytes]:
    sent = []
    with TcpPcapWriter(path, mss=mss) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), 1.0)
        for cid in range(1, exchanges + 1):
            request, response = _heartbeat(cid)
            writer.send(conn, True, request, 1.0 + cid)
            writer.send(conn, False, response, 1.1 + cid)
            sent += [request, response]
        writer.close(conn, 9.0)
    return sent


def test_frames_cut_across_segments_even_through_the_size_prefix(tmp_path: Path) -> None:
    path = tmp_path / "tiny-segments.pcap"
    sent = _write(path, mss=3)                      # every size prefix is split over two segments
    data = path.read_bytes()
    conns, _, frames = streams(packet_index(data), data, {9092})
    assert [c.irregular for c in conns] == [False]
    got = [span_bytes(memoryview(data), f[6]) if len(f) == 7 else data[f[4]:f[5]] for f in frames]
    assert got == sent
    assert [f.raw for f in read_capture(path)] == sent


def test_frame_bytes_are_read_back_from_an_unchanged_file_only(tmp_path: Path) -> None:
    path = tmp_path / "capture.pcap"
    sent = _write(path, mss=40)
    cap = read_capture(path)
    assert cap[2].raw == sent[1]                    # read back from the file on first use
    with open(path, "ab") as grown:                 # the capture goes on being written: fine
        grown.write(b"\0" * 16)
    assert cap[3].raw == sent[2]
    path.write_bytes(path.read_bytes()[:200])       # cut short: the bytes are gone
    with pytest.raises(CaptureFileChanged, match="changed after it was read"):
        cap[4].raw


def test_bytes_lost_just_before_a_fin_make_the_connection_irregular(tmp_path: Path) -> None:
    """The last request (fire and forget, nothing answers it) is lost; only its FIN's sequence number and the
    peer's acknowledgement of the FIN tell: the general path reports the gap."""
    path = tmp_path / "lost-before-fin.pcap"
    with TcpPcapWriter(path, mss=1448) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), 1.0)
        request, response = _heartbeat(1)
        writer.send(conn, True, request, 2.0)
        writer.send(conn, False, response, 2.1)
        writer.send(conn, True, _heartbeat(2)[0], 3.0)
        writer.close(conn, 4.0)
    data = path.read_bytes()
    records = pcap_records(data)
    lost = int(records.start[-4]) - 16                                    # the second request's segment
    damaged = data[:lost] + data[int(records.start[-3]) - 16:]
    (tmp_path / "damaged.pcap").write_bytes(damaged)
    conns, _, frames = streams(packet_index(damaged), damaged, {9092})
    assert conns[0].irregular and not frames
    cap = read_capture(tmp_path / "damaged.pcap")
    assert [f.raw for f in cap] == [request, response]
    assert cap.connections["gaps"].tolist() == [1]


def _produce(correlation_id: int, acks: int) -> bytes:
    body = {"transactional_id": None, "acks": acks, "timeout_ms": 100, "topic_data": []}
    return encode_request("Produce", 7, body, correlation_id=correlation_id, client_id="p")


@pytest.mark.parametrize("case", ["stray response", "answer to acks=0", "clean"])
def test_the_rule_on_responses_gives_the_same_verdicts_in_pass_1_and_in_decoding(tmp_path: Path, monkeypatch,
                                                                                  case: str) -> None:
    """A whole read leaves the rule that every response answers a waiting request to its decoding (each
    request's header read once); where it fails, pass 1 decides instead. Either way: pass 1's verdicts."""
    from kafkalab.capture import bulk

    path = tmp_path / "capture.pcap"
    with TcpPcapWriter(path, mss=1448) as writer:
        for n in range(2):
            conn = writer.open_connection(("10.0.0.%d" % (n + 1), 40000), ("10.0.0.9", 9092), 1.0 + n)
            for cid in range(1, 4):
                request, response = _heartbeat(cid)
                writer.send(conn, True, request, 2.0 + cid + n / 10)
                writer.send(conn, False, response, 2.05 + cid + n / 10)
            if n == 1 and case == "stray response":
                writer.send(conn, False, _heartbeat(77)[1], 6.0)        # answers nothing asked
                writer.send(conn, True, _heartbeat(77)[0], 6.1)
            if n == 1 and case == "answer to acks=0":
                writer.send(conn, True, _produce(50, acks=0), 6.0)
                writer.send(conn, False, _heartbeat(50)[1], 6.1)        # answers it all the same
            writer.close(conn, 9.0)
    rows = bulk._rows
    checked = []

    def counted(*args, answers):
        checked.append(answers)
        return rows(*args, answers=answers)

    monkeypatch.setattr(bulk, "_rows", counted)
    one_pass = read_capture(path)
    assert checked == ([False, True] if case == "stray response" else [False])
    monkeypatch.setattr(bulk, "_rows", lambda *args, answers: rows(*args, answers=True))
    two_passes = read_capture(path)
    for table in ("frames", "exchanges", "connections"):
        pd.testing.assert_frame_equal(getattr(one_pass, table), getattr(two_passes, table))
    assert len(one_pass) == 12 + (2 if case != "clean" else 0)



@pytest.mark.parametrize("window", [None, 700, 3000])
@pytest.mark.parametrize("seed", range(6))
def test_runs_of_whole_segments_among_split_and_pipelined_frames_cut_as_sent(tmp_path: Path, monkeypatch,
                                                                             window, seed) -> None:
    """A direction's segments mix runs of one-whole-frame segments (a run is cut at once) with frames split
    over segments and segments holding several frames, over windows that end anywhere (the segments of an
    unfinished frame held over to the next): every frame is cut as it was sent, at its stream offset."""
    import random

    import kafkalab.capture.capture as capture_module
    import kafkalab.pcap.index as index_module

    monkeypatch.setattr(capture_module, "ENGINE_MIN_BYTES", 0)      # the engine reads even a small file
    if window is not None:
        monkeypatch.setattr(index_module, "WINDOW", window)
    rng = random.Random(seed)
    path, sent, cid = tmp_path / "mixed.pcap", {True: [], False: []}, 0
    with TcpPcapWriter(path, mss=100) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), 1.0)
        ts = 1.0
        for _ in range(80):
            batch = []
            for _ in range(rng.choice([1, 1, 1, 1, 2, 3])):     # several frames in one write: one segment
                cid += 1
                body = {"group_id": "g", "generation_id": 1, "member_id": "m" * rng.choice([1, 1, 5, 90, 250]),
                        "group_instance_id": None}
                batch.append((encode_request("Heartbeat", 3, body, correlation_id=cid, client_id="c"),
                              encode_response("Heartbeat", 3, {"throttle_time_ms": 0, "error_code": 0},
                                              correlation_id=cid)))
            for from_client in (True, False):
                frames = [pair[0 if from_client else 1] for pair in batch]
                ts += 0.001
                writer.send(conn, from_client, b"".join(frames), ts)
                sent[from_client] += frames
        writer.close(conn, ts + 1)
    data = path.read_bytes()
    conns, _, cut = streams(packet_index(data), data, {9092})
    assert [c.irregular for c in conns] == [False]
    got = {True: [], False: []}
    for frame in cut:
        got[frame[2] == conns[0].client].append(
            (frame[3], span_bytes(memoryview(data), frame[6]) if len(frame) == 7 else data[frame[4]:frame[5]]))
    for from_client in (True, False):
        offsets = [sum(map(len, sent[from_client][:k])) for k in range(len(sent[from_client]))]
        assert got[from_client] == list(zip(offsets, sent[from_client]))
    cap = read_capture(path)
    assert cap.frames["diagnostics"].map(len).sum() == 0
    assert [f.raw for f in cap if f.kind == "request"] == sent[True]
    assert [f.raw for f in cap if f.kind == "response"] == sent[False]
