"""Cutting a capture file into byte ranges: every nominal cut lands on a true record start, neighbouring ranges
meet exactly (by the plain walk and by the packet index's walk over a range), and a chance chain inside packet
data is caught by the walk from the previous range."""
from __future__ import annotations

import bisect
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from kafkalab.pcap import CaptureError
from kafkalab.pcap.index import packet_index
from kafkalab.pcap.split import ByteRange, find_boundary, map_file, plan_ranges, ranges_meet, read_layout, walk_end

from tests.capture.builders import pcap_bytes, pcapng_bytes

SHIPPED = sorted((Path(__file__).resolve().parents[2] / "captures").glob("*.pcap"))


def true_starts(data: bytes) -> list[int]:
    """Record offsets by a plain walk from the file's start (written from the format specs, not the module)."""
    magic = struct.unpack_from("<I", data)[0]
    if magic == 0x0A0D0D0A:
        order = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        position, starts = 0, []
        while position < len(data):
            starts.append(position)
            position += struct.unpack_from(order + "I", data, position + 4)[0]
        return starts
    order = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    position, starts = 24, []
    while position < len(data):
        starts.append(position)
        position += 16 + struct.unpack_from(order + "I", data, position + 8)[0]
    return starts


def check_every_cut(path: Path, cuts) -> None:
    layout = read_layout(path)
    data = path.read_bytes()
    starts = true_starts(data)
    for cut in cuts:
        later = bisect.bisect_left(starts, cut)
        expected = layout.first_record if cut <= layout.first_record else (starts + [len(data)])[later]
        assert find_boundary(data, layout, cut) == expected, (path.name, cut)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_cut_of_a_shipped_capture_finds_the_next_record(path):
    size = path.stat().st_size
    rng = random.Random(size)
    check_every_cut(path, [rng.randrange(size) for _ in range(400)] + list(range(0, min(size, 3000), 7)))


def synthetic_packets(count: int, seed: int) -> list[bytes]:
    """Ethernet frames of random sizes, from a few bytes to a jumbo segment, with random payload bytes."""
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([14, 60, 600, 1514, 9000, rng.randrange(1, 20000)])) for _ in range(count)]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nanos", [False, True])
def test_every_cut_of_a_classic_pcap_in_either_byte_order(tmp_path, order, nanos):
    packets = synthetic_packets(300, seed=len(order) + nanos)
    path = tmp_path / "random.pcap"
    path.write_bytes(pcap_bytes([(1_700_000_000 + i * 0.001, p) for i, p in enumerate(packets)],
                                order=order, nanos=nanos))
    size = path.stat().st_size
    check_every_cut(path, random.Random(1).sample(range(size), 1500))


@pytest.mark.parametrize("order", ["<", ">"])
def test_every_cut_of_a_pcapng_file(tmp_path, order):
    packets = synthetic_packets(300, seed=3)
    blocks = [(i % 2, 1_700_000_000_000_000 + i, p, ("epb", "spb", "pb")[i % 3]) for i, p in enumerate(packets)]
    path = tmp_path / "random.pcapng"
    path.write_bytes(pcapng_bytes([(1, None), (1, 9)], blocks, order=order))
    size = path.stat().st_size
    check_every_cut(path, random.Random(2).sample(range(size), 1500))


def walks(data, layout, nominal) -> list[tuple[int, int, int]]:
    """Each range as its own reader sees it: (resolved start, the plain walk's stop, the index's walk's stop)."""
    out = []
    for r in nominal:
        start = find_boundary(data, layout, r.start)
        out.append((start, walk_end(data, layout, start, r.end), packet_index(data, start, r.end).end))
    return out


