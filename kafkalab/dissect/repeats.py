"""Frames seen before: a small frame's description, remembered by the bytes it depends on.

Owns: what is remembered (``DESCRIPTION``), when one may be remembered, under which key (a
:class:`~.shapes.Shape`'s: the frame's body without the values no description reads, such as offsets), and
the bounds on how many descriptions and shapes are kept.

Why: chatty traffic repeats itself. Heartbeats and metadata polls are the same bytes but for the
correlation id; an idle consumer's fetches, its offset commits and a producer's acknowledgements are the same
but for offsets, again and again; and decoding and describing them is most of what a capture reader does per
frame. A description is reused only where it depends on nothing but those bytes: frames whose body is at
most ``MEMO_BYTES`` bytes, without diagnostics, of message versions without topic ids (whose description
depends on the topic names learnt so far). Frames carrying one record set (whose batches are new data every
time), of any size, are remembered by all but their batches and by how many records those hold (see
:class:`~.shapes.RecordsShape`): a producer's requests and a consumer's fetches are otherwise alike. The
header's own columns (correlation id, client id, size) are read from each frame. The bulk reader keeps one
:class:`Repeats` per capture; what it gives is exactly what decoding would give (see :mod:`.shapes` for why). (The
packet-by-packet reader makes a Frame object per frame anyway; there, remembering measured no faster on the
bench's chatty capture.)
"""
from __future__ import annotations

import struct

from .decoding import API_VERSIONS, request_head
from .facts import uses_topic_ids
from .shapes import UNFIT, Shape, learn, learn_records

MEMO_BYTES = 512            # the longest body remembered
MEMO_ENTRIES = 1 << 14      # descriptions kept per capture
SHAPES_PER_LENGTH = 4       # layouts kept per message version and body length
CARRYING_SHAPES = 8         # layouts kept (or refused) per message version carrying records
LEARNT = 256                # annotated decodes (to learn a shape) per capture

_RESPONSE_HEAD = struct.Struct(">ii")
_CORRELATION = struct.Struct(">i")

#: What is remembered of a frame, as a plain tuple in this order (made once per new frame, read on every
#: repeat): the columns that come from its body and whether a response is to be expected (False only for a
#: Produce request with acks=0). ``topics`` is given to be remembered as a tuple and kept as one list,
#: shared by every repeat, so the rows they describe share it in the row columns (never changed there: a
#: Frame made of a row gets its own copy, and the frames table shares it again without reading its items,
#: see :func:`kafkalab.dissect.columns.shared_lists`). Not the body: thousands of decoded bodies kept alive
#: would cost the garbage collector more than decoding them again. A repeat is given as this tuple
#: followed by the frame's own (correlation_id, client_id, size).
DESCRIPTION = ("api_key", "api_name", "api_version", "error_code", "error", "topics", "record_count", "summary",
               "answered")
_RECORD_COUNT = DESCRIPTION.index("record_count")
_TOPICS = DESCRIPTION.index("topics")


