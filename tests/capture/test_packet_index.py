"""The packet index (first stage of the capture pipeline): every TCP segment's headers as columns, checked
against tshark on the shipped captures and against the builders' known packets for every link layer and file
format; records it does not cover are left to the general decoder, never misread."""
from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from kafkalab.pcap.index import NotIndexable, packet_index

from tests.capture.builders import pcap_bytes, pcapng_bytes
from tests.capture.test_pcap_formats import LINKS, PAYLOAD, _ethernet, _written_ip_packets

CAPTURES = sorted((Path(__file__).resolve().parents[2] / "captures").glob("*.pcap"))


def _rows(index, data: bytes) -> list[tuple]:
    return [(int(n), socket.inet_ntoa(int(s).to_bytes(4, "big")), int(sp), socket.inet_ntoa(int(d).to_bytes(4, "big")),
             int(dp), int(seq), int(ack), int(flags), bytes(data[int(p):int(p) + int(length)]))
            for n, s, sp, d, dp, seq, ack, flags, p, length in zip(
                index.number, index.src, index.sport, index.dst, index.dport, index.seq, index.ack, index.flags,
                index.payload_start, index.payload_length)]


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
@pytest.mark.parametrize("path", CAPTURES[:4], ids=lambda p: p.stem)
def test_the_index_agrees_with_tshark(path: Path) -> None:
    data = path.read_bytes()
    index = packet_index(data)
    fields = ["frame.number", "ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", "tcp.seq_raw", "tcp.ack_raw",
              "tcp.flags", "tcp.len"]
    command = ["tshark", "-r", str(path), "-n", "-o", "tcp.desegment_tcp_streams:FALSE", "-Y", "tcp", "-T",
               "fields"] + [arg for name in fields for arg in ("-e", name)]
    lines = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120).stdout.splitlines()
    theirs = [(int(n), src, int(sp), dst, int(dp), int(seq), int(ack), int(flags, 16) & 0x3F, int(length))
              for n, src, sp, dst, dp, seq, ack, flags, length in (line.split("\t") for line in lines)]
    ours = [row[:8] + (len(row[8]),) for row in _rows(index, data)]
    assert ours == theirs and len(ours) > 10


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("fmt", ["pcap-le", "pcap-be-nanos", "pcapng"])
def test_every_link_layer_and_format(link: str, fmt: str) -> None:
    linktype, wrap = LINKS[link]
    packets = _written_ip_packets()
    if fmt == "pcapng":
        data = pcapng_bytes([(linktype, 9)], [(0, round(ts * 1e9), wrap(ip), "epb") for ts, ip in packets])
    else:
        data = pcap_bytes([(ts, wrap(ip)) for ts, ip in packets], linktype=linktype, order="<" if fmt == "pcap-le"
                          else ">", nanos=fmt != "pcap-le")
    index = packet_index(data)
    if link in ("vlan", "qinq"):                 # VLAN tags: left to the general decoder
        assert len(index) == 0 and index.others.tolist() == list(range(len(packets)))
        return
    rows = _rows(index, data)
    assert [r[8] for r in rows if r[8]] == [PAYLOAD] and not len(index.others)
    assert index.payload_head.tolist() == [int.from_bytes(r[8][:4], "big") if len(r[8]) >= 4 else -1 for r in rows]
    assert rows[0][1:3] == ("192.168.1.1", 5555) and rows[0][3:5] == ("192.168.1.2", 9092)
    assert [r[7] for r in rows[:2]] == [0x02, 0x12]
    assert index.ts_ns.tolist()[0] == 1_500_000_000 and index.ts_ns.tolist()[3] == 1_750_000_000


def test_what_the_index_does_not_cover_is_left_to_the_general_decoder() -> None:
    ips = [ip for _, ip in _written_ip_packets()]
    options = bytearray(ips[3])                   # IP options: covered (the header length is read)
    options = bytes([0x46]) + options[1:2] + (len(options) + 4).to_bytes(2, "big") + options[4:20] + \
        b"\x01\x01\x01\x00" + options[20:]
    fragment = bytearray(ips[1])
    fragment[6:8] = b"\x20\x00"                   # more fragments
    snapped = _ethernet(ips[3])[:50]
    data = pcap_bytes([(1.0, _ethernet(ips[0])), (1.1, _ethernet(bytes(fragment))), (1.2, _ethernet(options)),
                       (1.3, snapped, len(_ethernet(ips[3]))), (1.4, b"\x02" * 12 + b"\x86\xdd" + b"\x00" * 60)])
    index = packet_index(data)
    assert index.number.tolist() == [1, 3] and index.others.tolist() == [1, 3, 4]
    assert bytes(data[int(index.payload_start[1]):][:len(PAYLOAD)]) == PAYLOAD


