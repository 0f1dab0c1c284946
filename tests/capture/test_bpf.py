"""The capture filter kafkalab builds (kafkalab.capture.bpf): handmade packets, each with the verdict its
construction implies, judged by the Python interpreter of the program and by the kernel itself (packets
injected on loopback through a packet socket, received through one with the program attached). The kernel
part needs root (CI runs as root)."""
from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from kafkalab.capture import bpf

from tests.tools import needs_root

P, P2, OTHER = 40123, 40124, 40999
TCP, UDP = 6, 17


def tcp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + payload


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def ipv4(protocol: int, body: bytes, *, options: bytes = b"", fragment: int = 0, more: bool = False) -> bytes:
    """A header whose checksum is left 0 (wrong), so that the host's IP layer drops what the test injects."""
    ihl = 5 + len(options) // 4
    flags = (0x2000 if more else 0) | fragment
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(body), 7, flags, 64, protocol, 0,
                         socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"))
    return header + options + body


def ipv6(next_header: int, body: bytes) -> bytes:
    """The payload length claims more than there is, so that the host's IP layer drops it."""
    return struct.pack("!IHBB16s16s", 6 << 28, 0xFFFF, next_header, 64, socket.inet_pton(socket.AF_INET6, "::1"),
                       socket.inet_pton(socket.AF_INET6, "::1")) + body


# (name, ethertype, packet for a marker, kept by "tcp and (port P or port P2)")
CASES = [
    ("ipv4 tcp to P", 0x0800, lambda m: ipv4(TCP, tcp(50000, P, m)), True),
    ("ipv4 tcp from P", 0x0800, lambda m: ipv4(TCP, tcp(P, 50000, m)), True),
    ("ipv4 tcp to the second port", 0x0800, lambda m: ipv4(TCP, tcp(50000, P2, m)), True),
    ("ipv4 tcp elsewhere", 0x0800, lambda m: ipv4(TCP, tcp(50000, OTHER, m)), False),
    ("ipv4 udp to P", 0x0800, lambda m: ipv4(UDP, udp(50000, P, m)), False),
    ("ipv4 with options, tcp to P", 0x0800, lambda m: ipv4(TCP, tcp(50000, P, m), options=b"\x01" * 4), True),
    # the options' bytes read as ports at a fixed offset would match: the header length must be used
    ("ipv4 options that look like P", 0x0800,
     lambda m: ipv4(TCP, tcp(50000, OTHER, m), options=struct.pack("!HH", P, P)), False),
    ("ipv4 first fragment to P", 0x0800, lambda m: ipv4(TCP, tcp(50000, P, m), more=True), True),
    ("ipv4 later fragment starting like P", 0x0800, lambda m: ipv4(TCP, tcp(P, P, m), fragment=185), False),
    ("ipv4 cut before the ports", 0x0800, lambda m: ipv4(TCP, b"\x9c"), False),
    ("ipv6 tcp to P", 0x86DD, lambda m: ipv6(TCP, tcp(50000, P, m)), True),
    ("ipv6 tcp from the second port", 0x86DD, lambda m: ipv6(TCP, tcp(P2, 50000, m)), True),
    ("ipv6 tcp elsewhere", 0x86DD, lambda m: ipv6(TCP, tcp(50000, OTHER, m)), False),
    ("ipv6 udp to P", 0x86DD, lambda m: ipv6(UDP, udp(50000, P, m)), False),
    ("arp", 0x0806, lambda m: bytes(8) + m, False),
]
IDS = [case[0] for case in CASES]
PROGRAM = bpf.tcp_port_filter([P, P2])


@pytest.mark.parametrize("name, ethertype, build, kept", CASES, ids=IDS)
def test_the_interpreter_keeps_exactly_tcp_on_the_ports(name, ethertype, build, kept):
    packet = build(b"marker")
    for hatype in (1, bpf.ARPHRD_LOOPBACK):                   # ethernet and loopback, received
        verdict = bpf.run(PROGRAM, packet, bpf.PacketInfo(protocol=ethertype, pkttype=0, hatype=hatype))
        assert verdict == (bpf.DEFAULT_SNAPLEN if kept else 0), (name, hatype)


def test_the_outgoing_copy_is_dropped_on_loopback_only():
    packet = ipv4(TCP, tcp(50000, P, b"x"))
    sent = {hatype: bpf.run(PROGRAM, packet, bpf.PacketInfo(0x0800, bpf.PACKET_OUTGOING, hatype))
            for hatype in (1, bpf.ARPHRD_LOOPBACK)}
    assert sent == {1: bpf.DEFAULT_SNAPLEN, bpf.ARPHRD_LOOPBACK: 0}


def test_any_port_keeps_every_tcp_packet_and_nothing_else():
    program = bpf.tcp_port_filter(None, snaplen=96)
    assert bpf.run(program, ipv4(TCP, tcp(1, 2, b"")), bpf.PacketInfo(0x0800)) == 96
    assert bpf.run(program, ipv6(TCP, tcp(1, 2, b"")), bpf.PacketInfo(0x86DD)) == 96
    assert bpf.run(program, ipv4(UDP, udp(1, 2, b"")), bpf.PacketInfo(0x0800)) == 0
    assert bpf.describe(None) == "tcp" and bpf.describe([9093, 9092]) == "tcp and (port 9092 or port 9093)"


def test_bad_ports_and_overlong_programs_are_refused():
    with pytest.raises(ValueError, match="not a TCP port"):
        bpf.tcp_port_filter([70000])
    with pytest.raises(ValueError, match="too many ports"):
        bpf.tcp_port_filter(range(1000, 1100))


def test_the_program_packs_as_the_kernel_reads_it():
    packed = bpf.pack(PROGRAM)
    assert len(packed) == 8 * len(PROGRAM)
    assert struct.unpack_from("=HBBI", packed, 8 * (len(PROGRAM) - 1)) == (bpf.RET | bpf.K, 0, 0, 0)


@needs_root
def test_the_kernel_agrees_on_every_case():
    """Each case injected on lo with a unique marker; the filtered socket must get exactly the kept ones,
    each once (the loopback's outgoing copy is dropped by the program too)."""
    run_id = os.urandom(6).hex().encode()
    markers = {name: b"kafkalab-bpf-" + run_id + b"-%02d." % i for i, name in enumerate(IDS)}
    receiver = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0)
    sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        bpf.attach(receiver, PROGRAM)
        receiver.bind(("lo", 0x0003))
        for name, ethertype, build, _ in CASES:
            frame = bytes(12) + struct.pack("!H", ethertype) + build(markers[name])
            sender.sendto(frame, ("lo", 0))
        sentinel = b"kafkalab-bpf-" + run_id + b"-end"
        sender.sendto(bytes(12) + b"\x08\x00" + ipv4(TCP, tcp(50000, P, sentinel)), ("lo", 0))
        seen = _until(receiver, sentinel)
    finally:
        receiver.close()
        sender.close()
    got = {name: sum(markers[name] in packet for packet in seen) for name in IDS}
    assert got == {name: int(kept) for name, _, _, kept in CASES}


def _until(sock: socket.socket, sentinel: bytes, timeout: float = 10.0) -> list[bytes]:
    """Packets received until the one carrying ``sentinel`` (loopback keeps the order they were sent in)."""
    sock.settimeout(0.5)
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        try:
            packet = sock.recv(65536)
        except TimeoutError:
            continue
        if sentinel in packet:
            return seen
        seen.append(packet)
    raise AssertionError("the sentinel packet never arrived")
