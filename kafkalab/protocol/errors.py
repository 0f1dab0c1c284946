"""Exceptions raised by the protocol core.

Decoding peer bytes raises :class:`DecodeError` (the plain path) or records a "malformed" node (the traced
path); encoding a value that is illegal for the chosen version raises :class:`EncodeError` naming the field.
"""
from __future__ import annotations


class ProtocolError(Exception):
    """Base class of every error the protocol core raises on purpose."""


class DecodeError(ProtocolError, ValueError):
    """Bytes that do not decode: names the field path and the frame offset where decoding stopped."""

    def __init__(self, message: str, *, path: str = "", offset: int = -1) -> None:
        self.reason = message
        self.path = path
        self.offset = offset
        where = []
        if path:
            where.append(f"at {path}")
        if offset >= 0:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class EncodeError(ProtocolError, ValueError):
    """A body that cannot be encoded in the requested version (unknown field, value out of range...)."""


class UnknownApiError(ProtocolError, KeyError):
    """An API key or name the schema does not know."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown API"


class UnsupportedVersionError(ProtocolError, ValueError):
    """An API version outside the range the schema defines for that API."""
