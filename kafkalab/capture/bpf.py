"""Classic BPF for live capture, built by kafkalab itself: no libpcap, no tcpdump, no filter compiler.

Live capture (:mod:`.live`) reads a Linux packet socket in cooked mode (``SOCK_DGRAM``): every packet starts at
its IP header whatever the interface's link layer, and the kernel tells the packet's protocol, type (to us,
from us...) and interface type through BPF's "ancillary" loads. That makes the one filter kafkalab needs,
"TCP to or from one of these ports", a short program the same on every interface:

    drop the outgoing copy of a loopback packet   (lo shows each packet twice: sent, then received)
    IPv4: protocol TCP, first fragment only, then the TCP ports at the header length the packet says
    IPv6: next header TCP, then the TCP ports right after the 40-byte header
    accept (up to the snap length) if either port is one of ours, else drop

:func:`tcp_port_filter` builds the program as ``(code, jt, jf, k)`` instructions (the kernel's
``struct sock_filter``); :func:`attach` gives it to a socket with ``SO_ATTACH_FILTER``; :func:`run` is a
small interpreter of the same instructions, which live capture falls back on should the kernel refuse the
program, and which tests use to check it on real packets. :func:`describe` is the filter as tcpdump would write it.
"""
from __future__ import annotations

import ctypes
import socket
import struct
from typing import Iterable, NamedTuple

# instruction classes, sizes, modes, operations and sources (linux/bpf_common.h)
LD, LDX, ALU, JMP, RET, MISC = 0x00, 0x01, 0x04, 0x05, 0x06, 0x07
W, H, B = 0x00, 0x08, 0x10
IMM, ABS, IND, LEN, MSH = 0x00, 0x20, 0x40, 0x80, 0xA0
ADD, SUB, MUL, DIV, OR, AND, LSH, RSH = 0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70
JA, JEQ, JGT, JGE, JSET = 0x00, 0x10, 0x20, 0x30, 0x40
K, X, A = 0x00, 0x08, 0x10
TAX, TXA = 0x00, 0x80

# ancillary loads (linux/filter.h): an absolute load at SKF_AD_OFF + n reads packet metadata, not bytes
SKF_AD_OFF = -0x1000 & 0xFFFFFFFF
AD_PROTOCOL, AD_PKTTYPE, AD_HATYPE = 0, 4, 28
PACKET_OUTGOING = 4               # the packet type of a copy of what this host sends
ARPHRD_LOOPBACK = 772
ETH_P_IP, ETH_P_IPV6, IPPROTO_TCP = 0x0800, 0x86DD, 6
SO_ATTACH_FILTER = 26
DEFAULT_SNAPLEN = 262144


class Instruction(NamedTuple):
    code: int
    jt: int
    jf: int
    k: int


class PacketInfo(NamedTuple):
    """What the kernel knows about a packet besides its bytes (the ancillary loads' values)."""
    protocol: int = ETH_P_IP      # the ethertype
    pkttype: int = 0              # PACKET_HOST...PACKET_OUTGOING
    hatype: int = 1               # ARPHRD_* of the interface


# ---------------------------------------------------------------- building

def tcp_port_filter(ports: Iterable[int] | None, *, snaplen: int = DEFAULT_SNAPLEN) -> list[Instruction]:
    """The program for "tcp and (port P or ...)" on cooked packets; ``ports`` None or empty: any TCP."""
    every = sorted(set(ports or ()))
    for port in every:
        if not 0 < port < 65536:
            raise ValueError(f"not a TCP port: {port}")
    code: list[tuple] = [
        (LD | H | ABS, None, None, SKF_AD_OFF + AD_PKTTYPE),
        (JMP | JEQ | K, None, "protocol", PACKET_OUTGOING),
        (LD | H | ABS, None, None, SKF_AD_OFF + AD_HATYPE),
        (JMP | JEQ | K, "drop", None, ARPHRD_LOOPBACK),
        ("protocol",),
        (LD | H | ABS, None, None, SKF_AD_OFF + AD_PROTOCOL),
        (JMP | JEQ | K, None, "ipv6", ETH_P_IP),
        (LD | B | ABS, None, None, 9),                        # IPv4 protocol
        (JMP | JEQ | K, None, "drop", IPPROTO_TCP),
        (LD | H | ABS, None, None, 6),                        # flags and fragment offset
        (JMP | JSET | K, "drop", None, 0x1FFF),               # a later fragment carries no TCP header
        (LDX | B | MSH, None, None, 0),                       # X = IPv4 header length
        *_ports_check(every, IND, 0),
        ("ipv6",),
        (JMP | JEQ | K, None, "drop", ETH_P_IPV6),
        (LD | B | ABS, None, None, 6),                        # IPv6 next header
        (JMP | JEQ | K, None, "drop", IPPROTO_TCP),
        *_ports_check(every, ABS, 40),
        ("accept",),
        (RET | K, None, None, snaplen),
        ("drop",),
        (RET | K, None, None, 0),
    ]
    return _assemble(code)


