"""Cutting a pcapng file into byte ranges: each range, read after the file's head (section header and interface
blocks), gives the whole file's packets with their interfaces' link types and timestamp resolutions; a file
with a second section or an interface described after packets does not land, and is read whole."""
from __future__ import annotations

import struct

import pytest

from kafkalab.pcap.files import iter_link_records
from kafkalab.pcap.index import NotIndexable, packet_index
from kafkalab.pcap.split import find_boundary, map_file, plan_ranges, ranges_meet, read_layout, walk_end
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


def walked(path, nominal) -> list[tuple[int, int]]:
    """Each range's resolved start and where its walk stopped (-1: it does not land), as its reader finds them."""
    layout, data = read_layout(path), map_file(str(path))
    starts = [find_boundary(data, layout, r.start) for r in nominal]
    return [(start, walk_end(data, layout, start, r.end)) for start, r in zip(starts, nominal)]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("pieces", [2, 7, 40])
def test_ranges_read_after_the_head_give_the_whole_files_packets(tmp_path, order, pieces):
    path = tmp_path / "three-interfaces.pcapng"
    path.write_bytes(pcapng_bytes(INTERFACES, packets(200), order=order))
    data = path.read_bytes()
    layout = read_layout(path)
    assert (layout.first_record, layout.interfaces) == (head_end(data, order), 3)
    nominal = plan_ranges(layout, -(-layout.size // pieces))
    ranges = walked(path, nominal)
    assert ranges_meet(nominal, ranges)
    assert ranges[0][0] == layout.first_record and ranges[-1][1] == layout.size
    head = data[:layout.first_record]
    from_ranges = [rec for start, end in ranges for rec in link_records(head + data[start:end])]
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
    ranges = walked(path, nominal)
    assert -1 in [end for _, end in ranges]         # the range holding the late block says it does not land
    assert not ranges_meet(nominal, ranges)
    data = map_file(str(path))
    refused = 0
    for (start, _), r in zip(ranges, nominal):      # and the index refuses that range (its head would not do)
        try:
            packet_index(data, start, r.end)
        except NotIndexable:
            refused += 1
    assert refused >= 1
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
    assert find_boundary(map_file(str(small)), read_layout(small), 0) == read_layout(small).first_record
