"""KRaft metadata records (``__cluster_metadata``): the frame around each record value, and which record types
kafkalab describes.

Owns: the record-type table (:data:`METADATA_RECORD_TYPES`, Kafka's metadata ``apiKey`` -> payload schema in
``schema/payloads/``), and the frame Kafka's metadata serde puts in front of a record: an unsigned varint frame
version (1), an unsigned varint record type, an unsigned varint record version, then the record's fields
(flexible from v0). Must not know: what the records mean to a broker (``broker/security/metadata_log.py``), I/O.

Unlike ``__consumer_offsets`` payloads, these records carry no int16 version and no key (Kafka writes a null
key): the type and version are in the frame. The layouts themselves live with every other payload schema, so
one codec decodes, encodes and traces them.
"""
from __future__ import annotations

from .codec import decode, encode
from .errors import DecodeError, EncodeError
from .payloads import payload_spec
from .wire import WireError, read_uvarint, write_uvarint

__all__ = ["METADATA_RECORD_TYPES", "FRAME_VERSION", "decode_metadata_record", "encode_metadata_record"]

FRAME_VERSION = 1
METADATA_RECORD_TYPES: dict[int, str] = {
    11: "user_scram_credential_record",
    14: "client_quota_record",
    18: "access_control_entry_record",
    19: "remove_access_control_entry_record",
    22: "remove_user_scram_credential_record",
}
_TYPE_OF = {name: record_type for record_type, name in METADATA_RECORD_TYPES.items()}


def decode_metadata_record(value: bytes) -> dict:
    """``{"type": payload name, "record_type": n, "version": v, **fields}`` of one framed metadata record value;
    DecodeError for another frame version, a record type not described here, or bytes left over."""
    data = bytes(value)
    try:
        frame, pos = read_uvarint(data, 0)
        record_type, pos = read_uvarint(data, pos)
        version, pos = read_uvarint(data, pos)
    except WireError as exc:
        raise DecodeError(f"metadata record frame: {exc}", path="frame", offset=exc.offset) from None
    if frame != FRAME_VERSION:
        raise DecodeError(f"metadata record frame version {frame} (only {FRAME_VERSION} is known)", path="frame",
                          offset=0)
    name = METADATA_RECORD_TYPES.get(record_type)
    if name is None:
        raise DecodeError(f"metadata record type {record_type} is not described (known: "
                          f"{', '.join(map(str, sorted(METADATA_RECORD_TYPES)))})", path="record_type", offset=1)
    spec = payload_spec(name)
    if not spec.versions[0] <= version <= spec.versions[1]:
        raise DecodeError(f"{spec.name} version {version} is not supported", path="version", offset=pos - 1)
    body, end = decode(spec, version, data, pos)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing bytes after {spec.name} v{version}", path="", offset=end)
    return {"type": name, "record_type": record_type, "version": version, **body}


def encode_metadata_record(name: str, fields: dict, version: int = 0) -> bytes:
    """The framed value of metadata record ``name`` (a key of :data:`METADATA_RECORD_TYPES`' values) with
    ``fields``; keys ``type``/``record_type``/``version`` (as :func:`decode_metadata_record` adds) are ignored."""
    if name not in _TYPE_OF:
        raise EncodeError(f"unknown metadata record {name!r} (known: {', '.join(sorted(_TYPE_OF))})")
    spec = payload_spec(name)
    body = {k: v for k, v in fields.items() if k not in ("type", "record_type", "version")}
    out = bytearray()
    for number in (FRAME_VERSION, _TYPE_OF[name], version):
        write_uvarint(out, number)
    return bytes(out) + encode(spec, version, body)
