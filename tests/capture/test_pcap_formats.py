"""The pcap package: file formats, link layers, IP, TCP, and bad files (never a traceback)."""
from __future__ import annotations

import gzip
import io
import struct

import pytest

from kafkalab.pcap import CaptureError, TcpPcapWriter, checksum, iter_link_records, read_packets

from tests.capture.builders import pcap_bytes, pcapng_bytes

PAYLOAD = b"\x00\x00\x00\x0a" + b"0123456789"


def _written_ip_packets():
    """IP packets (Ethernet stripped) of a small written conversation."""
    out = io.BytesIO()
    w = TcpPcapWriter(out)
    c = w.open_connection(("192.168.1.1", 5555), ("192.168.1.2", 9092), 1.5)
    w.send(c, True, PAYLOAD, 1.75)
    w.close(c, 2.0)
    w.close_file()
    return [(r.ts_ns / 1e9, r.data[14:]) for r in iter_link_records(out.getvalue())]


def _ethernet(ip: bytes, vlans=0) -> bytes:
    head = b"\x02" * 12
    for _ in range(vlans):
        head += b"\x81\x00\x00\x05"
    return head + b"\x08\x00" + ip


LINKS = {
    "ethernet": (1, lambda ip: _ethernet(ip)),
    "vlan": (1, lambda ip: _ethernet(ip, 1)),
    "qinq": (1, lambda ip: b"\x02" * 12 + b"\x88\xa8\x00\x01\x81\x00\x00\x02\x08\x00" + ip),
    "sll": (113, lambda ip: b"\x00\x00\x03\x04\x00\x06" + b"\x00" * 8 + b"\x08\x00" + ip),
    "sll2": (276, lambda ip: b"\x08\x00\x00\x00" + b"\x00\x00\x00\x01" + b"\x03\x04\x00\x06" + b"\x00" * 8 + ip),
    "null": (0, lambda ip: struct.pack("<I", 2) + ip),
    "null-bigendian-host": (0, lambda ip: struct.pack(">I", 2) + ip),
    "loop": (108, lambda ip: struct.pack(">I", 2) + ip),
    "raw": (101, lambda ip: ip),
    "ipv4-linktype": (228, lambda ip: ip),
}