def _ports_check(ports: list[int], mode: int, offset: int) -> list[tuple]:
    """Source port, then destination port, against each of ``ports`` (from ``offset``; X added for IND)."""
    if not ports:
        return [(JMP | JA, None, None, "accept")]
    check = []
    for field in (offset, offset + 2):
        check.append((LD | H | mode, None, None, field))
        check.extend((JMP | JEQ | K, "accept", None, port) for port in ports)
    return [*check, (JMP | JA, None, None, "drop")]


def _assemble(code: list[tuple]) -> list[Instruction]:
    """Labels (1-tuples) to jump offsets; a None jump target is the next instruction."""
    labels, body = {}, []
    for item in code:
        if len(item) == 1:
            labels[item[0]] = len(body)
        else:
            body.append(item)
    program = []
    for at, (op, jt, jf, k) in enumerate(body):
        if op == JMP | JA:
            k = labels[k] - at - 1
        program.append(Instruction(op, _offset(labels, jt, at), _offset(labels, jf, at), k))
    return program


def _offset(labels: dict[str, int], target: str | None, at: int) -> int:
    if target is None:
        return 0
    offset = labels[target] - at - 1
    if not 0 <= offset <= 255:
        raise ValueError(f"filter too long: a jump of {offset} instructions (too many ports?)")
    return offset


DROP_ALL = [Instruction(RET | K, 0, 0, 0)]       # while a socket is being set up


def describe(ports: Iterable[int] | None) -> str:
    """The filter as tcpdump would write it."""
    every = sorted(set(ports or ()))
    return "tcp and (" + " or ".join(f"port {p}" for p in every) + ")" if every else "tcp"


# ---------------------------------------------------------------- the kernel's side

def pack(program: list[Instruction]) -> bytes:
    """The instructions as the kernel's array of ``struct sock_filter``."""
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def attach(sock: socket.socket, program: list[Instruction]) -> None:
    """Have the kernel run ``program`` on ``sock`` (``SO_ATTACH_FILTER`` with a ``struct sock_fprog``).
    Raises OSError if the kernel refuses it."""
    code = ctypes.create_string_buffer(pack(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER,
                    bytes(SockFprog(len(program), ctypes.addressof(code))))


# ---------------------------------------------------------------- the same program in Python

def run(program: list[Instruction], packet: bytes, info: PacketInfo = PacketInfo()) -> int:
    """What the kernel would return for ``packet``: the bytes to keep (0: drop). Covers loads, ALU, jumps,
    returns and register moves; a load past the packet's end drops it, as in the kernel."""
    a = x = pc = 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        kind = code & 0x07
        if kind == RET:
            return (a if code & 0x18 == A else k) & 0xFFFFFFFF
        if kind == LD:
            if code & 0xE0 == IMM:
                a = k
            elif code & 0xE0 == LEN:
                a = len(packet)
            else:
                at = k + (x if code & 0xE0 == IND else 0)
                a = _load(packet, info, at & 0xFFFFFFFF, code & 0x18)
                if a is None:
                    return 0
        elif kind == LDX:
            if code & 0xE0 == MSH:
                if k >= len(packet):
                    return 0
                x = (packet[k] & 0x0F) * 4
            else:
                x = len(packet) if code & 0xE0 == LEN else k
        elif kind == JMP:
            if code & 0xF0 == JA:
                pc += k
            else:
                pc += jt if _test(code, a, x if code & X else k) else jf
        elif kind == ALU:
            a = _alu(code, a, x if code & X else k)
            if a is None:
                return 0
        elif kind == MISC:
            if code & 0xF8 == TXA:
                a = x
            else:
                x = a
        else:
            raise ValueError(f"BPF instruction {code:#06x} is not interpreted")


def _load(packet: bytes, info: PacketInfo, at: int, size: int) -> int | None:
    if at >= SKF_AD_OFF:
        return {AD_PROTOCOL: info.protocol, AD_PKTTYPE: info.pkttype, AD_HATYPE: info.hatype}.get(at - SKF_AD_OFF)
    width = {W: 4, H: 2, B: 1}[size]
    if at + width > len(packet):
        return None
    return int.from_bytes(packet[at:at + width], "big")


def _test(code: int, a: int, operand: int) -> bool:
    op = code & 0xF0
    if op == JEQ:
        return a == operand
    if op == JGT:
        return a > operand
    if op == JGE:
        return a >= operand
    return bool(a & operand)


def _alu(code: int, a: int, operand: int) -> int | None:
    op = code & 0xF0
    if op == DIV:
        return a // operand if operand else None
    if op == 0x80:                                  # NEG
        return -a & 0xFFFFFFFF
    result = {ADD: a + operand, SUB: a - operand, MUL: a * operand, OR: a | operand, AND: a & operand,
              LSH: a << (operand & 31), RSH: a >> (operand & 31)}[op]
    return result & 0xFFFFFFFF
