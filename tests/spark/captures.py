"""Captures made for the Spark tests: several client hosts with interleaved connections, and a capture rotated
into several files with connections crossing them."""
from __future__ import annotations

import gzip
import socket
import struct
from pathlib import Path

from tests.capture.builders import golden_conversations


def interleaved_hosts_pcap(path: Path, hosts: int = 3) -> Path:
    """The golden corpus's conversations as concurrent connections from ``hosts`` client hosts, their frames
    interleaved round-robin (every fourth step shares the previous timestamp: ties across connections)."""
    from kafkalab.pcap import TcpPcapWriter

    conversations = golden_conversations()
    ts = 1_700_000_000.0
    with TcpPcapWriter(path) as writer:
        conns = [writer.open_connection((f"10.0.{index % hosts + 1}.1", 40000 + index), ("10.0.9.9", 9092), ts)
                 for index, _ in enumerate(conversations)]
        queues = [list(items) for _, _, items in conversations]
        step = 0
        while any(queues):
            for conn, queue in zip(conns, queues):
                if queue:
                    entry, raw = queue.pop(0)
                    step += 1
                    ts += 0.0 if step % 4 == 0 else 0.000_25
                    writer.send(conn, entry["direction"] == "request", raw, ts)
        for conn in conns:
            ts += 0.001
            writer.close(conn, ts)
    return path


def records_of(data: bytes) -> list[bytes]:
    """The records of a little-endian classic pcap, each with its 16-byte header."""
    out, position = [], 24
    while position + 16 <= len(data):
        stored = struct.unpack_from("<I", data, position + 8)[0]
        out.append(data[position:position + 16 + stored])
        position += 16 + stored
    return out


