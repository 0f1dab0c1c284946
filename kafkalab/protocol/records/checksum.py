"""CRC-32C (Castagnoli), the checksum of v2 record batches: :func:`crc32c`, the ``crc32c`` package's C
function, loaded on first use.

Why not at import: the package looks up its own version in the installed packages' metadata when imported,
which costs a command line's start-up more than everything else it imports (most runs of ``kafkalab decode``
on a capture without record batches never need a checksum). Why not by importing the package either, where
it is installed as usual: that lookup (``importlib.metadata`` and a scan of the installed distributions)
costs a whole capture read more than all its checksums (about 60 million instructions, 10 ms or more), so
the package's compiled module is loaded on its own, as the package's ``__init__`` would load it (a later
``import crc32c`` still works and gives the same function). Call it as ``checksum.crc32c(data)``: after the
first call the name is the package's C function itself.
"""
from __future__ import annotations


def crc32c(data) -> int:
    """CRC-32C of ``data`` (any buffer)."""
    global crc32c
    computed = crc32c = _compiled()
    return computed(data)


def _compiled():
    """The crc32c package's C function: from its compiled module ``crc32c._crc32c`` where the package is a
    directory holding it (not running the package's ``__init__``), else from the package as imported."""
    import importlib.machinery
    import importlib.util
    import os
    import sys

    if "crc32c" not in sys.modules:
        spec = importlib.util.find_spec("crc32c")
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(location, "_crc32c" + suffix)
                if os.path.isfile(path):
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                    loader.exec_module(module)
                    return module.crc32c
    from crc32c import crc32c as computed

    return computed
