"""The compiled fast path: Python source generated once per (message, version), then exec'd.

Owns: the compiled decoder and encoder of each (spec, version), built on first use and cached. The
generated code is straight-line: runs of fixed-width fields become one
``struct.unpack_from``/``pack`` call, arrays of fixed-width scalars one call for the whole array, nested
structs are inlined into the loop that reads them, each struct becomes one dict literal.
Must not know: anything the layout does not say. It never reports errors itself: any exception (short
buffer, bad length, invalid UTF-8, a value that does not pack) makes the caller re-run the reference
interpreter, which produces the precise error. So generated code only has to be right on valid input and
*fail* (never loop, never over-allocate, never return garbage) on invalid input: every length is checked
against the bytes left before it is used.

Tagged-field sections that are not empty, and encode bodies carrying fields the version lacks, are handed to
the interpreter's helpers: they are rare, and correctness there matters more than speed. What the generated
code calls at run time lives in :mod:`.runtime`.

This module keeps the one cache of compiled functions per (spec, version); the source itself is written by
:mod:`.decoder_codegen` and :mod:`.encoder_codegen` over the shared pieces in :mod:`.codegen`.
"""
from __future__ import annotations

from typing import Callable

from ..schema.model import MessageSpec
from .decoder_codegen import build_decoder
from .encoder_codegen import build_encoder
from .layout import message_layout


_DECODERS: dict[tuple[int, int], tuple[MessageSpec, Callable]] = {}
_ENCODERS: dict[tuple[int, int], tuple[MessageSpec, Callable]] = {}


def decoder(spec: MessageSpec, version: int) -> Callable:
    """The compiled decoder for ``spec`` at ``version``: ``fn(buf, pos, records) -> (body, end)``."""
    key = (id(spec), version)
    hit = _DECODERS.get(key)
    if hit is None or hit[0] is not spec:
        hit = _DECODERS[key] = (spec, build_decoder(message_layout(spec, version))[0])
    return hit[1]


def encoder(spec: MessageSpec, version: int) -> Callable:
    """The compiled encoder for ``spec`` at ``version``: ``fn(body) -> bytes``."""
    key = (id(spec), version)
    hit = _ENCODERS.get(key)
    if hit is None or hit[0] is not spec:
        hit = _ENCODERS[key] = (spec, build_encoder(message_layout(spec, version), version, spec.name)[0])
    return hit[1]
