"""The LZ4 frame format as Kafka uses it, decoded block by block so inflation can be capped.

Kafka compresses with the LZ4 *frame* format (magic ``04 22 4D 18``), independent blocks, no block checksums
and no content size (Java's ``KafkaLZ4BlockOutputStream``). ``cramjam.lz4.decompress`` inflates a whole frame
in one go with no output limit, so decoding walks the frame itself and hands each block to
``cramjam.lz4.decompress_block`` with the block maximum size as the output bound: memory stays bounded by the
caller's limit whatever the data claims.

The one Kafka quirk here is the header checksum (KIP-57): Kafka up to 0.10.0 hashed the frame *magic* along
with the descriptor, so old brokers and clients produce and expect a "broken" HC byte for magic 0 messages.
:func:`header_checksum` computes both forms; see there. xxHash32 is needed only for that one byte, so a small
pure-Python version lives here instead of a new dependency (content checksums are not verified: hashing
megabytes in Python would cost more than the decode).
"""
from __future__ import annotations

import struct

import cramjam

from ..errors import DecodeError

MAGIC = b"\x04\x22\x4d\x18"
_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
_WRITE_BLOCK = 64 << 10  # what Kafka's Java producer uses (BD = 0x40)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (reference algorithm; used for the frame header checksum only)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32
        while pos + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1 = _rotl((v1 + a * _P2) & _M32, 13) * _P1 & _M32
            v2 = _rotl((v2 + b * _P2) & _M32, 13) * _P1 & _M32
            v3 = _rotl((v3 + c * _P2) & _M32, 13) * _P1 & _M32
            v4 = _rotl((v4 + d * _P2) & _M32, 13) * _P1 & _M32
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (w,) = struct.unpack_from("<I", data, pos)
        h = _rotl((h + w * _P3) & _M32, 17) * _P4 & _M32
        pos += 4
    while pos < n:
        h = _rotl((h + data[pos] * _P5) & _M32, 11) * _P1 & _M32
        pos += 1
    h ^= h >> 15
    h = h * _P2 & _M32
    h ^= h >> 13
    h = h * _P3 & _M32
    h ^= h >> 16
    return h


def header_checksum(frame_header: bytes, *, broken: bool) -> int:
    """The HC byte over ``frame_header`` (magic + descriptor, HC excluded).

    KIP-57: the LZ4 spec hashes the descriptor only (FLG..DictID); Kafka <= 0.10.0 hashed from the first
    byte of the frame, magic included. Brokers accept the broken form for magic 0 and require the correct
    one for magic >= 1.
    """
    covered = frame_header if broken else frame_header[4:]
    return (xxh32(bytes(covered)) >> 8) & 0xFF


def decompress(data, limit: int, *, magic: int) -> tuple[bytes, list[str]]:
    """Inflate one or more concatenated LZ4 frames; raises DecodeError, returns (bytes, notes)."""
    data = memoryview(data)
    if not len(data):
        raise DecodeError("empty lz4 payload")
    out: list[bytes] = []
    total = 0
    notes: list[str] = []
    pos = 0
    while pos < len(data):
        produced, pos = _decompress_frame(data, pos, limit - total, magic, notes)
        out.extend(produced)
        total += sum(len(p) for p in produced)
    return b"".join(out), notes


