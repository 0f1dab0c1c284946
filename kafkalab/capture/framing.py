"""Cutting one reassembled direction into Kafka frames, with resynchronisation after gaps.

Owns: the frame boundaries of one direction (stream offsets of each frame), and finding a boundary again
after lost bytes or when a capture starts mid-connection. Must not know TCP (it gets ordered data and gap
notices) nor pairing (it asks a ``plausible`` callback whether a frame can start at a position).

Theory of operation: while *synced*, a 4-byte size is read and that many bytes cut, without copying when a
chunk holds whole frames. After a gap, or when told the start is uncertain, it is *unsynced*: it scans
forward (jumping, with a regular expression in C, to the offsets where a frame could start at all: the bytes
of other protocols mostly have none) for the first offset where ``plausible(buf, pos)`` says yes (it may answer None: "need more bytes"),
drops the bytes before it (counted in the next frame's diagnostics) and resumes. Frames after a gap carry
"gap before frame"; frames cut while unsure carry "resynchronised". When a gap or the end of the stream comes
while a candidate start is still waiting for bytes, that candidate can never be confirmed: the scan moves on
past it over the bytes already buffered, so real frames behind a false start are not thrown away. And while
a candidate waits, a later offset where a whole frame is already buffered and plausible wins over it (the
remains of a cut frame, zeros mostly, often read as the header of a large request that would otherwise hold
back every frame behind it): the buffer after the candidate is looked at once per offset, up to
``LOOKAHEAD`` bytes, with the few offsets that looked like frame starts but were incomplete checked again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from kafkalab.protocol.framing import MAX_FRAME_SIZE as MAX_FRAME
from kafkalab.protocol.framing import SIZE_PREFIX, cut_frames

MAX_UNSYNCED = 4 << 20              # scan window while looking for a frame start
LOOKAHEAD = 64 << 10                # how far past a waiting candidate a whole frame is looked for


@dataclass(slots=True)
class CutFrame:
    offset: int                     # stream offset of the size prefix
    raw: bytes
    diagnostics: list[str] = field(default_factory=list)


Plausible = Callable[[bytes, int], "bool | None"]


class FrameCutter:
    """Two modes. Synced: frames are cut straight out of the chunks given (a chunk holding exactly one frame
    is used as the frame's bytes; a frame spread over several chunks is joined once, when complete). Unsynced
    (after a gap, or told the start is uncertain): the bytes go to a buffer scanned for a plausible start."""

    def __init__(self, plausible: Plausible, synced: bool = True, starts: re.Pattern | None = None) -> None:
        """``starts``: a pattern that matches (at least) every position ``plausible`` can accept, so that
        the scan skips in C over bytes that cannot start a frame."""
        self.plausible = plausible
        self.starts = starts
        self.synced = synced
        self._buf = bytearray()             # unsynced mode (and what follows a resync until it is used up)
        self._pos = 0                       # next unread byte in _buf
        self._offset = 0                    # stream offset of _buf[0]
        self._parts: list = []              # synced mode: the chunks of an incomplete frame
        self._have = 0                      # bytes in _parts
        self._need = 0                      # size of that frame with its prefix (0: prefix incomplete)
        self._start = 0                     # its stream offset
        self._notes: list[str] = []         # diagnostics for the next frame
        self.skipped = 0
        self._ahead: tuple[int, int, list[int]] = (-1, 0, [])  # (candidate, next offset to look at, offsets
        #                                                         that looked like frame starts), stream offsets

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos + self._have

    def data(self, offset: int, data: bytes) -> list[CutFrame]:
        if not self.synced or len(self._buf) > self._pos:
            self._buf += data
            return self._run()
        frames: list[CutFrame] = []
        n = len(data)
        pos = 0
        if self._have:
            if self._need == 0:            # the size prefix itself was split: rare, join and start over
                data = b"".join(self._parts + [data])
                offset, n = self._start, len(data)
                self._parts, self._have = [], 0
            else:
                missing = self._need - self._have
                if n < missing:
                    self._parts.append(data)
                    self._have += n
                    return frames
                self._parts.append(memoryview(data)[:missing] if missing < n else data)
                frames.append(CutFrame(self._start, b"".join(self._parts), self._take_notes()))
                self._parts, self._have = [], 0
                pos = missing
        cut = cut_frames(data, pos, n)
        take_notes = self._take_notes
        for start, end in cut.frames:
            raw = data if (start == 0 and end == n) else data[start:end]
            frames.append(CutFrame(offset + start, raw, take_notes() if self._notes else []))
        pos = cut.stop
        if cut.impossible is not None:
            self._buf = bytearray(memoryview(data)[pos:])
            self._pos, self._offset = 0, offset + pos
            return frames + self._run()
        self._need = cut.need if cut.need > 4 else 0
        if pos < n:
            self._parts = [memoryview(data)[pos:] if pos else data]
            self._have = n - pos
            self._start = offset + pos
        return frames

    def _take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes

    def note(self, text: str) -> None:
        """A diagnostic for the next frame cut."""
        self._notes.append(text)

    def gap(self, offset: int, length: int) -> list[CutFrame]:
        """Bytes [offset, offset+length) are lost: whatever frame was in progress is gone. Returns the frames
        that were still recoverable from the bytes before the gap (see :meth:`_settle`)."""
        frames = self._settle()
        lost_partial = self.buffered
        self._buf.clear()
        self._parts, self._have, self._need = [], 0, 0
        self._pos, self._offset = 0, offset + length
        self.synced = False
        note = f"gap before frame: {length} bytes lost at stream offset {offset}"
        if lost_partial:
            note += f" ({lost_partial} bytes of an incomplete frame discarded)"
        self._notes.append(note)
        return frames

    def finish(self) -> list[CutFrame]:
        """The stream ended: a candidate start that was waiting for more bytes will never complete."""
        return self._settle()

    def _settle(self) -> list[CutFrame]:
        """No more contiguous bytes will come: while unsynced, a candidate start waiting for bytes beyond the
        buffer can never be confirmed, so scan on past such candidates. Without this, a false candidate
        (bytes of a frame cut by the gap that happen to look like a header with a large size) would swallow
        the real frames buffered behind it when the buffer is discarded."""
        if self.synced or len(self._buf) <= self._pos:
            return []
        waiting = self.plausible
        self.plausible = lambda buf, pos: bool(waiting(buf, pos))
        try:
            return self._run()
        finally:
            self.plausible = waiting

    def pending_bytes(self) -> int:
        return self.buffered

    def _run(self) -> list[CutFrame]:
        frames: list[CutFrame] = []
        buf = self._buf
        while True:
            if not self.synced and not self._resync():
                break
            cut = cut_frames(buf, self._pos)
            with memoryview(buf) as view:
                for start, end in cut.frames:
                    frames.append(CutFrame(self._offset + start, bytes(view[start:end]), self._notes))
                    self._notes = []
            self._pos = cut.stop
            if cut.impossible is None:
                break
            self.synced = False
            self._notes.append(f"resynchronised after an impossible frame size {cut.impossible}")
            self._pos += 1
            self.skipped += 1
        if self._pos and (self._pos >= len(buf) or self._pos > 1 << 16):
            del buf[:self._pos]
            self._offset += self._pos
            self._pos = 0
        return frames

    def _resync(self) -> bool:
        """Scan for a plausible frame start; True once synced (position moved there)."""
        buf = self._buf
        start = self._pos
        pos = start
        starts = self.starts
        while pos + 4 <= len(buf):
            if starts is not None:
                match = starts.search(buf, pos)
                # no match: no position can start a frame but the last few, too short yet for the pattern
                pos = match.start() if match is not None else max(pos, len(buf) - 7)
                if pos - start > MAX_UNSYNCED:
                    pos = start + MAX_UNSYNCED + 1
                    break
            verdict = self.plausible(buf, pos)
            if verdict is None:
                later = self._whole_frame_after(pos)
                if later is not None:
                    verdict, pos = True, later
                else:
                    if pos - start:
                        self._skip(start, pos)
                    return False
            if verdict:
                if pos > start:
                    self._skip(start, pos)
                self.synced = True
                return True
            pos += 1
            if pos - start > MAX_UNSYNCED:
                break
        self._skip(start, max(start, pos))
        return False

    def _whole_frame_after(self, candidate: int) -> int | None:
        """A position after ``candidate`` (which waits for bytes) where a whole frame is buffered and
        plausible, or None (see the module docstring)."""
        buf, base, unpack = self._buf, self._offset, SIZE_PREFIX.unpack_from
        waiting_for, upto, starts = self._ahead
        if waiting_for != base + candidate:
            waiting_for, upto, starts = base + candidate, base + candidate + 1, []

        def whole(pos: int) -> bool | None:
            size = unpack(buf, pos)[0]
            if size < 0 or size > MAX_FRAME:
                return False
            if pos + 4 + size > len(buf):
                return None
            return bool(self.plausible(buf, pos))

        found = None
        for at in starts:
            verdict = whole(at - base)
            if verdict:
                found = at - base
                break
        if found is None:
            starts = [at for at in starts if whole(at - base) is None]
            pos, stop = upto - base, min(len(buf) - 4, candidate + LOOKAHEAD)
            starts_at = self.starts.search if self.starts is not None else None
            while pos < stop:
                if starts_at is not None:
                    match = starts_at(buf, pos)
                    if match is None:           # none up to the last few bytes, too short yet to tell
                        pos = max(pos, min(stop, len(buf) - 7))
                        break
                    if match.start() >= stop:
                        pos = stop
                        break
                    pos = match.start()
                verdict = whole(pos)
                if verdict:
                    found = pos
                    break
                if verdict is None and len(starts) < 8 and self.plausible(buf, pos) is not False:
                    starts.append(base + pos)         # might start a frame once its bytes are here
                pos += 1
            upto = base + pos
        self._ahead = (waiting_for, upto, starts)
        return found

    def _skip(self, start: int, pos: int) -> None:
        if pos <= start:
            return
        skipped = pos - start
        self.skipped += skipped
        self._pos = pos
        if self._notes and self._notes[-1].startswith("resynchronised: skipped"):
            previous = int(self._notes[-1].split()[2])
            self._notes[-1] = f"resynchronised: skipped {previous + skipped} bytes to find a frame start"
        else:
            self._notes.append(f"resynchronised: skipped {skipped} bytes to find a frame start")
