"""kafkalab: a lab for the Apache Kafka wire protocol.

The codec lives in :mod:`kafkalab.protocol` (sans-IO, every API key and version); the dissector's text and
table views in :mod:`kafkalab.dissect`; captures in :mod:`kafkalab.capture` (``read_capture``,
``iter_frames``); the in-process broker in :mod:`kafkalab.broker` (``Broker``); the command line in
:mod:`kafkalab.cli`.
"""
__version__ = "0.1.0"

_LAZY = {"Broker": "broker", "read_capture": "capture", "iter_frames": "capture"}


def __getattr__(name: str):
    """Entry points load on first use, so ``import kafkalab`` stays light (no pandas, no asyncio)."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kafkalab' has no attribute {name!r}")
