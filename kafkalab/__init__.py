"""kafkalab: a lab for the Apache Kafka wire protocol.

The codec lives in :mod:`kafkalab.protocol` (sans-IO, every API key and version); the dissector's text and
table views in :mod:`kafkalab.dissect`; captures in :mod:`kafkalab.capture` (``read_capture``,
``iter_frames``); the in-process broker in :mod:`kafkalab.broker` (``Broker``); notebook display and the
explorer and message browser widgets in :mod:`kafkalab.notebook` (``explore``, ``browse``); the command line
in :mod:`kafkalab.cli`.
"""
import sys as _sys

__version__ = "0.1.0"

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
