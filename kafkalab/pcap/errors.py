"""The one exception the capture-file readers raise on purpose."""
from __future__ import annotations


class CaptureError(ValueError):
    """A capture file that cannot be read at all: empty, not a pcap/pcapng file, a broken header."""


class NotACaptureFile(CaptureError):
    """The file is empty or is no pcap/pcapng file at all (its first bytes say so): the user gave the wrong file."""
