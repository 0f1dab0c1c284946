"""Synthesising a capture: TCP connections carrying given bytes, written as a nanosecond pcap.

Used by the broker (``broker.write_pcap``) and by tests to turn byte streams into a file that tshark and
kafkalab both read. Each connection gets a SYN / SYN-ACK / ACK handshake, data segments of at most
``mss`` bytes with correct sequence and acknowledgement numbers and checksums, and a FIN exchange on close.
Link layer Ethernet; IPv4 or IPv6 depending on the addresses given.
"""
from __future__ import annotations

import ipaddress
import os
import struct
import time
from dataclasses import dataclass
from typing import BinaryIO

LOOPBACK_MSS = 65483          # 65535 - 20 (IP) - 20 (TCP) - 12 (timestamp option), as Linux uses on lo
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
_MAC_CLIENT = bytes.fromhex("020000000001")
_MAC_SERVER = bytes.fromhex("020000000002")


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071): ones' complement of the ones' complement sum of 16-bit words.
    A big integer taken modulo 0xFFFF is that sum, because 2**16 == 1 (mod 0xFFFF)."""
    if len(data) % 2:
        data += b"\0"
    total = int.from_bytes(data, "big") % 0xFFFF
    if total == 0 and any(data):
        total = 0xFFFF
    return 0xFFFF - total


@dataclass
class TcpConnection:
    """One synthetic connection: endpoints and the next sequence number of each side."""

    client: tuple[str, int]
    server: tuple[str, int]
    client_seq: int
    server_seq: int
    closed: bool = False


class _PcapFile:
    """A nanosecond pcap file being written: opened from a path (and closed with the writer) or a binary file
    object given (flushed, left open)."""

    def __init__(self, path_or_file, linktype: int, snaplen: int) -> None:
        if isinstance(path_or_file, (str, os.PathLike)):
            self._out: BinaryIO | None = open(path_or_file, "wb")
            self._owned = True
        else:
            self._out, self._owned = path_or_file, False
        self.snaplen = snaplen
        self._out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, linktype))

    def flush(self) -> None:
        if self._out is not None:
            self._out.flush()

    def close_file(self) -> None:
        if self._out is None:
            return
        self._out.flush()
        if self._owned:
            self._out.close()
        self._out = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close_file()


class TcpPcapWriter(_PcapFile):
    """Write TCP conversations to a pcap file (or binary file object)."""

    def __init__(self, path_or_file, *, mss: int = LOOPBACK_MSS, snaplen: int = 262144) -> None:
        super().__init__(path_or_file, 1, snaplen)
        self.mss = max(1, min(mss, 65535 - 60))
        self._ip_id = 1
        self._connections = 0
        self.packets = 0

    def open_connection(self, client: tuple[str, int], server: tuple[str, int], ts: float | None = None
                        ) -> TcpConnection:
        """A new connection, with its three-way handshake written at ``ts`` (epoch seconds)."""
        ts = time.time() if ts is None else ts
        self._connections += 1
        isn_client = (0x1000_0000 * self._connections + 0x1234) & 0xFFFFFFFF
        isn_server = (0x8000_0000 + 0x0101_0101 * self._connections) & 0xFFFFFFFF
        conn = TcpConnection(client, server, isn_client, isn_server)
        self._segment(conn, True, SYN, b"", ts, seq=isn_client, ack=0)
        self._segment(conn, False, SYN | ACK, b"", ts, seq=isn_server, ack=isn_client + 1)
        conn.client_seq = (isn_client + 1) & 0xFFFFFFFF
        conn.server_seq = (isn_server + 1) & 0xFFFFFFFF
        self._segment(conn, True, ACK, b"", ts)
        return conn

    def send(self, conn: TcpConnection, from_client: bool, data: bytes, ts: float | None = None) -> None:
        """``data`` from one side, cut into segments of at most ``mss`` bytes (PSH on the last)."""
        ts = time.time() if ts is None else ts
        data = bytes(data)
        for start in range(0, len(data), self.mss):
            piece = data[start:start + self.mss]
            last = start + self.mss >= len(data)
            self._segment(conn, from_client, ACK | (PSH if last else 0), piece, ts)
            self._advance(conn, from_client, len(piece))

    def acknowledge(self, conn: TcpConnection, from_client: bool, ts: float | None = None) -> None:
        """A pure acknowledgement (no payload) from one side, of everything the other side sent so far."""
        self._segment(conn, from_client, ACK, b"", time.time() if ts is None else ts)

    def close(self, conn: TcpConnection, ts: float | None = None) -> None:
        """FIN from the client, FIN-ACK from the server, the client's last ACK."""
        if conn.closed:
            return
        ts = time.time() if ts is None else ts
        self._segment(conn, True, FIN | ACK, b"", ts)
        self._advance(conn, True, 1)
        self._segment(conn, False, FIN | ACK, b"", ts)
        self._advance(conn, False, 1)
        self._segment(conn, True, ACK, b"", ts)
        conn.closed = True

    # ------------------------------------------------------------ packet building

    @staticmethod
    def _advance(conn: TcpConnection, from_client: bool, n: int) -> None:
        if from_client:
            conn.client_seq = (conn.client_seq + n) & 0xFFFFFFFF
        else:
            conn.server_seq = (conn.server_seq + n) & 0xFFFFFFFF

    def _segment(self, conn: TcpConnection, from_client: bool, flags: int, payload: bytes, ts: float,
                 seq: int | None = None, ack: int | None = None) -> None:
        (src, sport), (dst, dport) = (conn.client, conn.server) if from_client else (conn.server, conn.client)
        if seq is None:
            seq = conn.client_seq if from_client else conn.server_seq
        if ack is None:
            ack = conn.server_seq if from_client else conn.client_seq
        src_ip, dst_ip = ipaddress.ip_address(src), ipaddress.ip_address(dst)
        tcp = bytearray(struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0))
        tcp += payload
        if src_ip.version == 4:
            pseudo = src_ip.packed + dst_ip.packed + struct.pack(">BBH", 0, 6, len(tcp))
        else:
            pseudo = src_ip.packed + dst_ip.packed + struct.pack(">IxxxB", len(tcp), 6)
        struct.pack_into(">H", tcp, 16, checksum(pseudo + bytes(tcp)))
        if src_ip.version == 4:
            ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), self._ip_id & 0xFFFF, 0x4000,
                                       64, 6, 0, src_ip.packed, dst_ip.packed))
            struct.pack_into(">H", ip, 10, checksum(bytes(ip)))
            ethertype = 0x0800
        else:
            ip = bytearray(struct.pack(">IHBB16s16s", 0x60000000, len(tcp), 6, 64, src_ip.packed, dst_ip.packed))
            ethertype = 0x86DD
        self._ip_id += 1
        self.packets += 1
        macs = _MAC_SERVER + _MAC_CLIENT if from_client else _MAC_CLIENT + _MAC_SERVER
        frame = macs + struct.pack(">H", ethertype) + bytes(ip) + bytes(tcp)
        ts_ns = int(round(ts * 1e9))
        self._out.write(struct.pack("<IIII", ts_ns // 1_000_000_000, ts_ns % 1_000_000_000, len(frame), len(frame)))
        self._out.write(frame)


class LinkPcapWriter(_PcapFile):
    """Write link-layer packets as captured (live capture's ``-w``) to a nanosecond pcap file."""

    def __init__(self, path_or_file, linktype: int, *, snaplen: int = 262144) -> None:
        super().__init__(path_or_file, linktype, snaplen)
        self.linktype = linktype
        self.count = 0

    def write(self, data: bytes, ts: float) -> None:
        """One packet; ``ts`` in epoch seconds. Bytes beyond the snap length are not stored (the original
        length is kept in the record header, as capture tools do)."""
        stored = data[:self.snaplen]
        ts_ns = int(round(ts * 1e9))
        self._out.write(struct.pack("<IIII", ts_ns // 1_000_000_000, ts_ns % 1_000_000_000, len(stored), len(data)))
        self._out.write(stored)
        self.count += 1

    def close(self) -> None:
        self.close_file()