def rotate(source: Path, directory: Path, pieces: int = 3) -> list[Path]:
    """``source`` cut into ``pieces`` files by packet count (as ``tcpdump -C`` would), named so that their
    alphabetical order is not their time order."""
    data = source.read_bytes()
    records = records_of(data)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(pieces):
        part = records[len(records) * k // pieces:len(records) * (k + 1) // pieces]
        path = directory / f"{'zyx'[k % 3]}-part{k}.pcap"
        path.write_bytes(data[:24] + b"".join(part))
        paths.append(path)
    return paths


def corrupt_gzip(path: Path, source: Path) -> Path:
    packed = bytearray(gzip.compress(source.read_bytes()))
    packed[len(packed) // 2:len(packed) // 2 + 64] = b"\x00" * 64
    path.write_bytes(bytes(packed))
    return path


def unreadable(path: Path) -> Path:
    """A file that exists but that no process can read, root included: a Unix socket (opening it fails with
    ENXIO; file permissions would not stop root)."""
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
    return path


def nested_capture_pcap(path: Path) -> tuple[Path, int]:
    """Kafka traffic with, near its end, a TCP packet (not on a Kafka port) carrying a whole pcap chain of
    its own; a last filler record puts the file's midpoint inside that chain. Returns the path and the
    midpoint: a reader whose range starts there finds the inner chain's false record start."""
    from kafkalab.pcap import TcpPcapWriter
    from tests.capture.builders import pcap_bytes

    inner = pcap_bytes([(1_700_000_000 + i, bytes(40)) for i in range(30)])[24:]
    conversations = golden_conversations()
    ts = 1_700_000_000.0
    with TcpPcapWriter(path) as writer:
        for index, (_, _, items) in enumerate(conversations):
            conn = writer.open_connection(("10.0.1.1", 40000 + index), ("10.0.9.9", 9092), ts)
            for entry, raw in items:
                ts += 0.001
                writer.send(conn, entry["direction"] == "request", raw, ts)
            writer.close(conn, ts)
        other = writer.open_connection(("10.0.1.1", 5555), ("10.0.9.8", 6666), ts)
        writer.send(other, True, inner, ts + 0.001)
    data = path.read_bytes()
    carrier = data.rindex(inner)
    target = carrier + 200                  # inside the inner chain, off its records' starts
    filler = 2 * (target - 24) - (len(data) - 24)
    assert filler >= 16 + 14, "the carrier must lie in the second half of the file"
    frame = bytes(12) + b"\x00\x00" + bytes(filler - 16 - 14)        # Ethernet, no IP: not TCP
    record = struct.pack("<IIII", int(ts) + 1, 0, len(frame), len(frame)) + frame
    path.write_bytes(data + record)
    return path, 24 + (len(data) + len(record) - 24) // 2


HEAVY_CLIENT = ("10.0.7.1", 41000)


def heavy_connection_pcap(path: Path, repeats: int = 16) -> Path:
    """One connection (from ``HEAVY_CLIENT``) carrying about 80% of the payload bytes: a producer's and a
    consumer's exchanges (Produce v7, ListOffsets, Fetch v11: topics by name) replayed ``repeats`` times, beside
    the same exchanges once each on three other client hosts' connections, interleaved."""
    from kafkalab.pcap import TcpPcapWriter

    chosen = [items for name, number, items in golden_conversations()
              if (name, number) in (("kafka-python", 35), ("kafka-python", 39), ("aiokafka", 43))]
    once = [step for items in chosen for step in items]
    ts = 1_700_000_000.0
    with TcpPcapWriter(path) as writer:
        heavy = writer.open_connection(HEAVY_CLIENT, ("10.0.9.9", 9092), ts)
        light = [writer.open_connection((f"10.0.{host}.1", 40000), ("10.0.9.9", 9092), ts) for host in (1, 2, 3)]
        queues = [(heavy, once * repeats)] + [(conn, list(once)) for conn in light]
        while any(queue for _, queue in queues):
            for conn, queue in queues:
                if queue:
                    entry, raw = queue.pop(0)
                    ts += 0.000_25
                    writer.send(conn, entry["direction"] == "request", raw, ts)
        for conn, _ in queues:
            ts += 0.001
            writer.close(conn, ts)
    return path


def as_pcapng(source: Path, path: Path, *, layout: str = "plain") -> Path:
    """``source`` (a little-endian classic pcap) rewritten as pcapng, packets alternating between an interface
    in microseconds and one in nanoseconds. ``layout``: "plain" (one section, interfaces up front),
    "late-interface" (the nanosecond interface described after the first half of the packets, which use the
    other one only) or "two-sections" (each half of the packets in a section of its own, interfaces reversed)."""
    from tests.capture.builders import pcapng_bytes

    raw = source.read_bytes()
    scale = 1 if struct.unpack_from("<I", raw)[0] == 0xA1B23C4D else 1000          # fraction -> ns
    timed = []
    for record in records_of(raw):
        seconds, fraction = struct.unpack_from("<II", record)
        timed.append((seconds * 1_000_000_000 + fraction * scale, record[16:]))
    half = len(timed) // 2

    def epbs(part, interfaces=2, nano_iface=1):
        return [(i % interfaces, ns if i % interfaces == nano_iface else ns // 1000, data, "epb")
                for i, (ns, data) in enumerate(part)]

    if layout == "plain":
        data = pcapng_bytes([(1, None), (1, 9)], epbs(timed))
    elif layout == "two-sections":
        data = pcapng_bytes([(1, None), (1, 9)], epbs(timed[:half])) + \
            pcapng_bytes([(1, 9), (1, None)], epbs(timed[half:], nano_iface=0))
    else:
        both = pcapng_bytes([(1, None), (1, 9)], epbs(timed[half:]))
        head = pcapng_bytes([(1, None), (1, 9)], [])            # section, both interfaces, a name block
        first_idb = struct.unpack_from("<I", both, 4)[0]
        second_idb = first_idb + struct.unpack_from("<I", both, first_idb + 4)[0]
        late_idb = both[second_idb:second_idb + struct.unpack_from("<I", both, second_idb + 4)[0]]
        data = pcapng_bytes([(1, None)], epbs(timed[:half], 1)) + late_idb + both[len(head):]
    path.write_bytes(data)
    return path
