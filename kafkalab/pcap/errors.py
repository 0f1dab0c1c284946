"""The one exception the capture-file readers raise on purpose."""
from __future__ import annotations


class CaptureError(ValueError):
    """A capture file that cannot be read at all: empty, not a pcap/pcapng file, a broken header."""
