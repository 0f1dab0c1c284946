"""Frames seen before: a small frame's description, remembered by the bytes it depends on.

Owns: what is remembered (``DESCRIPTION``), when one may be remembered, under which key (a
:class:`~.shapes.Shape`'s: the frame's body without the values no description reads, such as offsets), and
the bounds on how many descriptions and shapes are kept.

Why: chatty traffic repeats itself. Heartbeats and metadata polls are the same bytes but for the
correlation id; an idle consumer's fetches, its offset commits and a producer's acknowledgements are the same
but for offsets, again and again; and decoding and describing them is most of what a capture reader does per
frame. A description is reused only where it depends on nothing but those bytes: frames whose body is at
most ``MEMO_BYTES`` bytes, without diagnostics, of message versions without topic ids (whose description
depends on the topic names learnt so far). Frames carrying records are not remembered: their batches are
new data every time, so such a frame would only take a place in the memo. The header's own columns
(correlation id, client id, size) are read from each frame. The bulk reader keeps one :class:`Repeats` per
capture; what it gives is exactly what decoding would give (see :mod:`.shapes` for why). (The
packet-by-packet reader makes a Frame object per frame anyway; there, remembering measured no faster on the
bench's chatty capture.)
"""
from __future__ import annotations

import struct

from .decoding import API_VERSIONS, request_head
from .facts import uses_topic_ids
from .shapes import Shape, learn

MEMO_BYTES = 512            # the longest body remembered
MEMO_ENTRIES = 1 << 14      # descriptions kept per capture
SHAPES_PER_LENGTH = 4       # layouts kept per message version and body length
LEARNT = 256                # annotated decodes (to learn a shape) per capture

_RESPONSE_HEAD = struct.Struct(">ii")
_CORRELATION = struct.Struct(">i")

#: What is remembered of a frame, as a plain tuple in this order (made once per new frame, read on every
#: repeat): the columns that come from its body (``topics`` as a tuple, so each frame gets its own list)
#: and whether a response is to be expected (False only for a Produce request with acks=0). Not the body:
#: thousands of decoded bodies kept alive would cost the garbage collector more than decoding them again.
#: A repeat is given as this tuple followed by the frame's own (correlation_id, client_id, size).
DESCRIPTION = ("api_key", "api_name", "api_version", "error_code", "error", "topics", "record_count", "summary",
               "answered")
_RECORD_COUNT = DESCRIPTION.index("record_count")


class Repeats:
    """The shapes and descriptions remembered while reading one capture."""

    __slots__ = ("requests", "responses", "entries", "learnt")

    def __init__(self) -> None:
        #: a request's first 8 bytes and its client id's length -> (where its client id ends or 0 for none,
        #: its length, shapes: all frames with those bytes have their region at one place)
        self.requests: dict[bytes, tuple] = {}
        self.responses: dict[tuple, list[Shape]] = {}    # (api_key, version, region length) -> shapes
        self.entries = 0
        self.learnt = 0

    def request(self, raw: bytes) -> tuple | None:
        """The description of the request ``raw`` (a whole frame) and its (correlation_id, client_id, size),
        if a request of its shape and the same values described was seen before; else None."""
        # requests with the same size prefix, API, version and client id length have their body at one place
        known = self.requests.get(raw[:8] + raw[12:14])
        if known is None:
            return None
        named, length, shapes = known
        if len(raw) != length:
            return None
        for shape in shapes:
            key = shape.key(raw)
            if key is not None:
                seen = shape.memo.get(key)
                if seen is not None:
                    if named:
                        try:
                            client_id = raw[14:named].decode()
                        except UnicodeDecodeError:
                            return None
                    else:
                        client_id = None
                    return seen + (_CORRELATION.unpack_from(raw, 8)[0], client_id, len(raw) - 4)
        return None

    def response(self, raw: bytes, api_key: int, api_version: int) -> tuple | None:
        """The description of the response ``raw`` to a request of ``api_key`` at ``api_version``, and its
        (correlation_id, None, size), as :meth:`request` gives them."""
        shapes = self.responses.get((api_key, api_version, len(raw) - 8))
        if shapes is not None:
            size, correlation_id = _RESPONSE_HEAD.unpack_from(raw, 0)
            if size == len(raw) - 4:
                for shape in shapes:
                    key = shape.key(raw)
                    if key is not None:
                        seen = shape.memo.get(key)
                        if seen is not None:
                            return seen + (correlation_id, None, size)
        return None

    def remember_request(self, raw: bytes, description: tuple, diagnostics: list) -> None:
        """Keep ``description`` (see ``DESCRIPTION``) of the request ``raw``, decoded as usual, if it may be
        reused (see the module docstring)."""
        if diagnostics or description[_RECORD_COUNT] or self.entries >= MEMO_ENTRIES \
                or len(raw) > MEMO_BYTES + 64:
            return
        api_key, version = description[0], description[2]
        if api_key == API_VERSIONS or uses_topic_ids(api_key, "request", version):
            return
        head = request_head(raw)
        if head is None or len(raw) - head[4] > MEMO_BYTES:
            return
        api_key, version, _, client_id, start, plan = head
        named = start - (plan.header_version >= 2) if client_id is not None else 0
        # the header's tagged fields byte (always 0 here) stays in the region, so equal regions share it
        if plan.header_version >= 2:
            start -= 1
        header = raw[:8] + raw[12:14]
        known = self.requests.get(header)
        if known is None:
            known = self.requests[header] = (named, len(raw), [])
        self._remember(known[2], raw, start, "request", api_key, version, description)

    def remember_response(self, raw: bytes, description: tuple, diagnostics: list) -> None:
        """:meth:`remember_request` for a response."""
        if diagnostics or description[_RECORD_COUNT] or self.entries >= MEMO_ENTRIES \
                or not 8 <= len(raw) <= MEMO_BYTES + 8:
            return
        api_key, version = description[0], description[2]
        if api_key != API_VERSIONS and not uses_topic_ids(api_key, "response", version):
            shapes = self.responses.get((api_key, version, len(raw) - 8))
            if shapes is None:
                shapes = self.responses[(api_key, version, len(raw) - 8)] = []
            self._remember(shapes, raw, 8, "response", api_key, version, description)

    def _remember(self, shapes: list, raw: bytes, start: int, kind: str, api_key: int, version: int,
                  description: tuple) -> None:
        for shape in shapes:
            if shape.fits(raw):
                break
        else:
            if len(shapes) >= SHAPES_PER_LENGTH or self.learnt >= LEARNT:
                return
            self.learnt += 1
            shape = learn(raw, start, kind, api_key, version)
            if shape is None:
                return
            shapes.append(shape)
        key = shape.key(raw)
        if key is not None and key not in shape.memo:
            shape.memo[key] = description
            self.entries += 1
