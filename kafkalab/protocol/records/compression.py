"""Compression codecs of Kafka record data, as tables from codec id to (compress, decompress).

Every decompressor takes a hard output ``limit`` and refuses to produce more: a record batch of a few
kilobytes can claim gigabytes once inflated (a "decompression bomb"), and the lab decodes untrusted traffic.
How the limit is enforced depends on what each format lets us see before inflating:

* gzip  - ``zlib.decompressobj`` with ``max_length``: streaming, never more than limit+1 bytes produced.
* snappy - raw snappy declares its length up front (checked before inflating); Java clients wrap it in
  xerial framing, whose chunks are inflated one at a time against the remaining budget.
* lz4   - walked block by block in :mod:`.lz4frame`.
* zstd  - the frame headers give either the content size or, block by block, a worst case; both are
  checked against the limit before ``cramjam.zstd.decompress`` runs, and the output is checked again after.

Decompressors raise :class:`DecodeError` (callers turn it into a diagnostic) and return ``(bytes, notes)``
where notes are non-fatal oddities worth a diagnostic.
"""
from __future__ import annotations

import enum
import struct
import zlib
from typing import Callable

import cramjam

from ..errors import DecodeError, EncodeError
from . import lz4frame

#: Default cap on the inflated size of one batch (or legacy wrapper message).
DEFAULT_MAX_INFLATED = 128 << 20


class Codec(enum.IntEnum):
    """Compression codec ids: the low 3 bits of batch/message attributes."""
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, codec: str | int | Codec) -> Codec:
        if isinstance(codec, str):
            try:
                return cls[codec.upper()]
            except KeyError:
                raise EncodeError(f"unknown codec {codec!r}") from None
        try:
            return cls(codec)
        except ValueError:
            raise EncodeError(f"unknown codec id {codec!r}") from None


def codec_name(codec_id: int) -> str:
    """"gzip" etc., or "unknown(5)" for ids Kafka never assigned."""
    name = _CODEC_NAMES.get(codec_id)
    return name if name is not None else f"unknown({codec_id})"


_CODEC_NAMES = {codec.value: codec.label for codec in Codec}     # read for every batch: no enum lookup


# --- gzip -------------------------------------------------------------------------------------------------

def _gzip_compress(data: bytes, magic: int) -> bytes:
    return bytes(cramjam.gzip.compress(data))


def _gzip_decompress(data, limit: int, magic: int) -> tuple[bytes, list[str]]:
    """Concatenated gzip members are legal (Java's GZIPInputStream reads them all)."""
    out: list[bytes] = []
    total = 0
    notes: list[str] = []
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(wbits=31)
        pending = rest
        try:
            while not d.eof:
                chunk = d.decompress(pending, limit + 1 - total)
                total += len(chunk)
                if total > limit:
                    raise DecodeError(f"gzip payload inflates beyond the limit of {limit} bytes")
                out.append(chunk)
                pending = d.unconsumed_tail
                if not chunk and not pending and not d.eof:
                    raise DecodeError("gzip stream truncated")
        except zlib.error as exc:
            raise DecodeError(f"gzip does not decompress: {exc}") from None
        rest = d.unused_data
        if not rest:
            return b"".join(out), notes
        if rest[:2] != b"\x1f\x8b":
            notes.append(f"{len(rest)} bytes of trailing data after the gzip stream")
            return b"".join(out), notes


def gzip_size(data) -> int:
    """The inflated size a gzip stream declares in its last four bytes (modulo 2**32; of its last member
    only): what :func:`gzip_into` needs room for. 0 when ``data`` is too short to be a gzip stream."""
    if len(data) < 18 or data[0] != 0x1F or data[1] != 0x8B:
        return 0
    return int.from_bytes(data[-4:], "little")