@pytest.mark.parametrize("data", [b"", b"\x1f\x8b\x08" + b"\x00" * 30, b"not a capture at all, no"])
def test_files_the_index_does_not_read_say_so(data: bytes) -> None:
    with pytest.raises(NotIndexable):
        packet_index(data)


def test_a_truncated_file_is_not_indexed() -> None:
    data = pcap_bytes([(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()])
    with pytest.raises(NotIndexable):
        packet_index(data[:-7])


def test_a_record_claiming_more_bytes_than_any_record_holds_is_not_indexed() -> None:
    from kafkalab.pcap.files import MAX_RECORD

    records = [(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()]
    data = bytearray(pcap_bytes(records))
    second = 24 + 16 + len(records[0][1])                      # the second record's header
    data[second + 8:second + 12] = (MAX_RECORD + 1).to_bytes(4, "little")
    with pytest.raises(NotIndexable, match="corrupt record length"):
        packet_index(bytes(data))


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("order", ["<", ">"])
def test_numbers_are_read_at_any_offset_as_the_bytes_say(width: int, order: str) -> None:
    import random

    import numpy as np

    from kafkalab.pcap.index import _gather

    rnd = random.Random(width)
    data = bytes(rnd.randrange(256) for _ in range(300))
    at = np.array([0, 1, 2, 3, 5, 150, 299 - width + 1] + [rnd.randrange(300 - width + 1) for _ in range(50)])
    expected = [int.from_bytes(data[a:a + width], "big" if order == ">" else "little") for a in at.tolist()]
    for buf in (data, np.frombuffer(data, dtype=np.uint8)):
        got = _gather(buf, at, width, order)
        assert got.dtype == np.int64 and got.tolist() == expected
    with pytest.raises(IndexError):
        _gather(data, np.array([300 - width + 1]), width, order)


def test_streams_are_ordered_stably_whatever_their_numbers() -> None:
    import numpy as np

    from kafkalab.capture.regularity import stable_order

    rng = np.random.default_rng(7)
    for keys in (rng.integers(0, 200, 5000), rng.integers(0, 1 << 40, 5000), np.array([65535, 0, 65535, 1]),
                 np.array([65536, 0, 65536, 1]), np.zeros(0, dtype=np.int64)):
        assert stable_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()


def test_each_group_s_first_packet_and_the_groups_present_are_found_without_sorting() -> None:
    import numpy as np

    from kafkalab.capture.regularity import NEVER, _first
    from kafkalab.capture.streams import _distinct

    rng = np.random.default_rng(8)
    group = rng.integers(0, 40, 3000)
    mask = rng.random(3000) < 0.3
    position = 500 + np.arange(3000)
    expected = [next((int(p) for g, m, p in zip(group, mask, position) if g == k and m), NEVER) for k in range(45)]
    assert _first(group, mask, 45, position).tolist() == expected
    assert _first(group, np.zeros(3000, dtype=bool), 45, position).tolist() == [NEVER] * 45
    for values in (np.sort(group), np.zeros(0, dtype=np.int64), np.array([3])):
        assert _distinct(values).tolist() == np.unique(values).tolist()


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_file_read_window_by_window_gives_the_same_index(fmt: str, monkeypatch, tmp_path) -> None:
    import mmap

    import kafkalab.pcap.index as index_module

    data = (CAPTURES[0]).read_bytes()
    if fmt == "pcapng":
        from tests.capture.test_bulk_reader import as_pcapng
        import random

        data = as_pcapng(data, random.Random(3))
    whole = packet_index(data)
    monkeypatch.setattr(index_module, "WINDOW", 700)          # many windows, records across their edges
    path = tmp_path / f"capture.{fmt}"
    path.write_bytes(data)
    with open(path, "rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        windowed = packet_index(mapped)
        assert _rows(windowed, mapped) == _rows(whole, data)
        assert windowed.ts_ns.tolist() == whole.ts_ns.tolist() and len(windowed.records.start) > 20
