"""Frames cut from one direction's TCP segments, in place in the capture file (the frames stage of a regular
connection).

Owns: :class:`Direction`, the walk from size prefix to size prefix over a direction's segments (each a file
offset and a length), window after window, carrying the segments of the frame not finished yet; and the
*span* of a frame that crosses segments (:func:`span_ranges`, :func:`span_bytes`), its bytes left in the
file until asked for. The cutting rule is :func:`kafkalab.protocol.framing.frame_size`'s, the same as
everywhere; this module only finds the prefixes in a file instead of a buffer. Must not know TCP (the
segments given are already known to follow each other exactly) nor Kafka messages.
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import repeat
from operator import add as add_up, sub

import numpy as np

from kafkalab.protocol.framing import MAX_FRAME_SIZE, PREFIX, SIZE_PREFIX, frame_size


class Direction:
    """One direction of a regular connection across windows: where its next frame starts in the direction's
    byte stream, and the segments (file offsets) holding the bytes from there on, an unfinished frame's."""

    __slots__ = ("pos", "total", "starts", "lengths", "ends", "positions")

    def __init__(self) -> None:
        self.pos = self.total = 0               # stream offsets: the next frame's start, the bytes seen
        self.starts: list[int] = []
        self.lengths: list[int] = []
        self.ends: list[int] = []               # stream offset after each segment
        self.positions: list[int] = []

    def pending(self) -> bool:
        """Bytes that do not make a whole frame yet."""
        return self.pos < self.total

    def walk(self, data, index, packets: np.ndarray, conn, side: int, frames: list | None) -> bool:
        """Cut the frames the window's segments ``packets`` (this direction's, with payload, in order)
        complete, appending them to ``frames`` (None: only check); False when the bytes do not cut into
        frames (a size prefix out of range)."""
        length = index.payload_length[packets]
        total = self.total
        # segments that hold one whole frame if one starts there (the size prefix as the index read it)
        whole = (length >= PREFIX) & (index.payload_head[packets] == length - PREFIX)
        if self.pos == total and whole.all():
            # each segment is one whole frame (the common case for small frames): no walk
            self.pos = self.total = total + int(length.sum())
            if frames is not None:
                starts = index.payload_start[packets]
                offsets = total + np.cumsum(length) - length
                frames.extend(zip(packets.tolist(), [conn] * len(packets), [side] * len(packets), offsets.tolist(),
                                  starts.tolist(), (starts + length).tolist()))
            return True
        starts = self.starts + index.payload_start[packets].tolist()
        lengths = self.lengths + length.tolist()
        ends = self.ends + (total + np.cumsum(length)).tolist()
        positions = self.positions + packets.tolist()
        flags, whole = whole, [False] * len(self.starts)
        whole += flags.tolist()
        whole += (False, False)                                 # (a run ends there)
        total = ends[-1]
        pos, k = self.pos, 0
        add = frames.append if frames is not None else None
        size_at = SIZE_PREFIX.unpack_from                       # frame_size, without a call per frame
        while pos + PREFIX <= total:
            segment_end = ends[k]
            if segment_end <= pos:                              # the segment holding byte ``pos``
                k = bisect_left(ends, pos + 1, k)
                segment_end = ends[k]
            if whole[k] and pos == segment_end - lengths[k]:   # what the walk below finds, without reading
                # a run of three or more such segments (each one frame, one after the other): cut at once,
                # with no walk step per frame (shorter runs cost less one by one)
                if whole[k + 1] and whole[k + 2]:
                    last = whole.index(False, k + 3)
                    if frames is not None:
                        run = last - k
                        frames.extend(zip(positions[k:last], repeat(conn, run), repeat(side, run),
                                          map(sub, ends[k:last], lengths[k:last]), starts[k:last],
                                          map(add_up, starts[k:last], lengths[k:last])))
                    pos, k = ends[last - 1], last - 1
                    continue
                if add is not None:
                    add((positions[k], conn, side, pos, starts[k], starts[k] + lengths[k]))
                pos = segment_end
                continue
            offset = starts[k] + pos - (segment_end - lengths[k])
            if pos + PREFIX <= segment_end:
                size = size_at(data, offset)[0]
            else:
                size = frame_size(_span(data, starts, lengths, ends, k, pos, pos + PREFIX))
            if size < 0 or size > MAX_FRAME_SIZE:
                return False
            end = pos + PREFIX + size
            if end <= segment_end:                              # within the segment (the usual case)
                if add is not None:
                    add((positions[k], conn, side, pos, offset, offset + PREFIX + size))
                pos = end
                continue
            if end > total:                                     # unfinished: the next window finishes it
                break
            last = bisect_left(ends, end, k)                    # the segment holding the frame's last byte
            if add is not None:
                span = (starts, lengths, k, last, offset, starts[last] + end - (ends[last] - lengths[last]))
                add((positions[last], conn, side, pos, 0, 0, span))
            pos, k = end, last
        keep = bisect_left(ends, pos + 1)                       # the segments still holding unfinished bytes
        self.pos, self.total = pos, total
        self.starts, self.lengths, self.ends, self.positions = \
            starts[keep:], lengths[keep:], ends[keep:], positions[keep:]
        return True


def span_ranges(span: tuple) -> list[tuple[int, int]]:
    """The file ranges holding a frame that spans segments, in order: the span is (the direction's segment
    starts and lengths, first and last segment, where the frame starts in the first, ends in the last)."""
    starts, lengths, k, last, head, tail = span
    first = (head, starts[k] + lengths[k])
    if last == k + 1:                           # the usual case: two segments
        return [first, (starts[last], tail)]
    return [first, *[(starts[j], starts[j] + lengths[j]) for j in range(k + 1, last)], (starts[last], tail)]


def span_bytes(view: memoryview, span: tuple) -> bytes:
    """A frame that spans segments, joined (one copy) from a view of the file."""
    starts, lengths, k, last, head, tail = span
    if last == k + 1:
        return b"".join((view[head:starts[k] + lengths[k]], view[starts[last]:tail]))
    return b"".join([view[a:b] for a, b in span_ranges(span)])


def span_length(span: tuple) -> int:
    """The length of a frame that spans segments."""
    starts, lengths, k, last, head, tail = span
    return starts[k] + lengths[k] - head + sum(lengths[k + 1:last]) + tail - starts[last]


def span_prefix(view: memoryview, span: tuple, size: int) -> bytes:
    """The first ``size`` bytes of a frame that spans segments: a look at its header that copies no more."""
    parts, taken = [], 0
    for a, b in span_ranges(span):
        parts.append(view[a:min(b, a + size - taken)])
        taken += b - a
        if taken >= size:
            break
    return b"".join(parts)


def span_head(data, span: tuple, size: int):
    """(buffer, offset) where the first ``size`` bytes of a frame that spans segments can be read: the file
    itself when its first segment holds them (no copy), else those bytes joined (see :func:`span_prefix`)."""
    starts, lengths, k, _, head, _ = span
    if starts[k] + lengths[k] - head >= size:
        return data, head
    return span_prefix(memoryview(data), span, size), 0


def _span(data, starts, lengths, ends, k: int, pos: int, end: int) -> bytes:
    """Stream bytes [pos, end) that cross segment boundaries, from segment ``k`` on."""
    out = b""
    while pos < end:
        at = starts[k] + pos - (ends[k] - lengths[k])
        take = min(end, ends[k]) - pos
        out += data[at:at + take]
        pos += take
        k += 1
    return out