def gzip_into(data, out) -> bool:
    """Inflate the gzip stream ``data`` into ``out``, a writable buffer of exactly :func:`gzip_size` bytes:
    True if that filled it exactly, the stream checked whole (CRC and size) with nothing after it. False for
    anything else (several members, trailing bytes, a size that lies, damage): then :func:`decompress` decides,
    and says what is wrong. ``out`` is the limit: nothing is ever written past it.

    Why: the records table inflates hundreds of megabytes; written straight where the columnar reader wants
    them, they are not copied twice more (from the input to a bytes object, from the output into place)."""
    try:
        return cramjam.gzip.decompress_into(data, out) == len(out)
    except Exception:             # noqa: BLE001 - cramjam's errors: decompress() says what is wrong
        return False


# --- snappy -----------------------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_CHUNK = 32 << 10  # snappy-java's default block size


def _snappy_compress(data: bytes, magic: int) -> bytes:
    """Xerial framing, as the Java client's SnappyOutputStream writes it."""
    parts = [_XERIAL_HEADER]
    view = memoryview(data)
    for i in range(0, len(data), _XERIAL_CHUNK):
        block = bytes(cramjam.snappy.compress_raw(bytes(view[i:i + _XERIAL_CHUNK])))
        parts += [struct.pack(">i", len(block)), block]
    return b"".join(parts)


def _snappy_raw(chunk, budget: int) -> bytes:
    try:
        declared = cramjam.snappy.decompress_raw_len(chunk)
    except Exception as exc:
        raise DecodeError(f"snappy does not decompress: {exc}") from None
    if declared > budget:
        raise DecodeError(f"snappy block declares {declared} bytes, beyond the inflate limit")
    try:
        return bytes(cramjam.snappy.decompress_raw(chunk))
    except Exception as exc:
        raise DecodeError(f"snappy does not decompress: {exc}") from None


def _snappy_decompress(data, limit: int, magic: int) -> tuple[bytes, list[str]]:
    """Xerial-framed (Java) or raw (librdkafka, Sarama) snappy; the framing is recognised by its magic."""
    data = bytes(data)
    if not (len(data) >= 16 and data.startswith(_XERIAL_MAGIC)):
        return _snappy_raw(data, limit), []
    # version/compat ints are ignored: some producers write them little-endian
    out: list[bytes] = []
    total, pos = 0, 16
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecodeError("xerial snappy chunk header truncated", offset=pos)
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise DecodeError(f"xerial snappy chunk of {size} bytes runs past the payload", offset=pos)
        piece = _snappy_raw(data[pos:pos + size], limit - total)
        total += len(piece)
        out.append(piece)
        pos += size
    return b"".join(out), []


# --- lz4 --------------------------------------------------------------------------------------------------

def _lz4_compress(data: bytes, magic: int) -> bytes:
    # KIP-57: magic 0 messages carry the pre-0.10 broken header checksum, magic >= 1 the correct one
    return lz4frame.compress(data, broken_checksum=magic == 0)


def _lz4_decompress(data, limit: int, magic: int) -> tuple[bytes, list[str]]:
    return lz4frame.decompress(data, limit, magic=magic)


# --- zstd -------------------------------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 << 10


def _zstd_compress(data: bytes, magic: int) -> bytes:
    return bytes(cramjam.zstd.compress(data, level=3))


