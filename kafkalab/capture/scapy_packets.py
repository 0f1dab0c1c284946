"""scapy packets as :class:`TcpPacket`s, so a list of scapy packets is a capture too (scapy is not imported:
the packet objects bring their own classes).

A packet's bytes are decoded again with kafkalab's own layers: its outermost layer names the link type
(Ethernet, Linux cooked SLL/SLL2, BSD loopback, otherwise raw IP), ``packet.time`` is its timestamp.
"""
from __future__ import annotations

from kafkalab.pcap import CaptureError, PacketDecoder, TcpPacket
from kafkalab.pcap.files import LinkRecord

LINKTYPES = {"Ether": 1, "CookedLinux": 113, "CookedLinuxV2": 276, "Loopback": 0, "Dot3": 1}
RAW_IP = 101

_decoder = PacketDecoder()


def linktype_of(packet, data: bytes | None = None) -> int:
    """The pcap link type of a scapy packet's outermost layer. scapy cannot always tell (Linux's loopback
    interface, ARPHRD 772, carries Ethernet headers it does not recognise): then the bytes decide."""
    name = type(packet).__name__
    if name in LINKTYPES:
        return LINKTYPES[name]
    if name in ("IP", "IPv6"):
        return RAW_IP
    data = bytes(packet) if data is None else data
    if len(data) >= 14 and data[12:14] in (b"\x08\x00", b"\x86\xdd", b"\x81\x00"):
        return 1
    return RAW_IP


def from_scapy(packet, decoder: PacketDecoder | None = None) -> TcpPacket | None:
    """The TCP segment in a scapy packet (None for anything else)."""
    try:
        data = bytes(packet)
    except Exception as exc:        # noqa: BLE001 - scapy raises many types while building
        raise CaptureError(f"cannot serialise packet {packet!r}: {exc}") from None
    ts = getattr(packet, "time", 0) or 0
    ts_ns = int(round(float(ts) * 1e9)) if not isinstance(ts, int) else ts * 1_000_000_000
    return (decoder or _decoder).decode(LinkRecord(0, ts_ns, linktype_of(packet, data), data, len(data)))
