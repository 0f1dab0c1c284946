"""Cutting a byte stream into Kafka frames: a 4-byte big-endian size, then that many bytes.

The one home of frame cutting: captures (:mod:`kafkalab.capture.framing`, over reassembled TCP streams), the
broker (its receive buffer) and the distributed reader all call :func:`cut_frames`. It is a pure function over
a buffer: it says where the whole frames are and where the rest begins, and copies nothing, so each caller
keeps its own buffering (a growable receive buffer, a mapped capture file, chunks of a stream).

A size that is negative or above the maximum cannot be a Kafka frame. :func:`cut_frames` stops there and says
so (``Cut.impossible``) *before* anything is buffered for it: the broker closes the connection
(a hostile peer cannot make it allocate the size it claims), a capture reader resynchronises.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .errors import DecodeError

MAX_FRAME_SIZE = 100 * 1024 * 1024   # Kafka's default socket.request.max.bytes
PREFIX = 4
SIZE_PREFIX = struct.Struct(">i")      # a frame's size prefix: read one with frame_size, many with its unpack_from


class FrameTooLarge(DecodeError):
    """A size prefix no Kafka peer would send (negative, or above the configured maximum)."""


class Cut(NamedTuple):
    """Where the whole frames of a buffer are, and what the rest needs."""

    frames: list[tuple[int, int]]   # (start, end) of each whole frame, size prefix included, end exclusive
    stop: int                       # where the bytes that are not a whole frame begin
    need: int                       # bytes the frame at ``stop`` needs in all, prefix included (4: prefix unread)
    impossible: int | None          # the size prefix at ``stop`` when it cannot be a frame's, else None


def frame_size(buf, pos: int = 0) -> int:
    """The size prefix at ``pos`` (the frame's length without the prefix)."""
    return SIZE_PREFIX.unpack_from(buf, pos)[0]


def cut_frames(buf, start: int = 0, end: int | None = None, max_frame_size: int = MAX_FRAME_SIZE) -> Cut:
    """The whole frames in ``buf[start:end]``, front to back, up to the first incomplete frame or impossible
    size prefix."""
    end = len(buf) if end is None else end
    frames: list[tuple[int, int]] = []
    unpack = SIZE_PREFIX.unpack_from
    pos = start
    while pos + PREFIX <= end:
        size = unpack(buf, pos)[0]
        if size < 0 or size > max_frame_size:
            return Cut(frames, pos, PREFIX, size)
        stop = pos + PREFIX + size
        if stop > end:
            return Cut(frames, pos, PREFIX + size, None)
        frames.append((pos, stop))
        pos = stop
    return Cut(frames, pos, PREFIX, None)


def check_size(size: int, max_frame_size: int = MAX_FRAME_SIZE, offset: int = 0) -> None:
    """Raise :class:`FrameTooLarge` for a size prefix no Kafka peer would send."""
    if size < 0 or size > max_frame_size:
        raise FrameTooLarge(f"frame size {size} is outside 0..{max_frame_size}", path="size", offset=offset)
