"""scapy packets as :class:`TcpPacket`s, so a list of scapy packets is a capture too (scapy is not imported:
the packet objects bring their own classes)."""
from __future__ import annotations

from kafkalab.pcap import CaptureError, PacketDecoder, TcpPacket
from kafkalab.pcap.files import LinkRecord

_decoder = PacketDecoder()


def from_scapy(packet) -> TcpPacket | None:
    """Re-decode the packet's bytes with kafkalab's own layers (Ethernet, or raw IP)."""
    try:
        data = bytes(packet)
    except Exception as exc:        # scapy raises many types while building
        raise CaptureError(f"cannot serialise packet {packet!r}: {exc}") from None
    name = type(packet).__name__
    linktype = {"Ether": 1, "CookedLinux": 113, "CookedLinuxV2": 276, "Loopback": 0}.get(name, 101)
    ts = float(getattr(packet, "time", 0.0) or 0.0)
    return _decoder.decode(LinkRecord(0, int(ts * 1e9), linktype, data, len(data)))
