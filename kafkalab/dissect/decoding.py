"""Decoding the frames cut from a capture: the codec's results, faster for the common case.

Owns: turning one cut frame (bytes with the size prefix) into a :class:`~kafkalab.protocol.Request` or
:class:`~kafkalab.protocol.Response`. The result is always what ``decode_request``/``decode_response`` give
(falling back to their annotated form, which never raises, when the plain one refuses the bytes).

Theory of operation: a capture repeats a handful of (API, version) pairs thousands of times, so for each pair
a *plan* is resolved once (API name, message spec, header version, the codec's compiled body decoder, whether
payload fields may need attaching). A frame whose header is the usual shape (no header tagged fields) is
then read with one ``struct`` call for the header and the compiled decoder for the body. Anything unusual
(unknown API or version, header tagged fields, leftover bytes, an exception anywhere, ApiVersions and its
KIP-511 fallback) goes through the codec's own entry points, so odd frames get the codec's exact results
and diagnostics.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from kafkalab.protocol import ProtocolError, Request, Response, decode_request, decode_response
from kafkalab.protocol.codec import compiler
from kafkalab.protocol.payloads import SITES, attach_payloads
from kafkalab.protocol.schema.headers import API_VERSIONS, request_header_version, response_header_version
from kafkalab.protocol.schema.registry import api_name, message_spec

_REQUEST_HEAD = struct.Struct(">ihhih")     # size, api key, api version, correlation id, client id length
_RESPONSE_HEAD = struct.Struct(">ii")       # size, correlation id
_PAYLOAD_OWNERS = frozenset(site.owner for site in SITES if isinstance(site.owner, tuple))


class _Plan(NamedTuple):
    name: str
    header_version: int
    decode: object
    payloads: bool


_PLANS: dict[tuple[int, str, int], _Plan | None] = {}


def _plan(api_key: int, kind: str, api_version: int) -> _Plan | None:
    key = (api_key, kind, api_version)
    try:
        return _PLANS[key]
    except KeyError:
        pass
    plan = None
    if len(_PLANS) < 4096:
        try:
            spec = message_spec(api_key, kind, api_version)
            header = (request_header_version if kind == "request" else response_header_version)(api_key,
                                                                                                 api_version)
            plan = _Plan(api_name(api_key), header, compiler.decoder(spec, api_version),
                         (api_key, kind) in _PAYLOAD_OWNERS)
        except (ProtocolError, KeyError, ValueError):
            plan = None
        _PLANS[key] = plan
    return plan


def request(raw: bytes) -> Request:
    """The request in ``raw`` (a whole frame), exactly as :func:`decode_request` reads it."""
    try:
        message = _fast_request(raw)
    except Exception:             # noqa: BLE001 - any surprise: the codec's own path decides
        message = None
    if message is not None:
        return message
    try:
        return decode_request(raw)
    except (ProtocolError, ValueError):
        return decode_request(raw, annotate=True)


def request_parts(raw: bytes) -> tuple | None:
    """(api_key, api_name, api_version, correlation_id, client_id, body, size, header_version, False) of the
    request in ``raw``: exactly the fields :func:`request` would give, without making the Request (record
    sets as batch headers where regular, see ``records.recordset.batch_heads``: what the frame columns read
    of them); None where the caller must use :func:`request` (the fast path refuses the bytes, payload
    fields are to be attached, ApiVersions)."""
    try:
        parts = _request_parts(raw, "heads")
    except Exception:             # noqa: BLE001 - any surprise: the codec's own path decides
        return None
    if parts is None or parts[8] or parts[0] == API_VERSIONS:
        return None
    return parts


def _fast_request(raw: bytes) -> Request | None:
    parts = _request_parts(raw)
    if parts is None:
        return None
    api_key, name, api_version, correlation_id, client_id, body, size, header_version, payloads = parts
    message = Request(api_key, name, api_version, correlation_id, body, size, header_version, [], None, client_id)
    if payloads:
        attach_payloads(message)
    return message


def request_head(raw: bytes, frame_length: int | None = None) -> tuple | None:
    """(api_key, api_version, correlation_id, client_id, where the body starts, plan) of the request in
    ``raw`` (a whole frame, or its first bytes when ``frame_length`` says how long the frame is) whose header
    is the usual shape (its size prefix right, a known API and version, no header tagged fields); None for
    anything else (the codec's own entry points decide those), or a header longer than the bytes given."""
    n = len(raw)
    if n < 14:
        return None
    size, api_key, api_version, correlation_id, length = _REQUEST_HEAD.unpack_from(raw, 0)
    if size != (n if frame_length is None else frame_length) - 4:
        return None
    plan = _PLANS.get((api_key, "request", api_version), False)
    if plan is False:
        plan = _plan(api_key, "request", api_version)
    if plan is None:
        return None
    header_version = plan.header_version
    if header_version == 0:
        client_id, pos = None, 12
    elif length < 0:
        if length != -1:
            return None
        client_id, pos = None, 14
    else:
        pos = 14 + length
        if pos > n:
            return None
        try:
            client_id = raw[14:pos].decode()
        except UnicodeDecodeError:
            return None
    if header_version >= 2:
        if pos >= n or raw[pos]:
            return None           # header tagged fields: rare, left to the codec
        pos += 1
    return api_key, api_version, correlation_id, client_id, pos, plan


def _request_parts(raw: bytes, records: str = "batches") -> tuple | None:
    head = request_head(raw)
    if head is None:
        return None
    api_key, api_version, correlation_id, client_id, pos, plan = head
    body, end = plan.decode(raw, pos, records)
    if end != len(raw):
        return None
    return (api_key, plan.name, api_version, correlation_id, client_id, body, len(raw) - 4, plan.header_version,
            plan.payloads)


def raw_records_body(raw, kind: str, api_key: int, api_version: int):
    """The body of the frame ``raw`` with its record sets left as views of the frame (``records="raw"``), as
    ``decode_request``/``decode_response`` give it; the codec's own entry points decide anything unusual
    (they may raise, as they do)."""
    body = None
    try:
        body = _raw_body(raw, kind, api_key, api_version)
    except Exception:             # noqa: BLE001 - any surprise: the codec's own path decides
        body = None
    if body is not None:
        return body
    if kind == "request":
        return decode_request(raw, records="raw").body
    return decode_response(raw, api_key, api_version, records="raw").body


def _raw_body(raw, kind: str, api_key: int, api_version: int):
    n = len(raw)
    if kind == "request":
        if n < 14:
            return None
        size, key, version, _, length = _REQUEST_HEAD.unpack_from(raw, 0)
        if (key, version) != (api_key, api_version):
            return None
        pos = 14 + max(length, 0) if length >= -1 else n + 1
    else:
        if n < 8:
            return None
        size, pos = _RESPONSE_HEAD.unpack_from(raw, 0)[0], 8
    if size != n - 4 or api_key == API_VERSIONS:
        return None
    plan = _PLANS.get((api_key, kind, api_version), False)
    if plan is False:
        plan = _plan(api_key, kind, api_version)
    if plan is None:
        return None
    header_version = plan.header_version
    if kind == "request" and header_version == 0:
        pos = 12
    if header_version >= (2 if kind == "request" else 1):
        if pos >= n or raw[pos]:
            return None           # header tagged fields: rare, left to the codec
        pos += 1
    body, end = plan.decode(raw, pos, "raw")
    return body if end == n else None


def response(raw: bytes, api_key: int, api_version: int) -> Response:
    """The response in ``raw`` to a request of ``api_key`` at ``api_version``, as :func:`decode_response`
    reads it."""
    try:
        message = _fast_response(raw, api_key, api_version)
    except Exception:             # noqa: BLE001
        message = None
    if message is not None:
        return message
    try:
        return decode_response(raw, api_key, api_version)
    except (ProtocolError, ValueError):
        return decode_response(raw, api_key, api_version, annotate=True)


def response_parts(raw: bytes, api_key: int, api_version: int) -> tuple | None:
    """(api_name, correlation_id, body, size, header_version, False) of the response in ``raw``: exactly the
    fields :func:`response` would give, without making the Response (record sets as in
    :func:`request_parts`); None where the caller must use :func:`response`."""
    try:
        parts = _response_parts(raw, api_key, api_version, "heads")
    except Exception:             # noqa: BLE001
        return None
    if parts is None or parts[5]:
        return None
    return parts


def _fast_response(raw: bytes, api_key: int, api_version: int) -> Response | None:
    parts = _response_parts(raw, api_key, api_version)
    if parts is None:
        return None
    name, correlation_id, body, size, header_version, payloads = parts
    message = Response(api_key, name, api_version, correlation_id, body, size, header_version, [])
    if payloads:
        attach_payloads(message)
    return message


def _response_parts(raw: bytes, api_key: int, api_version: int, records: str = "batches") -> tuple | None:
    n = len(raw)
    if n < 8 or api_key == API_VERSIONS:
        return None
    size, correlation_id = _RESPONSE_HEAD.unpack_from(raw, 0)
    if size != n - 4:
        return None
    plan = _PLANS.get((api_key, "response", api_version), False)
    if plan is False:
        plan = _plan(api_key, "response", api_version)
    if plan is None:
        return None
    pos = 8
    if plan.header_version >= 1:
        if pos >= n or raw[pos]:
            return None
        pos = 9
    body, end = plan.decode(raw, pos, records)
    if end != n:
        return None
    return plan.name, correlation_id, body, size, plan.header_version, plan.payloads