@pytest.mark.parametrize("pieces", [1, 2, 3, 7, 16, 61])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_ranges_walked_on_their_own_partition_the_records_and_neighbours_meet(tmp_path, pieces, fmt):
    packets = synthetic_packets(500, seed=9)
    path = tmp_path / f"ranges.{fmt}"
    path.write_bytes(pcap_bytes([(1_700_000_000 + i, p) for i, p in enumerate(packets)]) if fmt == "pcap" else
                     pcapng_bytes([(1, None), (1, 9)], [(i % 2, 1_700_000_000_000_000 + i, p, "epb")
                                                        for i, p in enumerate(packets)]))
    layout = read_layout(path)
    data = map_file(str(path))
    nominal = plan_ranges(layout, -(-layout.size // pieces))
    walked = walks(data, layout, nominal)
    assert [plain for _, plain, _ in walked] == [indexed for _, _, indexed in walked]     # both walks agree
    assert ranges_meet(nominal, [(start, end) for start, end, _ in walked])
    assert walked[0][0] == layout.first_record and walked[-1][1] == layout.size
    whole = packet_index(data)
    by_range = [packet_index(data, start, end) for start, end, _ in walked]
    assert np.array_equal(np.concatenate([index.payload_start for index in by_range]), whole.payload_start)
    assert sum(len(index.records.start) for index in by_range) == len(whole.records.start) == 500
    starts = true_starts(path.read_bytes())
    covered = [s for start, end, _ in walked for s in starts if start <= s < end]
    assert covered == [s for s in starts if s >= layout.first_record]


def test_a_walk_that_cannot_reach_its_end_does_not_land(tmp_path):
    packets = synthetic_packets(60, seed=5)
    data = bytearray(pcap_bytes([(1_700_000_000 + i, p) for i, p in enumerate(packets)]))
    path = tmp_path / "cut-short.pcap"
    path.write_bytes(bytes(data[:-5]))                       # the last record runs past the end of the file
    layout = read_layout(path)
    nominal = plan_ranges(layout, -(-layout.size // 3))
    starts = [find_boundary(path.read_bytes(), layout, r.start) for r in nominal]
    ends = [walk_end(path.read_bytes(), layout, s, r.end) for s, r in zip(starts, nominal)]
    assert ends[-1] == -1 and not ranges_meet(nominal, list(zip(starts, ends)))
    assert ranges_meet(nominal[:-1], list(zip(starts, ends))[:-1]) is False     # nor end where the file does
    assert not ranges_meet(nominal, [])


def test_a_capture_inside_packet_data_is_caught_by_the_walk_from_the_previous_range(tmp_path):
    # The middle packet carries a whole pcap chain of its own: a cut inside it finds that chain's false start,
    # and the previous range's walk, which hops over the real lengths, lands elsewhere.
    inner = pcap_bytes([(1_700_000_000 + i, bytes(40)) for i in range(30)])[24:]
    packets = [bytes(100)] * 5 + [inner] + [bytes(100)] * 5
    path = tmp_path / "nested.pcap"
    path.write_bytes(pcap_bytes([(1_700_000_000 + i, p) for i, p in enumerate(packets)]))
    layout = read_layout(path)
    data = path.read_bytes()
    starts = true_starts(data)
    carrier = starts[5]
    cut = carrier + 16 + 10
    false_start = find_boundary(data, layout, cut)
    assert false_start not in starts                                  # fooled, as any heuristic can be...
    assert walk_end(data, layout, starts[0], false_start) != false_start   # ...and the walk says so,
    assert packet_index(data, starts[0], false_start).end != false_start   # the index's walk too
    nominal = [ByteRange(str(path), 24, cut), ByteRange(str(path), cut, len(data))]
    walked = [(24, packet_index(data, 24, cut).end), (false_start, walk_end(data, layout, false_start, len(data)))]
    assert not ranges_meet(nominal, walked)


def test_files_that_are_not_captures_are_refused_with_their_name(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a capture")
    with pytest.raises(CaptureError, match="notes.txt"):
        read_layout(text)
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    with pytest.raises(CaptureError, match="only 0 bytes"):
        read_layout(empty)
    with pytest.raises(CaptureError, match="cannot open"):
        read_layout(tmp_path / "missing.pcap")