def _decompress_frame(data: memoryview, pos: int, budget: int, magic: int, notes: list[str]):
    n = len(data)
    frame_start = pos
    if bytes(data[pos:pos + 4]) != MAGIC:
        raise DecodeError(f"not an lz4 frame (magic {bytes(data[pos:pos + 4]).hex()})", offset=pos)
    if pos + 7 > n:
        raise DecodeError("lz4 frame header truncated", offset=pos)
    flg, bd = data[pos + 4], data[pos + 5]
    if flg >> 6 != 1:
        raise DecodeError(f"unsupported lz4 frame version {flg >> 6}", offset=pos + 4)
    independent, block_checksum = bool(flg & 0x20), bool(flg & 0x10)
    header_len = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if pos + header_len + 1 > n:
        raise DecodeError("lz4 frame header truncated", offset=pos)
    header = bytes(data[pos:pos + header_len])
    hc = data[pos + header_len]
    if hc != header_checksum(header, broken=False):
        if hc == header_checksum(header, broken=True):
            if magic >= 1:
                notes.append("lz4 header checksum in the pre-KIP-57 (broken) form, which magic >= 1 forbids")
        else:
            notes.append(f"lz4 header checksum mismatch: 0x{hc:02x}")
    block_max = _BLOCK_MAX.get((bd >> 4) & 7)
    if block_max is None:
        raise DecodeError(f"invalid lz4 block size code {(bd >> 4) & 7}", offset=pos + 5)
    if flg & 0x08:
        (content_size,) = struct.unpack_from("<Q", data, pos + 6)
        if content_size > budget:
            raise DecodeError(f"lz4 content size {content_size} exceeds the inflate limit")
    pos += header_len + 1
    blocks: list[tuple[bool, memoryview]] = []
    bound = 0
    while True:  # first pass: lengths only, so the worst-case output is known before inflating
        if pos + 4 > n:
            raise DecodeError("lz4 frame truncated (no end mark)", offset=pos)
        (word,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if word == 0:
            break
        size, stored = word & 0x7FFFFFFF, bool(word & 0x80000000)
        if pos + size > n:
            raise DecodeError(f"lz4 block of {size} bytes runs past the payload", offset=pos)
        blocks.append((stored, data[pos:pos + size]))
        bound += size if stored else block_max
        pos += size + (4 if block_checksum else 0)
    if flg & 0x04:
        pos += 4
    if pos > n:
        raise DecodeError("lz4 content checksum truncated", offset=n)
    if not independent:
        return _decompress_linked(data[frame_start:pos], bound, budget), pos
    out = []
    total = 0
    scratch = bytearray(block_max) if blocks else None
    for stored, block in blocks:
        piece = bytes(block) if stored else _inflate_block(block, scratch)
        total += len(piece)
        if total > budget:
            raise DecodeError("lz4 payload inflates beyond the limit")
        out.append(piece)
    return out, pos


def _inflate_block(block, scratch: bytearray) -> bytes:
    """One independent block into ``scratch`` (sized to the frame's block maximum, so output is bounded)."""
    try:
        n = cramjam.lz4.decompress_block_into(bytes(block), scratch)
    except Exception as exc:  # cramjam raises DecompressionError or ValueError for a too-small buffer
        raise DecodeError(f"lz4 block does not decompress: {exc}") from None
    return bytes(scratch[:n])


def _decompress_linked(frame: memoryview, bound: int, budget: int) -> list[bytes]:
    """Linked blocks need the whole frame at once (this frame only: the payload may hold more frames after
    it); allowed only when the worst case fits the budget."""
    if bound > budget:
        raise DecodeError(f"linked-block lz4 frame could inflate to {bound} bytes, beyond the limit")
    try:
        return [bytes(cramjam.lz4.decompress(bytes(frame)))]
    except cramjam.DecompressionError as exc:
        raise DecodeError(f"lz4 frame does not decompress: {exc}") from None


def compress(data: bytes, *, broken_checksum: bool) -> bytes:
    """One frame the way Kafka's Java producer writes it: independent 64 KiB blocks, no checksums."""
    header = MAGIC + bytes((0x60, 0x40))  # FLG: version 01, independent blocks; BD: 64 KiB max
    parts = [header, bytes((header_checksum(header, broken=broken_checksum),))]
    view = memoryview(data)
    for i in range(0, len(data), _WRITE_BLOCK):
        chunk = view[i:i + _WRITE_BLOCK]
        packed = bytes(cramjam.lz4.compress_block(bytes(chunk), store_size=False))
        if len(packed) >= len(chunk):  # incompressible: store it raw (high bit of the size)
            parts += [struct.pack("<I", len(chunk) | 0x80000000), bytes(chunk)]
        else:
            parts += [struct.pack("<I", len(packed)), packed]
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)
