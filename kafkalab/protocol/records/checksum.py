"""CRC-32C (Castagnoli), the checksum of v2 record batches: :func:`crc32c`, the ``crc32c`` package's, imported
on first use.

Why not at import: the package looks up its own version in the installed packages' metadata when imported,
which costs a command line's start-up more than everything else it imports (most runs of ``kafkalab decode``
on a capture without record batches never need a checksum). Call it as ``checksum.crc32c(data)``: after the
first call the name is the package's C function itself.
"""
from __future__ import annotations


def crc32c(data) -> int:
    """CRC-32C of ``data`` (any buffer)."""
    global crc32c
    from crc32c import crc32c as computed

    crc32c = computed
    return computed(data)