@pytest.mark.parametrize("link", sorted(LINKS))
def test_link_layers(link):
    linktype, wrap = LINKS[link]
    packets = [(ts, wrap(ip)) for ts, ip in _written_ip_packets()]
    got = list(read_packets(pcap_bytes(packets, linktype=linktype)))
    assert [p.payload for p in got if p.payload] == [PAYLOAD]
    assert got[0].src == "192.168.1.1" and got[0].sport == 5555 and got[0].dport == 9092
    assert got[0].flags == 0x02 and got[1].flags == 0x12


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nanos", [False, True])
def test_pcap_byte_orders_and_resolutions(order, nanos):
    packets = [(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()]
    got = list(read_packets(pcap_bytes(packets, order=order, nanos=nanos)))
    assert len(got) == len(packets)
    assert got[0].ts_ns == 1_500_000_000 and got[3].ts_ns == 1_750_000_000


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_interfaces_resolutions_and_block_kinds(order):
    ips = [ip for _, ip in _written_ip_packets()]
    blocks = [
        (0, 1_500_000, _ethernet(ips[0]), "epb"),                       # µs (default)
        (1, 1_500_000_000, ips[1], "epb"),                              # raw IP, ns
        (0, 1_600_000, _ethernet(ips[2]), "pb"),                        # obsolete packet block
        (1, 1_750_000_000, ips[3], "epb"),
    ]
    data = pcapng_bytes([(1, None), (101, 9)], blocks, order=order)
    got = list(read_packets(data))
    assert [p.ts_ns for p in got] == [1_500_000_000, 1_500_000_000, 1_600_000_000, 1_750_000_000]
    assert got[3].payload == PAYLOAD


def test_pcapng_simple_packet_block():
    ips = [ip for _, ip in _written_ip_packets()]
    data = pcapng_bytes([(1, None)], [(0, 0, _ethernet(ips[3]), "spb")])
    (packet,) = read_packets(data)
    assert packet.payload == PAYLOAD


def test_gzip_is_transparent(tmp_path):
    packets = [(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()]
    path = tmp_path / "x.pcap.gz"
    path.write_bytes(gzip.compress(pcap_bytes(packets)))
    assert [p.payload for p in read_packets(path)] == [p.payload for p in read_packets(pcap_bytes(packets))]


def test_recorded_length_smaller_than_stored_keeps_stored_bytes():
    packets = [(ts, _ethernet(ip), len(ip) - 2) for ts, ip in _written_ip_packets()]
    got = list(read_packets(pcap_bytes(packets)))
    assert got[3].payload == PAYLOAD
    assert any("recorded length" in d for d in got[3].diagnostics)


def test_snapped_packet_keeps_what_was_stored():
    packets = [(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()]
    ts, frame = packets[3]
    packets[3] = (ts, frame[:-4], len(frame))
    got = list(read_packets(pcap_bytes(packets)))
    assert got[3].payload == PAYLOAD[:-4]
    assert any("cut short" in d for d in got[3].diagnostics)


def _ipv4_fragments(ip: bytes, cut: int):
    header, payload = bytearray(ip[:20]), ip[20:]
    first, second = bytearray(header), bytearray(header)
    struct.pack_into(">H", first, 2, 20 + cut)
    struct.pack_into(">H", first, 6, 0x2000)                 # MF, offset 0
    struct.pack_into(">H", second, 2, 20 + len(payload) - cut)
    struct.pack_into(">H", second, 6, cut // 8)
    return bytes(first) + payload[:cut], bytes(second) + payload[cut:]


@pytest.mark.parametrize("reverse", [False, True])
def test_ipv4_fragments_are_reassembled(reverse):
    ts, ip = _written_ip_packets()[3]
    parts = _ipv4_fragments(ip, 16)
    if reverse:
        parts = parts[::-1]
    (packet,) = read_packets(pcap_bytes([(ts, _ethernet(p)) for p in parts]))
    assert packet.payload == PAYLOAD
    assert any("fragments" in d for d in packet.diagnostics)


def test_ipv6_with_extension_headers():
    out = io.BytesIO()
    w = TcpPcapWriter(out)
    c = w.open_connection(("fd00::1", 5555), ("fd00::2", 9092), 1.0)
    w.send(c, True, PAYLOAD, 1.0)
    w.close_file()
    records = list(iter_link_records(out.getvalue()))
    ip = records[-1].data[14:]
    # insert a hop-by-hop header (8 bytes) and a destination-options header before TCP
    hop = bytes([60, 0]) + b"\x01\x04\0\0\0\0"
    dest = bytes([6, 0]) + b"\x01\x04\0\0\0\0"
    body = hop + dest + ip[40:]
    new = bytearray(ip[:40])
    struct.pack_into(">H", new, 4, len(body))
    new[6] = 0
    frame = b"\x02" * 12 + b"\x86\xdd" + bytes(new) + body
    (packet,) = read_packets(pcap_bytes([(1.0, frame)]))
    assert packet.src == "fd00::1" and packet.payload == PAYLOAD
    assert packet.src_endpoint == "[fd00::1]:5555"


def test_writer_checksums_verify():
    for _, ip in _written_ip_packets():
        assert checksum(ip[:20]) == 0                      # IP header checksum
        tcp = ip[20:]
        pseudo = ip[12:20] + struct.pack(">BBH", 0, 6, len(tcp))
        assert checksum(pseudo + tcp) == 0


def test_writer_cuts_segments_at_mss():
    out = io.BytesIO()
    w = TcpPcapWriter(out, mss=1000)
    c = w.open_connection(("10.0.0.1", 1), ("10.0.0.2", 9092), 0.0)
    w.send(c, True, bytes(2500), 0.0)
    w.close_file()
    sizes = [len(p.payload) for p in read_packets(out.getvalue()) if p.payload]
    assert sizes == [1000, 1000, 500]


# ---------------------------------------------------------------- bad files

GOOD = pcap_bytes([(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()])


@pytest.mark.parametrize("data,message", [
    (b"", "empty"),
    (b"\xd4\xc3", "only 2 bytes"),
    (b"GET / HTTP/1.1\r\n\r\n" * 3, "not a pcap"),
    (GOOD[:10], "truncated"),
    (b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x00\x00\x00\x00", "byte-order"),
])
def test_bad_files_raise_capture_error(data, message):
    with pytest.raises(CaptureError, match=message):
        list(read_packets(data))
    assert issubclass(CaptureError, ValueError)


def test_missing_file_is_a_capture_error(tmp_path):
    with pytest.raises(CaptureError, match="cannot open"):
        list(read_packets(tmp_path / "nope.pcap"))


@pytest.mark.parametrize("cut", [30, 50, len(GOOD) - 3])
def test_truncated_mid_record_gives_packets_and_a_diagnostic(cut):
    notes: list[str] = []
    packets = list(read_packets(GOOD[:cut], notes))
    assert len(packets) <= 6
    assert any("truncated" in n for n in notes)


def test_corrupt_record_length_stops_with_a_diagnostic():
    bad = bytearray(GOOD)
    struct.pack_into("<I", bad, 24 + 8, 0x7FFFFFFF)
    notes: list[str] = []
    assert list(read_packets(bytes(bad), notes)) == []
    assert any("corrupt" in n for n in notes)


def test_zero_length_packets_are_skipped():
    data = pcap_bytes([(1.0, b""), (2.0, b""), *[(ts, _ethernet(ip)) for ts, ip in _written_ip_packets()]])
    records = list(iter_link_records(data))
    assert "zero-length packet" in records[0].diagnostics
    assert len(list(read_packets(data))) == 7


def test_garbage_packets_do_not_raise():
    import random
    rng = random.Random(5)
    records = [(float(i), bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))) for i in range(300)]
    for linktype in (1, 113, 276, 0, 101):
        list(read_packets(pcap_bytes(records, linktype=linktype)))


def test_truncated_gzip_gives_a_diagnostic(tmp_path):
    data = gzip.compress(GOOD)[:-20]
    notes: list[str] = []
    try:
        list(read_packets(data, notes))
    except CaptureError as exc:
        assert "end-of-stream" in str(exc)
    else:
        assert notes
