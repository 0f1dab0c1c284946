"""A decode task's payloads as one buffer, the engine's input (:func:`kafkalab.capture.bulk.read_index` reads
payloads at offsets of one buffer, as it reads a mapped file).

A decode task's payloads lie scattered over every capture file its connections touch. On Linux the files are
mapped side by side into one reserved range of addresses (:func:`_side_by_side`): a payload's place in the
buffer is its file's place plus its offset in the file, and no byte is copied. The pages are the page cache's,
shared with every other task reading those files, and read only where the engine reads. Copying each payload
into a buffer of its own (:func:`_copied`, the way elsewhere) had cost a 2 GB capture's decode tasks 4.5 s of
CPU on ``local[2]`` (py-spy over the Python workers), most of it in page faults on the fresh buffer.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import weakref

import numpy as np

# Linux's values (the only platform the side-by-side way is used on): the mmap module does not export them
_MAP_FIXED, _MAP_NORESERVE = 0x10, 0x4000


def payload_buffer(paths: list[str], rank: np.ndarray, off: np.ndarray, length: np.ndarray,
                   tail: bytes = b"") -> tuple:
    """(``buffer``, where each index row's payload starts in it, where ``tail`` starts in it) for index rows
    naming their payloads by file rank, offset and length. Slicing ``buffer`` gives bytes, as slicing a mapped
    file does. ValueError if a payload lies past its file's end (the file changed since it was indexed)."""
    ranks = np.unique(rank).tolist()
    sizes = {r: os.path.getsize(paths[r]) for r in ranks}
    size_of = np.zeros(max(ranks, default=-1) + 1, dtype=np.int64)      # indexed by rank, as ``place_of``
    size_of[ranks] = [sizes[r] for r in ranks]
    past = off + length > size_of[rank]
    if past.any():
        bad = sorted({paths[r] for r in np.unique(rank[past]).tolist()})
        raise ValueError(f"{', '.join(bad)}: shorter than when it was indexed (the file changed during the read)")
    found = _side_by_side(paths, sizes, tail) if sys.platform == "linux" else None
    if found is None:
        return _copied(paths, rank, off, length, tail)
    buffer, base, tail_at = found
    place_of = np.zeros_like(size_of)
    place_of[ranks] = [base[r] for r in ranks]
    return buffer, place_of[rank] + off, tail_at


def _side_by_side(paths: list[str], sizes: dict, tail: bytes):
    """The files (by rank) mapped one after another at page-aligned places of one reserved range, then
    ``tail`` in a page of its own, as (buffer, file rank -> its place, tail's place); None if the system
    refuses. The range is unmapped when the buffer is no longer referred to (by the engine's tables or any
    view of it)."""
    libc = _libc()
    if libc is None:
        return None
    page = mmap.PAGESIZE
    base, at = {}, 0
    for r, size in sizes.items():
        base[r] = at
        at += -(-size // page) * page
    tail_at = at
    total = tail_at + max(page, -(-len(tail) // page) * page)
    failed = ctypes.c_void_p(-1).value
    start = libc.mmap(None, total, mmap.PROT_READ | mmap.PROT_WRITE,
                      mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
    if start in (None, failed):
        return None
    try:
        for r, size in sizes.items():
            if size and _map_at(libc, start + base[r], size, paths[r]) != start + base[r]:
                libc.munmap(start, total)
                return None
    except OSError:             # the file could not be opened: the range is given back, the error stands
        libc.munmap(start, total)
        raise
    ctypes.memmove(start + tail_at, tail, len(tail))
    buffer = (ctypes.c_char * total).from_address(start)
    weakref.finalize(buffer, libc.munmap, start, total)
    return buffer, base, tail_at


def _map_at(libc, address: int, size: int, path: str):
    """The file at ``path`` mapped read-only at ``address`` (the address it was mapped at: another on failure)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return libc.mmap(address, size, mmap.PROT_READ, mmap.MAP_SHARED | _MAP_FIXED, fd, 0)
    finally:
        os.close(fd)


_LIBC: list = []


def _libc():
    """The C library's mmap and munmap, typed (None where ctypes cannot load them)."""
    if not _LIBC:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_int64]
            libc.munmap.restype = ctypes.c_int
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        except (OSError, AttributeError):
            libc = None
        _LIBC.append(libc)
    return _LIBC[0]


def _copied(paths: list[str], rank: np.ndarray, off: np.ndarray, length: np.ndarray, tail: bytes) -> tuple:
    """The payloads copied one after another (then ``tail``) into anonymous memory, each once from the mapped
    file into its place: (buffer, starts, tail's place)."""
    from .packets import mapped

    ends = np.cumsum(length, dtype=np.int64)
    total = int(ends[-1]) if len(ends) else 0
    if total + len(tail) == 0:
        return b"", ends - length, 0
    out = mmap.mmap(-1, total + len(tail))
    view = memoryview(out)
    maps = {r: memoryview(mapped(paths[r])) for r in set(rank.tolist())}
    for r, o, n, end in zip(rank.tolist(), off.tolist(), length.tolist(), ends.tolist()):
        view[end - n:end] = maps[r][o:o + n]
    view[total:] = tail
    view.release()
    return out, ends - length, total
