"""Cutting a pcapng file into byte ranges: each range, read after the file's head (section header and interface
blocks), gives the whole file's packets with their interfaces' link types and timestamp resolutions; a file
with a second section or an interface described after packets does not land, and is read whole."""
from __future__ import annotations

import struct

import pytest

from kafkalab.pcap.files import iter_link_records
from kafkalab.pcap.split import ByteRange, check_range, plan_ranges, read_layout
from kafkalab.spark.plan import plan, splittable

from tests.capture.builders import _block, pcapng_bytes
from tests.capture.test_pcap_split import synthetic_packets

INTERFACES = [(1, None), (113, 9), (1, 3)]       # Ethernet in µs, Linux cooked in ns, Ethernet in ms


def packets(count: int, interfaces: int = 3) -> list[tuple]:
    return [(i % interfaces, 1_700_000_000_000_000 + 997 * i, p, "epb")
            for i, p in enumerate(synthetic_packets(count, 4))]


def head_end(data: bytes, order: str) -> int:
    """The end of the section header and the interface blocks right after it (a plain walk, from the spec)."""
    position = struct.unpack_from(order + "I", data, 4)[0]
    while struct.unpack_from(order + "I", data, position)[0] == 1:
        position += struct.unpack_from(order + "I", data, position + 4)[0]
    return position


def link_records(source) -> list[tuple]:
    return [(r.ts_ns, r.linktype, r.data, r.orig_len, r.interface) for r in iter_link_records(source)]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("pieces", [2, 7, 40])
def test_ranges_read_after_the_head_give_the_whole_files_packets(tmp_path, order, pieces):
    path = tmp_path / "three-interfaces.pcapng"
    path.write_bytes(pcapng_bytes(INTERFACES, packets(200), order=order))
    data = path.read_bytes()
    layout = read_layout(path)
    assert (layout.first_record, layout.interfaces) == (head_end(data, order), 3)
    checks = [check_range(r) for r in plan_ranges(layout, -(-layout.size // pieces))]
    assert all(c.lands for c in checks)
    assert checks[0].range.start == layout.first_record and checks[-1].range.end == layout.size
    assert all(a.range.end == b.range.start for a, b in zip(checks, checks[1:]))
    head = data[:layout.first_record]
    from_ranges = [rec for c in checks for rec in link_records(head + data[c.range.start:c.range.end])]
    whole = link_records(path)
    assert len(whole) == 200 and {linktype for _, linktype, *_ in whole} == {1, 113}
    assert from_ranges == whole


def late_interface(order: str) -> bytes:
    """Two interfaces up front, then, halfway through the packets, a third that later packets use."""
    first = pcapng_bytes(INTERFACES[:2], packets(100, 2), order=order)
    later = pcapng_bytes(INTERFACES, packets(100), order=order)
    return first + _idb(order, *INTERFACES[2]) + later[head_end(later, order):]


def _idb(order: str, linktype: int, tsresol: int) -> bytes:
    options = struct.pack(order + "HHB3x", 9, 1, tsresol) + struct.pack(order + "HH", 0, 0)
    return _block(order, 1, struct.pack(order + "HHI", linktype, 0, 0) + options)


def two_sections(order: str) -> bytes:
    """Two sections, the second with other interfaces (its packets' interface numbers mean other things)."""
    return (pcapng_bytes(INTERFACES[:2], packets(100, 2), order=order)
            + pcapng_bytes(INTERFACES[::-1], packets(100), order=order))


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("build", [late_interface, two_sections], ids=["late-interface", "two-sections"])
def test_an_interface_after_packets_or_a_second_section_is_read_whole(tmp_path, order, build):
    path = tmp_path / "unusual.pcapng"
    path.write_bytes(build(order))
    layout = read_layout(path)
    nominal = plan_ranges(layout, -(-layout.size // 9))
    checks = [check_range(r) for r in nominal]
    assert not all(c.lands for c in checks)         # the range holding the late block says it does not land
    # the driver plans ranges (it reads the head only); the tasks' checks send the file to one reader
    assert [u[2:] for u in plan([path], -(-layout.size // 9)).units] == [(r.start, r.end) for r in nominal]


def test_a_pcapng_without_a_sound_head_or_small_is_one_whole_file_unit(tmp_path):
    no_interface = tmp_path / "no-interface.pcapng"
    data = pcapng_bytes([], [], order="<")
    no_interface.write_bytes(data)
    assert read_layout(no_interface).interfaces == 0 and not splittable(str(no_interface), 16)
    damaged = tmp_path / "damaged.pcapng"
    good = pcapng_bytes(INTERFACES, packets(20))
    damaged.write_bytes(good[:4] + struct.pack("<I", 13) + good[8:])      # a section length no block can have
    assert read_layout(damaged).first_record == 0 and not splittable(str(damaged), 16)
    small = tmp_path / "small.pcapng"
    small.write_bytes(good)
    assert splittable(str(small), 1024) and not splittable(str(small), len(good))
    assert plan([small], len(good)).units == [(0, str(small), -1, -1)]
    assert check_range(ByteRange(str(small), 0, len(good))).range.start == read_layout(small).first_record
