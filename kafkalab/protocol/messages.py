"""Whole frames: size prefix, header and body, as Request and Response objects.

This is the public face of the codec (re-exported by ``kafkalab.protocol``): ``encode_request``,
``decode_request``, ``encode_response``, ``decode_response``. A frame always includes its 4-byte size prefix.
Plain decoding raises :class:`DecodeError` on bad bytes; annotated decoding (``annotate=True``) never raises
for bad bytes: it returns the object with a partial ``tree`` ending in a "malformed" node and the reason in
``diagnostics``. Bytes fields that carry consumer-protocol payloads (JoinGroup metadata, SyncGroup
assignments...) decode into dicts and encode back from them: see ``payloads``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .codec import decode, encode, header_layout
from .codec.interpreter import Malformed, decode_struct, encode_struct
from .errors import DecodeError, ProtocolError
from .payloads import attach_payloads, detach_payloads
from .schema.error_codes import ErrorCode
from .schema.headers import API_VERSIONS, request_header_version, response_header_version
from .schema.registry import api_name, api_spec, message_spec, resolve_api_key
from .tree import FieldNode
from .values import to_plain

UNSUPPORTED_VERSION = int(ErrorCode.UNSUPPORTED_VERSION)


@dataclass
class Message:
    """Fields common to requests and responses."""

    api_key: int
    api_name: str
    api_version: int
    correlation_id: int
    body: dict | None
    size: int = 0
    header_version: int = 0
    diagnostics: list[str] = field(default_factory=list)
    tree: FieldNode | None = field(default=None, repr=False)

    kind = "message"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (UUIDs as strings, bytes as hex, record batches as dicts), ready for JSON."""
        out = {"kind": self.kind, "api_key": self.api_key, "api_name": self.api_name,
               "api_version": self.api_version, "correlation_id": self.correlation_id}
        if isinstance(self, Request):
            out["client_id"] = self.client_id
        out["body"] = to_plain(self.body)
        if self.diagnostics:
            out["diagnostics"] = list(self.diagnostics)
        return out


@dataclass
class Request(Message):
    client_id: str | None = None
    kind = "request"


@dataclass
class Response(Message):
    kind = "response"


# ---------------------------------------------------------------- encoding

def encode_request(api: int | str, api_version: int, body: dict | None = None, *, correlation_id: int,
                   client_id: str | None = None) -> bytes:
    """A complete request frame (size prefix, header, body) for ``api`` at ``api_version``."""
    api_key = resolve_api_key(api)
    body = detach_payloads(api_key, "request", body)
    spec = message_spec(api_key, "request", api_version)
    header_version = request_header_version(api_key, api_version)
    header = {"request_api_key": api_key, "request_api_version": api_version,
              "correlation_id": correlation_id, "client_id": client_id}
    out = bytearray(4)
    encode_struct(header_layout("request", header_version), _drop_absent_header(header, header_version),
                  out, "header", header_version, "RequestHeader")
    out += encode(spec, api_version, body or {})
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def _drop_absent_header(header: dict, header_version: int) -> dict:
    return header if header_version > 0 else {k: v for k, v in header.items() if k != "client_id"}


def encode_response(api: int | str, api_version: int, body: dict | None = None, *, correlation_id: int) -> bytes:
    """A complete response frame for ``api`` at ``api_version``."""
    api_key = resolve_api_key(api)
    body = detach_payloads(api_key, "response", body)
    spec = message_spec(api_key, "response", api_version)
    header_version = response_header_version(api_key, api_version)
    out = bytearray(4)
    encode_struct(header_layout("response", header_version), {"correlation_id": correlation_id}, out, "header",
                  header_version, "ResponseHeader")
    out += encode(spec, api_version, body or {})
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


# ---------------------------------------------------------------- decoding

