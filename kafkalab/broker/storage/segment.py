"""Segments: where a partition's batch bytes live. Memory (a bytearray) or a file opened for appending.

A segment knows nothing about batches: it appends bytes, reads byte ranges back, flushes and truncates. The
partition log keeps the index (offset -> segment position) on top. File segments are named after the first
offset they hold, as Kafka names them (``00000000000000000042.log``).
"""
from __future__ import annotations

import os


class MemorySegment:
    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self._buf = bytearray()

    @property
    def size(self) -> int:
        return len(self._buf)

    def append(self, data: bytes) -> int:
        position = len(self._buf)
        self._buf += data
        return position

    def read(self, position: int, size: int) -> bytes:
        return bytes(self._buf[position:position + size])

    def flush(self) -> None:
        pass

    def truncate(self, size: int) -> None:
        del self._buf[size:]

    def close(self) -> None:
        pass

    def delete(self) -> None:
        self._buf = bytearray()


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


class FileSegment:
    def __init__(self, directory: str, base_offset: int) -> None:
        self.base_offset = base_offset
        self.path = os.path.join(directory, segment_file_name(base_offset))
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> int:
        position = self._size
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += len(data)
        return position

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def flush(self) -> None:
        os.fsync(self._fd)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self._size = size

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        os.unlink(self.path)