class Repeats:
    """The shapes and descriptions remembered while reading one capture."""

    __slots__ = ("requests", "responses", "carrying", "entries", "learnt", "client_ids", "_lists")

    def __init__(self) -> None:
        #: a request's first 8 bytes and its client id's length -> (where its client id ends or 0 for none,
        #: its length, shapes: all frames with those bytes have their region at one place)
        self.requests: dict[bytes, tuple] = {}
        self.responses: dict[tuple, list[Shape]] = {}    # (api_key, version, region length) -> shapes
        #: frames carrying records (see shapes.RecordsShape): as ``requests`` by their bytes 4-8 and 12-14
        #: (no size: it varies), responses by (api_key, version)
        self.carrying: dict = {}
        self.entries = 0
        self.learnt = 0
        self.client_ids: dict[bytes, str] = {}      # a client id's bytes -> the one string for all its frames
        self._lists: dict[tuple, list] = {}         # remembered topics -> the one list given for them

    def request(self, raw: bytes) -> tuple | None:
        """The description of the request ``raw`` (a whole frame) and its (correlation_id, client_id, size),
        if a request of its shape and the same values described was seen before; else None."""
        # requests with the same size prefix, API, version and client id length have their body at one place
        seen = None
        known = self.requests.get(raw[:8] + raw[12:14])
        if known is not None and len(raw) == known[1]:
            seen = _seen(known[2], raw)
        if seen is None:
            known = self.carrying.get(raw[4:8] + raw[12:14])     # of any size: frames carrying records
            if known is None:
                return None
            seen = _seen(known[2], raw)
            if seen is None:
                return None
        named = known[0]
        if named:
            name = raw[14:named]
            client_id = self.client_ids.get(name)
            if client_id is None:
                try:
                    client_id = name.decode()
                except UnicodeDecodeError:
                    return None
                if len(self.client_ids) < MEMO_ENTRIES:
                    self.client_ids[name] = client_id
        else:
            client_id = None
        return seen + (_CORRELATION.unpack_from(raw, 8)[0], client_id, len(raw) - 4)

    def response(self, raw: bytes, api_key: int, api_version: int) -> tuple | None:
        """The description of the response ``raw`` to a request of ``api_key`` at ``api_version``, and its
        (correlation_id, None, size), as :meth:`request` gives them."""
        if len(raw) < 8:
            return None
        size, correlation_id = _RESPONSE_HEAD.unpack_from(raw, 0)
        if size != len(raw) - 4:
            return None
        shapes = self.responses.get((api_key, api_version, size - 4))
        seen = _seen(shapes, raw) if shapes is not None else None
        if seen is None:
            shapes = self.carrying.get((api_key, api_version))
            seen = _seen(shapes, raw) if shapes is not None else None
            if seen is None:
                return None
        return seen + (correlation_id, None, size)

    def remember_request(self, raw: bytes, description: tuple, diagnostics: list) -> None:
        """Keep ``description`` (see ``DESCRIPTION``) of the request ``raw``, decoded as usual, if it may be
        reused (see the module docstring)."""
        carrying = description[_RECORD_COUNT] > 0
        if diagnostics or self.entries >= MEMO_ENTRIES or (not carrying and len(raw) > MEMO_BYTES + 64):
            return
        api_key, version = description[0], description[2]
        if api_key == API_VERSIONS or uses_topic_ids(api_key, "request", version):
            return
        head = request_head(raw)
        if head is None or (not carrying and len(raw) - head[4] > MEMO_BYTES):
            return
        api_key, version, _, client_id, start, plan = head
        named = start - (plan.header_version >= 2) if client_id is not None else 0
        # the header's tagged fields byte (always 0 here) stays in the region, so equal regions share it
        if plan.header_version >= 2:
            start -= 1
        if carrying:
            known, header = self.carrying, raw[4:8] + raw[12:14]
        else:
            known, header = self.requests, raw[:8] + raw[12:14]
        known = known.get(header) or known.setdefault(header, (named, len(raw), []))
        self._remember(known[2], raw, start, "request", api_key, version, description)

    def remember_response(self, raw: bytes, description: tuple, diagnostics: list) -> None:
        """:meth:`remember_request` for a response."""
        carrying = description[_RECORD_COUNT] > 0
        if diagnostics or self.entries >= MEMO_ENTRIES or len(raw) < 8 \
                or (not carrying and len(raw) > MEMO_BYTES + 8):
            return
        api_key, version = description[0], description[2]
        if api_key != API_VERSIONS and not uses_topic_ids(api_key, "response", version):
            where = (api_key, version) if carrying else (api_key, version, len(raw) - 8)
            shapes = (self.carrying if carrying else self.responses).setdefault(where, [])
            self._remember(shapes, raw, 8, "response", api_key, version, description)

    def _remember(self, shapes: list, raw: bytes, start: int, kind: str, api_key: int, version: int,
                  description: tuple) -> None:
        carrying = description[_RECORD_COUNT] > 0
        for shape in shapes:
            key = shape.fitted(raw)
            if key is not UNFIT:
                break
        else:
            if len(shapes) >= (CARRYING_SHAPES if carrying else SHAPES_PER_LENGTH) or self.learnt >= LEARNT:
                return
            self.learnt += 1
            if carrying:
                shape = learn_records(raw, start, kind, api_key, version, MEMO_BYTES)
                if shape is None:               # several record sets, say: learnt again at most a few times
                    shapes.append(_REFUSED)
                    return
            else:
                shape = learn(raw, start, kind, api_key, version)
            if shape is None:
                return
            shapes.append(shape)
            key = shape.key(raw)
        if key is None or key in shape.memo or (carrying and key[2] != description[_RECORD_COUNT]):
            return
        topics = tuple(description[_TOPICS])
        listed = self._lists.get(topics)
        if listed is None:
            listed = self._lists[topics] = list(topics)
        shape.memo[key] = description[:_TOPICS] + (listed,) + description[_TOPICS + 1:]
        self.entries += 1


class _Refused:
    """In a list of shapes, a frame whose shape could not be learnt: fits no frame, keys none."""

    memo: dict = {}

    @staticmethod
    def fitted(raw: bytes):
        return UNFIT

    @staticmethod
    def key(raw: bytes) -> None:
        return None


_REFUSED = _Refused()


def _seen(shapes: list, raw: bytes) -> tuple | None:
    """The description remembered for ``raw`` by one of ``shapes``, if any."""
    for shape in shapes:
        key = shape.key(raw)
        if key is not None:
            seen = shape.memo.get(key)
            if seen is not None:
                return seen
    return None