def _frame_bounds(buf: bytes, trace: FieldNode | None, diagnostics: list[str]) -> int:
    """Check the size prefix; returns the end of the frame's bytes to decode."""
    if len(buf) < 4:
        raise DecodeError(f"a frame needs a 4-byte size prefix, got {len(buf)} bytes", path="size", offset=0)
    size = struct.unpack_from(">i", buf, 0)[0]
    if trace is not None:
        trace.add(FieldNode("size", "size", "int32", 0, 4, size))
    if size < 0:
        raise DecodeError(f"negative frame size {size}", path="size", offset=0)
    if size > len(buf) - 4:
        message = f"frame truncated: size field says {size} bytes, {len(buf) - 4} present"
        if trace is None:
            raise DecodeError(message, path="size", offset=len(buf))
        diagnostics.append(message)
    elif size < len(buf) - 4:
        diagnostics.append(f"{len(buf) - 4 - size} bytes after the frame's declared size")
    return len(buf)


def _finish(trace: FieldNode | None, buf: bytes, pos: int, diagnostics: list[str]) -> None:
    """Bytes left over after the body: a flagged node in the tree, a diagnostic either way."""
    if pos >= len(buf):
        return
    message = f"trailing bytes: {len(buf) - pos} after the body"
    diagnostics.append(message)
    if trace is not None:
        trace.add(FieldNode("_trailing", "trailing bytes", "bytes", pos, len(buf), bytes(buf[pos:]),
                            diagnostics=[message]))


def decode_request(frame: bytes, *, annotate: bool = False, records: str = "batches") -> Request:
    """Decode a request frame. ``records="raw"`` keeps RECORDS fields as bytes (as a broker stores them)."""
    buf = bytes(frame)
    diagnostics: list[str] = []
    root = FieldNode("", "request", "frame", 0, len(buf)) if annotate else None
    request = Request(api_key=-1, api_name="", api_version=-1, correlation_id=-1, body=None,
                      diagnostics=diagnostics, tree=root)
    try:
        _frame_bounds(buf, root, diagnostics)
        request.size = struct.unpack_from(">i", buf, 0)[0]
        if len(buf) < 8:
            raise DecodeError("frame too short for a request header", path="header", offset=4)
        api_key, api_version = struct.unpack_from(">hh", buf, 4)
        request.api_key, request.api_version = api_key, api_version
        request.api_name = api_name(api_key)
        try:
            spec = message_spec(api_key, "request", api_version)
            header_version = request_header_version(api_key, api_version)
        except ProtocolError as exc:
            _decode_header(request, buf, root, "request", _future_header_version(api_key))
            raise UndecodableBody(str(exc), path="header.request_api_version", offset=6) from None
        pos = _decode_header(request, buf, root, "request", header_version)
        if root is not None:
            root.name = f"{spec.name} v{api_version}"
        with _frame_budget(root):
            request.body, pos = decode(spec, api_version, buf, pos, root, records)
        _finish(root, buf, pos, diagnostics)
        attach_payloads(request)
    except Malformed as exc:
        diagnostics.append(f"malformed: {exc.error}")
    except DecodeError as exc:
        if root is None:
            raise
        _mark_undecodable(root, buf, exc, diagnostics)
    return request


def _frame_budget(root: FieldNode | None):
    """One budget of records, inflated bytes and tree nodes for all record sets of this frame (a small frame
    must not cost gigabytes however many partitions it names); imported late, the record layer imports the
    codec."""
    from .records.limits import frame_budget
    return frame_budget(walks=1 if root is None else 2)


def _decode_header(message: Message, buf: bytes, root: FieldNode | None, kind: str, header_version: int) -> int:
    node = root.add(FieldNode("header", "header", "header", 4)) if root is not None else None
    header, pos = decode_struct(header_layout(kind, header_version), buf, 4, "header", node)
    if node is not None:
        node.end = pos
    message.header_version = header_version
    message.correlation_id = header["correlation_id"]
    if isinstance(message, Request):
        message.client_id = header.get("client_id")
    return pos


class UndecodableBody(DecodeError):
    """The header is fine but the schema has no layout for the body: an API key or version it does not know
    (a newer peer, not necessarily a broken one)."""


