"""A large pcapng file is cut into byte ranges read by separate tasks, each after the file's section header
and interfaces, with the single-process engine's rows; one with an interface described after packets, or with
two sections, is read whole by one task, with the engine's rows too."""
from __future__ import annotations

import struct

import pytest

import kafkalab
from kafkalab.spark import read_capture
from tests.spark.captures import as_pcapng, interleaved_hosts_pcap
from tests.spark.equality import assert_same_rows


@pytest.fixture(scope="module")
def hosts_capture(tmp_path_factory):
    return interleaved_hosts_pcap(tmp_path_factory.mktemp("hosts") / "hosts.pcap")


def test_a_pcapng_file_cut_into_ranges_gives_the_engines_rows(spark_local, hosts_capture, tmp_path):
    path = as_pcapng(hosts_capture, tmp_path / "hosts.pcapng")
    target = path.stat().st_size // 6 + 5                   # cuts that fall inside blocks
    spark = read_capture(spark_local, [path], target_bytes=target)
    assert len(spark.units) >= 6 and all(start >= 0 for _, _, start, _ in spark.units)  # every range read on its own
    assert_same_rows(spark, kafkalab.read_capture(path))


def test_a_range_with_a_hostile_timestamp_is_read_by_the_general_reader_with_the_engines_rows(spark_local,
                                                                                              hosts_capture, tmp_path):
    # a packet block carrying a frame, mid-file, has its timestamp's top bit flipped: the index refuses that
    # range, the general reader shows the packet at time 0, exactly as the single-process engine does
    path = as_pcapng(hosts_capture, tmp_path / "hostile.pcapng")
    data = bytearray(path.read_bytes())
    position, blocks = 0, []
    while position < len(data):
        kind, length = struct.unpack_from("<II", data, position)
        if kind == 6 and length > 200:
            blocks.append(position)
        position += length
    data[blocks[len(blocks) // 2] + 15] ^= 0x80
    path.write_bytes(bytes(data))
    engine = kafkalab.read_capture(path)
    assert (engine.frames["time"].dt.year == 1970).sum() == 1
    target = len(data) // 5 + 3
    spark = read_capture(spark_local, [path], target_bytes=target)
    assert len(spark.units) >= 5 and all(start >= 0 for _, _, start, _ in spark.units)   # read in ranges
    assert_same_rows(spark, engine)


@pytest.mark.parametrize("layout", ["late-interface", "two-sections"])
def test_a_pcapng_whose_head_does_not_describe_every_packet_is_read_whole(spark_local, hosts_capture, tmp_path,
                                                                          layout):
    path = as_pcapng(hosts_capture, tmp_path / f"{layout}.pcapng", layout=layout)
    target = path.stat().st_size // 6 + 5
    spark = read_capture(spark_local, [path], target_bytes=target)
    assert spark.units == [(0, str(path), -1, -1)]
    assert_same_rows(spark, kafkalab.read_capture(path))
