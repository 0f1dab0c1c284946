"""Segments: where a partition's batch bytes live. Memory (the appended buffers themselves) or a file opened for
appending.

A segment knows nothing about batches: it appends bytes (or a list of pieces, written as one), reads byte ranges
back, flushes and truncates. The
partition log keeps the index (offset -> segment position) on top. File segments are named after the first
offset they hold, as Kafka names them (``00000000000000000042.log``).
"""
from __future__ import annotations

import bisect
import os
from collections import OrderedDict


class MemorySegment:
    """Appended pieces kept as the immutable buffers they arrived as (bytes, or read-only views of bytes):
    appending copies nothing, a read of exactly one bytes piece hands that object back, other reads join their
    pieces (one copy)."""

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self._pieces: list[bytes] = []
        self._starts: list[int] = []
        self._size = 0

    @property
    def size(self) -> int:
        return self._size

    def append(self, data) -> int:
        """Append bytes, or a list of pieces (bytes or views of bytes, which must stay unchanged)."""
        position = self._size
        for piece in (data if isinstance(data, list) else [data]):
            piece = piece if isinstance(piece, (bytes, memoryview)) else bytes(piece)
            self._pieces.append(piece)
            self._starts.append(self._size)
            self._size += len(piece)
        return position

    def read(self, position: int, size: int) -> bytes:
        end = min(position + size, self._size)
        i = bisect.bisect_right(self._starts, position) - 1
        if i < 0 or position >= end:
            return b""
        piece, start = self._pieces[i], self._starts[i]
        if position == start and end == start + len(piece) and isinstance(piece, bytes):
            return piece
        if end <= start + len(piece):
            return bytes(piece[position - start:end - start])
        parts = [memoryview(piece)[position - start:]]
        for piece, start in zip(self._pieces[i + 1:], self._starts[i + 1:]):
            if start >= end:
                break
            parts.append(memoryview(piece)[:end - start])
        return b"".join(parts)

    def flush(self) -> None:
        pass

    def truncate(self, size: int) -> None:
        while self._pieces and self._starts[-1] >= size:
            self._pieces.pop()
            self._starts.pop()
        if self._pieces and self._starts[-1] + len(self._pieces[-1]) > size:
            self._pieces[-1] = self._pieces[-1][:size - self._starts[-1]]
        self._size = self._starts[-1] + len(self._pieces[-1]) if self._pieces else 0

    def close(self) -> None:
        pass

    def delete(self) -> None:
        self._pieces, self._starts, self._size = [], [], 0


IOV_MAX = 512                  # pieces per writev (POSIX guarantees at least 16, Linux takes 1024)


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


class HandleCache:
    """Open file descriptors of file segments, at most ``limit`` at a time, least recently used closed
    first: a broker with thousands of partitions must not run out of descriptors (at the common limit of
    1,024, sockets would then fail to be accepted too). One cache per store, used from one thread."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._open: OrderedDict[str, int] = OrderedDict()

    def fd(self, path: str) -> int:
        fd = self._open.get(path)
        if fd is not None:
            self._open.move_to_end(path)
            return fd
        while len(self._open) >= self.limit:
            os.close(self._open.popitem(last=False)[1])
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._open[path] = fd
        return fd

    def close(self, path: str) -> None:
        fd = self._open.pop(path, None)
        if fd is not None:
            os.close(fd)

    def __len__(self) -> int:
        return len(self._open)


class FileSegment:
    """A segment file, opened through a :class:`HandleCache` whenever it is used."""

    def __init__(self, directory: str, base_offset: int, handles: HandleCache | None = None) -> None:
        self.base_offset = base_offset
        self.path = os.path.join(directory, segment_file_name(base_offset))
        self._handles = handles if handles is not None else HandleCache(1)
        self._size = os.fstat(self._handles.fd(self.path)).st_size

    @property
    def size(self) -> int:
        return self._size

    def append(self, data) -> int:
        """Append bytes, or a list of pieces (written with one writev)."""
        position = self._size
        pieces = [memoryview(p) for p in (data if isinstance(data, list) else [data])]
        total = sum(len(p) for p in pieces)
        fd = self._handles.fd(self.path)
        while pieces:
            written = os.writev(fd, pieces[:IOV_MAX])
            while pieces and written >= len(pieces[0]):
                written -= len(pieces[0])
                pieces.pop(0)
            if pieces and written:
                pieces[0] = pieces[0][written:]
        self._size += total
        return position

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self._handles.fd(self.path), size, position)

    def flush(self) -> None:
        os.fsync(self._handles.fd(self.path))

    def truncate(self, size: int) -> None:
        os.ftruncate(self._handles.fd(self.path), size)
        self._size = size

    def close(self) -> None:
        self._handles.close(self.path)

    def delete(self) -> None:
        self.close()
        os.unlink(self.path)
