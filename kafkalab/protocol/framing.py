"""Cutting a TCP byte stream into Kafka frames: a 4-byte big-endian size, then that many bytes.

Sans-IO: feed it bytes as they arrive (any chunking, even one byte at a time) and it hands back complete
frames, each including its size prefix. A size that is negative or above ``max_frame_size`` cannot be a
Kafka frame; :class:`FrameTooLarge` is raised *before* anything is buffered for it, so a hostile peer cannot
make the reader allocate the size it claims.
"""
from __future__ import annotations

import struct

from .errors import DecodeError

DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024   # Kafka's default socket.request.max.bytes
_SIZE = struct.Struct(">i")


class FrameTooLarge(DecodeError):
    """A size prefix no Kafka peer would send (negative, or above the configured maximum)."""


class FrameSplitter:
    """Accumulates stream bytes and yields whole frames (size prefix included)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self.consumed = 0       # stream offset of the first buffered byte

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that is not complete yet."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= 4:
            size = _SIZE.unpack_from(self._buffer, 0)[0]
            if size < 0 or size > self.max_frame_size:
                raise FrameTooLarge(f"frame size {size} is outside 0..{self.max_frame_size}",
                                    path="size", offset=self.consumed)
            if len(self._buffer) < 4 + size:
                break
            frames.append(bytes(self._buffer[:4 + size]))
            del self._buffer[:4 + size]
            self.consumed += 4 + size
        return frames
