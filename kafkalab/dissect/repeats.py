"""Frames seen before: a small frame's description, remembered by its bytes but for the correlation id.

Owns: the keys (a request's bytes without its correlation id; a response's API, version and the bytes after
its correlation id), what is remembered (``DESCRIPTION``), when one may be remembered, and the bound on how
many are.

Why: chatty traffic repeats itself. Heartbeats, metadata polls and an idle consumer's fetches are the same
bytes, but for the correlation id, again and again, and decoding and describing them is most of what a
capture reader does per frame. A description is reused only where it depends on nothing but those bytes:
frames of at most ``MEMO_BYTES`` bytes, without diagnostics, of message versions without topic ids (whose
description depends on the topic names learnt so far). The bulk reader keeps one :class:`Repeats` per
capture; what it gives is exactly what decoding would give. (The packet-by-packet reader makes a Frame
object per frame anyway; there, remembering measured no faster on the bench's chatty capture.)
"""
from __future__ import annotations

from .facts import uses_topic_ids

MEMO_BYTES = 512
MEMO_ENTRIES = 1 << 14


#: What is remembered of a frame, as a plain tuple in this order (made once per new frame, read on every
#: repeat): the columns that come from its bytes (all but the correlation id; ``topics`` as a tuple, so each
#: frame gets its own list) and whether a response is to be expected (False only for a Produce request with
#: acks=0). Not the body: thousands of decoded bodies kept alive would cost the garbage collector more than
#: decoding them again.
DESCRIPTION = ("api_key", "api_name", "api_version", "client_id", "size", "error_code", "error", "topics",
               "record_count", "summary", "answered")


def request_key(raw: bytes) -> bytes:
    """The request without its correlation id (bytes 8-11); empty for a frame too large to remember."""
    return raw[:8] + raw[12:] if len(raw) <= MEMO_BYTES else b""


def response_key(raw: bytes, api_key: int, api_version: int) -> tuple | None:
    """The response's API and version (from its request) and its bytes after the correlation id."""
    return (api_key, api_version, raw[8:]) if 8 <= len(raw) <= MEMO_BYTES else None


class Repeats:
    """The descriptions remembered while reading one capture."""

    __slots__ = ("requests", "responses")

    def __init__(self) -> None:
        self.requests: dict[bytes, tuple] = {}
        self.responses: dict[tuple, tuple] = {}

    @staticmethod
    def remember(memo: dict, key, kind: str, description: tuple, diagnostics: list) -> None:
        """Keep ``description`` (see ``DESCRIPTION``) under ``key`` if it may be reused (see the module
        docstring)."""
        if key and not diagnostics and len(memo) < MEMO_ENTRIES \
                and not uses_topic_ids(description[0], kind, description[2]):
            memo[key] = description