def zstd_inflated_bound(data) -> int:
    """Worst-case inflated size of concatenated zstd frames, read from frame and block headers only.

    Per frame: the declared content size if present, else the sum over blocks (raw: its size, RLE: its
    repeat count, compressed: at most min(window, 128 KiB)). Skippable frames contribute nothing.
    """
    data = memoryview(data)
    n, pos, bound = len(data), 0, 0
    while pos < n:
        if pos + 4 > n:
            raise DecodeError("zstd frame magic truncated", offset=pos)
        (magic,) = struct.unpack_from("<I", data, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            if pos + 8 > n:
                raise DecodeError("zstd skippable frame truncated", offset=pos)
            pos += 8 + struct.unpack_from("<I", data, pos + 4)[0]
            continue
        if magic != _ZSTD_MAGIC:
            raise DecodeError(f"not a zstd frame (magic 0x{magic:08x})", offset=pos)
        pos += 4
        if pos >= n:
            raise DecodeError("zstd frame header truncated", offset=pos)
        fhd = data[pos]
        pos += 1
        single = bool(fhd & 0x20)
        window = 0
        if not single:
            if pos >= n:
                raise DecodeError("zstd frame header truncated", offset=pos)
            wd = data[pos]
            pos += 1
            base = 1 << (10 + (wd >> 3))
            window = base + (base >> 3) * (wd & 7)
        pos += (0, 1, 2, 4)[fhd & 3]  # dictionary id
        fcs_size = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        if pos + fcs_size > n:
            raise DecodeError("zstd frame header truncated", offset=pos)
        content_size = None
        if fcs_size:
            content_size = int.from_bytes(data[pos:pos + fcs_size], "little") + (256 if fcs_size == 2 else 0)
            pos += fcs_size
            if single:
                window = content_size
        blocks_max = 0
        while True:
            if pos + 3 > n:
                raise DecodeError("zstd block header truncated", offset=pos)
            header = int.from_bytes(data[pos:pos + 3], "little")
            pos += 3
            last, kind, size = header & 1, (header >> 1) & 3, header >> 3
            if kind == 3:
                raise DecodeError("zstd reserved block type", offset=pos - 3)
            blocks_max += size if kind in (0, 1) else min(window, _ZSTD_BLOCK_MAX)
            pos += 1 if kind == 1 else size
            if last:
                break
        if fhd & 0x04:
            pos += 4  # content checksum
        bound += content_size if content_size is not None else blocks_max
    if pos > n:
        raise DecodeError("zstd frame truncated", offset=n)
    return bound


def _zstd_decompress(data, limit: int, magic: int) -> tuple[bytes, list[str]]:
    bound = zstd_inflated_bound(data)
    if bound > limit:
        raise DecodeError(f"zstd payload could inflate to {bound} bytes, beyond the limit of {limit}")
    try:
        out = bytes(cramjam.zstd.decompress(bytes(data)))
    except Exception as exc:
        raise DecodeError(f"zstd does not decompress: {exc}") from None
    if len(out) > limit:
        raise DecodeError(f"zstd payload inflates beyond the limit of {limit} bytes")
    return out, []


def _identity_compress(data: bytes, magic: int) -> bytes:
    return bytes(data)


def _identity_decompress(data, limit: int, magic: int) -> tuple[bytes, list[str]]:
    return bytes(data), []


#: codec id -> compressor(data, magic) -> bytes
COMPRESSORS: dict[Codec, Callable[[bytes, int], bytes]] = {
    Codec.NONE: _identity_compress,
    Codec.GZIP: _gzip_compress,
    Codec.SNAPPY: _snappy_compress,
    Codec.LZ4: _lz4_compress,
    Codec.ZSTD: _zstd_compress,
}

#: codec id -> decompressor(data, limit, magic) -> (bytes, notes)
DECOMPRESSORS: dict[int, Callable[..., tuple[bytes, list[str]]]] = {
    Codec.NONE: _identity_decompress,
    Codec.GZIP: _gzip_decompress,
    Codec.SNAPPY: _snappy_decompress,
    Codec.LZ4: _lz4_decompress,
    Codec.ZSTD: _zstd_decompress,
}

#: Lowest magic each codec may appear with (zstd arrived with KIP-110 for magic 2 only).
MIN_MAGIC = {Codec.NONE: 0, Codec.GZIP: 0, Codec.SNAPPY: 0, Codec.LZ4: 0, Codec.ZSTD: 2}


def compress(codec: Codec, data: bytes, *, magic: int) -> bytes:
    if magic < MIN_MAGIC[codec]:
        raise EncodeError(f"codec {codec.label} needs magic >= {MIN_MAGIC[codec]}, not {magic}")
    return COMPRESSORS[codec](data, magic)


def decompress(codec_id: int, data, *, magic: int, limit: int) -> tuple[bytes, list[str]]:
    """Inflate ``data``; raises DecodeError for unknown codecs, corrupt data or output beyond ``limit``."""
    fn = DECOMPRESSORS.get(codec_id)
    if fn is None:
        raise DecodeError(f"unknown compression codec {codec_id}")
    if magic < MIN_MAGIC[Codec(codec_id)]:
        raise DecodeError(f"codec {codec_name(codec_id)} is not allowed with magic {magic}")
    return fn(data, limit, magic)
