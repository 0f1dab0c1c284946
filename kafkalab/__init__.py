"""kafkalab: a lab for the Apache Kafka wire protocol.

The codec lives in :mod:`kafkalab.protocol` (sans-IO, every API key and version); the dissector's text and
table views in :mod:`kafkalab.dissect`; captures in :mod:`kafkalab.capture` (``read_capture``,
``iter_frames``); the in-process broker in :mod:`kafkalab.broker` (``Broker``); notebook display and the
explorer and message browser widgets in :mod:`kafkalab.notebook` (``explore``, ``browse``); the command line
in :mod:`kafkalab.cli`.
"""
import os as _os
import sys as _sys

__version__ = "0.1.0"

#: How long, as a power of two of CPU cycles, an idle OpenBLAS worker thread spins before it sleeps
#: when kafkalab loads numpy: 2**20 cycles, well under a millisecond (OpenBLAS's own default is 28, about a
#: tenth of a second).
BLAS_THREAD_TIMEOUT = "20"


def _idle_blas_threads_sleep() -> None:
    """Let numpy's OpenBLAS worker threads sleep soon after they go idle, when kafkalab is what loads numpy.

    Why: OpenBLAS starts its worker threads when numpy is imported and each spins for about a tenth of a
    second of CPU before it sleeps, though kafkalab never multiplies a matrix: on a two-core machine that
    was 5% of the CPU time of reading a 50 MB capture into a frames table, start-up included. OpenBLAS reads
    ``OPENBLAS_THREAD_TIMEOUT`` once, when it is loaded, so it is set here, before any kafkalab module
    imports numpy, and only if numpy is not loaded yet and the variable is not set already (set it
    yourself, or import numpy first, to keep OpenBLAS's default). BLAS still uses every core, and a worker
    still spins through the short gaps between back-to-back matrix products (a fraction of a millisecond),
    so those wait no longer. Processes started from this one inherit the variable."""
    if "numpy" not in _sys.modules:
        _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_THREAD_TIMEOUT)


_idle_blas_threads_sleep()

_LAZY = {"Broker": "broker", "read_capture": "capture", "iter_frames": "capture", "sniff": "capture",
         "write_frames": "capture", "explore": "notebook", "browse": "notebook"}


def __getattr__(name: str):
    """Entry points load on first use, so ``import kafkalab`` stays light (no pandas, no asyncio)."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kafkalab' has no attribute {name!r}")


def _register_rich_display() -> None:
    """Inside IPython/Jupyter, show frames, trees, batches, captures and the broker as HTML."""
    ipython = _sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and hasattr(shell, "display_formatter"):
        from .notebook.display import register
        register(shell)


_register_rich_display()