def _future_header_version(api_key: int) -> int:
    """The request header a version newer than the schema uses: versions only become flexible, so a
    version past a flexible newest one is flexible too (header v2); unknown APIs are read with header v1.
    Response headers are one version lower (v1 flexible, v0 classic)."""
    try:
        spec = message_spec(api_key, "request", api_spec(api_key).request.versions[1])
    except ProtocolError:
        return 1
    return 2 if spec.flexible is not None else 1


def _mark_undecodable(root: FieldNode, buf: bytes, exc: DecodeError, diagnostics: list[str]) -> None:
    """The body cannot be decoded at all: one node covers the rest, "malformed" for broken bytes, "unsupported"
    for an API or version the schema does not know."""
    covered = max((leaf.end for leaf in root.leaves()), default=0)
    label = "unsupported" if isinstance(exc, UndecodableBody) else "malformed"
    root.add(FieldNode("_undecoded", "undecoded", label, covered, len(buf), bytes(buf[covered:]),
                       diagnostics=[f"{label}: {exc}"]))
    diagnostics.append(f"{label}: {exc}")


def decode_response(frame: bytes, api_key: int | str, api_version: int, *, annotate: bool = False,
                    records: str = "batches") -> Response:
    """Decode a response frame; the API and version come from the request it answers."""
    buf = bytes(frame)
    diagnostics: list[str] = []
    if not isinstance(api_key, int) or isinstance(api_key, bool):
        api_key = resolve_api_key(api_key)     # a name must be known; a key may be one the schema lacks
    root = FieldNode("", "response", "frame", 0, len(buf)) if annotate else None
    response = Response(api_key=api_key, api_name=api_name(api_key), api_version=api_version,
                        correlation_id=-1, body=None, diagnostics=diagnostics, tree=root)
    try:
        _frame_bounds(buf, root, diagnostics)
        response.size = struct.unpack_from(">i", buf, 0)[0]
        try:
            header_version = response_header_version(api_key, api_version)
        except ProtocolError as exc:            # an API or version the schema does not know: header, then stop
            _decode_header(response, buf, root, "response", _future_header_version(api_key) - 1)
            raise UndecodableBody(str(exc), path="", offset=8) from None
        pos = _decode_header(response, buf, root, "response", header_version)
        if api_key == API_VERSIONS:
            api_version = _api_versions_answer_version(buf, pos, api_version, diagnostics)
            response.api_version = api_version
        try:
            spec = message_spec(api_key, "response", api_version)
        except ProtocolError as exc:
            raise UndecodableBody(str(exc), path="", offset=pos) from None
        if root is not None:
            root.name = f"{spec.name} v{api_version}"
        with _frame_budget(root):
            response.body, pos = decode(spec, api_version, buf, pos, root, records)
        _finish(root, buf, pos, diagnostics)
        attach_payloads(response)
    except Malformed as exc:
        diagnostics.append(f"malformed: {exc.error}")
    except ProtocolError as exc:
        if root is None:
            raise exc if isinstance(exc, DecodeError) else DecodeError(str(exc), path="", offset=4)
        _mark_undecodable(root, buf, exc if isinstance(exc, DecodeError) else DecodeError(str(exc)), diagnostics)
    return response


def _api_versions_answer_version(buf: bytes, pos: int, asked: int, diagnostics: list[str]) -> int:
    """KIP-511: a broker that does not support the ApiVersions version a client asked for answers with a
    v0-encoded body carrying UNSUPPORTED_VERSION (35) and its own ranges, so the client can retry. Like
    Kafka's clients, read the asked version first and fall back to v0 only when that does not fit the bytes
    exactly and v0 does."""
    if asked == 0 or len(buf) < pos + 2 or struct.unpack_from(">h", buf, pos)[0] != UNSUPPORTED_VERSION:
        return asked
    if _fits_exactly(asked, buf, pos) or not _fits_exactly(0, buf, pos):
        return asked
    diagnostics.append(f"ApiVersions v{asked} answered in v0 with UNSUPPORTED_VERSION (KIP-511)")
    return 0


def _fits_exactly(api_version: int, buf: bytes, pos: int) -> bool:
    try:
        _, end = decode(message_spec(API_VERSIONS, "response", api_version), api_version, buf, pos)
    except ProtocolError:
        return False
    return end == len(buf)
