"""The codec: decode and encode any message spec at any version.

``decode(spec, version, buf, offset, trace=None)`` is the one entry point. Without a trace it runs the
compiled fast path for (spec, version); with a trace (a parent :class:`FieldNode`) it runs the reference
interpreter, which reports every field's span. If the fast path rejects the bytes, the interpreter runs
again to say precisely where and why, so both paths raise the same :class:`DecodeError`.
"""
from __future__ import annotations

import gc
from typing import Any

from ..schema.model import MessageSpec
from ..schema.registry import header_spec
from ..tree import FieldNode
from . import compiler
from .interpreter import decode_struct, encode_struct
from .compiler import _DECODERS
from .layout import Layout, build_layout, message_layout

__all__ = ["decode", "encode", "decode_reference", "encode_reference", "header_layout"]

GC_PAUSE_BYTES = 64 << 10   # bodies from this size on (without record sets, whose bytes are not objects)
                            # are decoded with the cyclic collector paused


def decode(spec: MessageSpec, version: int, buf, offset: int = 0, trace: FieldNode | None = None,
           records: str = "batches") -> tuple[dict, int]:
    """Decode ``spec`` at ``version`` from ``buf[offset:]``; returns (body, end offset)."""
    if trace is not None:
        return decode_struct(message_layout(spec, version), buf, offset, "", trace, records)
    hit = _DECODERS.get((id(spec), version))
    fast = hit[1] if hit is not None and hit[0] is spec else compiler.decoder(spec, version)
    try:
        if len(buf) < GC_PAUSE_BYTES or not fast.many_objects or not gc.isenabled():
            return fast(buf, offset, records)
        gc.disable()        # a big body is many small acyclic containers: collections would walk them for nothing
        try:
            return fast(buf, offset, records)
        finally:
            gc.enable()
    except Exception:
        # Re-run the reference path: it raises the precise DecodeError (or, if the fast path was wrong
        # to fail, returns the right answer; parity tests make sure that never happens).
        return decode_struct(message_layout(spec, version), buf, offset, "", None, records)


def decode_reference(spec: MessageSpec, version: int, buf, offset: int = 0,
                     records: str = "batches") -> tuple[dict, int]:
    """The interpreter without a trace: the oracle the compiled path is tested against."""
    return decode_struct(message_layout(spec, version), buf, offset, "", None, records)


def encode(spec: MessageSpec, version: int, body: dict[str, Any]) -> bytes:
    """Encode ``body`` as ``spec`` at ``version``; EncodeError names any field that cannot be expressed."""
    fast = compiler.encoder(spec, version)
    try:
        return fast(body)
    except Exception:
        return encode_reference(spec, version, body)


def encode_reference(spec: MessageSpec, version: int, body: dict[str, Any]) -> bytes:
    out = bytearray()
    encode_struct(message_layout(spec, version), body, out, "", version, spec.name)
    return bytes(out)


_HEADERS: dict[tuple[str, int], Layout] = {}


def header_layout(kind: str, header_version: int) -> Layout:
    key = (kind, header_version)
    if key not in _HEADERS:
        spec = header_spec(kind)
        _HEADERS[key] = build_layout(spec.fields, header_version, spec.is_flexible(header_version))
    return _HEADERS[key]
