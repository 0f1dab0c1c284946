"""The broker's security, sans-IO: SASL sessions and SCRAM credentials (the asyncio adapter only says which
listener a connection arrived on).

The names below are loaded on first use, so that importing one module of the package (the command line
reads :mod:`.scram`'s constants to build its options) does not load the others."""
from __future__ import annotations

from importlib import import_module

__all__ = ["MECHANISMS", "SaslFailure", "SaslSession", "ScramUsers"]
_HOMES = {"ScramUsers": "credentials", "MECHANISMS": "sasl", "SaslFailure": "sasl", "SaslSession": "sasl"}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(import_module(f".{home}", __name__), name)
    return value
