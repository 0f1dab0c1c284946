"""Nested payloads: structures Kafka carries inside ``bytes`` fields and inside internal-topic records.

Owns: the payload schemas (``schema/payloads/*.json``, see the README there), decoding/encoding/tracing one
payload (an int16 version, then the fields of that version), the table of *where* payloads sit in API
messages (and inside other payloads), swapping those bytes for decoded dicts after a message decode
(:func:`attach_payloads`) and back before an encode (:func:`detach_payloads`), and reading the key/value pairs
of ``__consumer_offsets`` and ``__transaction_state``.
Must not know: framing and headers (``messages``), how a layout is walked (the codec does that), I/O.

Theory of operation. A payload is only substituted when that is lossless: its bytes decode completely and
the decoded dict encodes back to the very same bytes. Anything else (corrupt bytes, a non-consumer protocol,
a future version with extra fields, an empty byte string) stays ``bytes``, so decoding a frame and encoding
its body again is always byte-exact. Where the protocol type is on the wire (JoinGroup request, JoinGroup
response v7+, SyncGroup v5+, DescribeGroups, GroupMetadataValue) only ``"consumer"`` groups are decoded;
where it is not, the lossless round trip is the whole test.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from . import schema as _schema_package
from .codec import decode, encode
from .codec.interpreter import Malformed, decode_struct
from .codec.layout import message_layout
from .errors import DecodeError, EncodeError, ProtocolError
from .schema.api_keys import ApiKey
from .schema.model import MessageSpec, message_from_data
from .tree import FieldNode

if TYPE_CHECKING:
    from .messages import Message

__all__ = [
    "SUBSCRIPTION", "ASSIGNMENT", "CONSUMER", "PayloadSite", "SITES", "payload_names", "payload_spec",
    "decode_payload", "encode_payload", "trace_payload", "attach_payloads", "detach_payloads",
    "decode_offsets_record", "decode_transaction_record",
]

SUBSCRIPTION = "consumer_protocol_subscription"
ASSIGNMENT = "consumer_protocol_assignment"
CONSUMER = "consumer"                      # the protocol type whose metadata/assignments use these layouts
VERSION_KEY = "version"                    # where a decoded payload keeps its int16 version

# Payloads Kafka reads leniently: a version newer than the newest known is read with the newest layout and
# whatever follows is ignored (ConsumerProtocol.deserialize*; see the README). Every other payload rejects
# versions outside its range, as the coordinators do.
NEWER_VERSIONS_READ_AS_NEWEST = frozenset({SUBSCRIPTION, ASSIGNMENT})

JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS


# ---------------------------------------------------------------- where payloads sit

@dataclass(frozen=True, slots=True)
class PayloadSite:
    """One bytes field that carries a payload.

    ``owner`` is ``(api_key, "request"|"response")`` for API messages or the payload name for payloads
    nested in payloads. ``path`` names the field with ``[]`` after arrays (``"groups[].members[].member_metadata"``).
    ``type_field`` is the protocol-type field that says whether the group is a consumer group, as a path of
    the same shape ending at that field (``"groups[].protocol_type"``); ``type_since`` is the first version
    of the owner carrying it. Before that version (or without a type field) only the lossless round trip
    decides.
    """

    owner: tuple[int, str] | str
    path: str
    payload: str
    type_field: str | None = None
    type_since: int = 0

    @property
    def steps(self) -> tuple[str, ...]:
        return tuple(self.path.split("."))

    @property
    def type_depth(self) -> int:
        """How many steps below the top the dict holding ``type_field`` sits."""
        return self.type_field.count(".") if self.type_field else -1

    @property
    def type_name(self) -> str | None:
        return self.type_field.rsplit(".", 1)[-1] if self.type_field else None


SITES: tuple[PayloadSite, ...] = (
    PayloadSite((JOIN_GROUP, "request"), "protocols[].metadata", SUBSCRIPTION, "protocol_type"),
    PayloadSite((JOIN_GROUP, "response"), "members[].metadata", SUBSCRIPTION, "protocol_type", 7),
    PayloadSite((SYNC_GROUP, "request"), "assignments[].assignment", ASSIGNMENT, "protocol_type", 5),
    PayloadSite((SYNC_GROUP, "response"), "assignment", ASSIGNMENT, "protocol_type", 5),
    PayloadSite((DESCRIBE_GROUPS, "response"), "groups[].members[].member_metadata", SUBSCRIPTION,
                "groups[].protocol_type"),
    PayloadSite((DESCRIBE_GROUPS, "response"), "groups[].members[].member_assignment", ASSIGNMENT,
                "groups[].protocol_type"),
    PayloadSite("group_metadata_value", "members[].subscription", SUBSCRIPTION, "protocol_type"),
    PayloadSite("group_metadata_value", "members[].assignment", ASSIGNMENT, "protocol_type"),
)


def _sites_by_owner() -> dict[Any, tuple[PayloadSite, ...]]:
    out: dict[Any, list[PayloadSite]] = {}
    for site in SITES:
        out.setdefault(site.owner, []).append(site)
    return {owner: tuple(sites) for owner, sites in out.items()}


_BY_OWNER = _sites_by_owner()

# __consumer_offsets: the key's int16 version picks (record kind, key schema, value schema).
OFFSETS_RECORD_KINDS: dict[int, tuple[str, str, str]] = {
    0: ("offset_commit", "offset_commit_key", "offset_commit_value"),
    1: ("offset_commit", "offset_commit_key", "offset_commit_value"),
    2: ("group_metadata", "group_metadata_key", "group_metadata_value"),
    # KIP-848 consumer-protocol groups: one record per concern, so a heartbeat rewrites only what it changed
    **{version: (kind, f"{kind}_key", f"{kind}_value") for version, kind in enumerate((
        "consumer_group_metadata", "consumer_group_partition_metadata", "consumer_group_member_metadata",
        "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
        "consumer_group_current_member_assignment"), start=3)},
}
TRANSACTION_RECORD_KINDS: dict[int, tuple[str, str, str]] = {
    0: ("transaction_log", "transaction_log_key", "transaction_log_value"),
}


# ---------------------------------------------------------------- loading

_PAYLOAD_DIR = resources.files(_schema_package).joinpath("payloads")


@lru_cache(maxsize=1)
def payload_names() -> tuple[str, ...]:
    """Every payload schema shipped with kafkalab (file names without ``.json``)."""
    return tuple(sorted(entry.name[:-5] for entry in _PAYLOAD_DIR.iterdir() if entry.name.endswith(".json")))


@lru_cache(maxsize=None)
def payload_spec(name: str) -> MessageSpec:
    """The :class:`MessageSpec` (kind ``"payload"``) of payload ``name``, parsed once."""
    if name not in payload_names():
        raise ProtocolError(f"unknown payload {name!r} (known: {', '.join(payload_names())})")
    data = json.loads(_PAYLOAD_DIR.joinpath(name + ".json").read_text(encoding="utf-8"))
    spec = message_from_data(data, data["name"], "payload")
    if any(f.name == VERSION_KEY for f in spec.fields):
        raise ProtocolError(f"payload {name}: a field may not be called {VERSION_KEY!r}")
    return spec


def _layout_version(name: str, spec: MessageSpec, version: int) -> int | None:
    """The schema version whose layout reads/writes a payload declaring ``version``; None if there is none."""
    low, high = spec.versions
    if low <= version <= high:
        return version
    if version > high and name in NEWER_VERSIONS_READ_AS_NEWEST:
        return high
    return None


def _unsupported(spec: MessageSpec, version: int) -> str:
    return f"{spec.name} version {version} is not supported (known: {spec.versions[0]}-{spec.versions[1]})"


# ---------------------------------------------------------------- one payload

def _read_version(name: str, data) -> tuple[MessageSpec, int, int]:
    spec = payload_spec(name)
    if len(data) < 2:
        raise DecodeError(f"{spec.name} needs a 2-byte version, got {len(data)} bytes", path=VERSION_KEY, offset=0)
    version = struct.unpack_from(">h", data, 0)[0]
    layout_version = _layout_version(name, spec, version)
    if layout_version is None:
        raise DecodeError(_unsupported(spec, version), path=VERSION_KEY, offset=0)
    return spec, version, layout_version


def decode_payload(name: str, data: bytes) -> dict:
    """``{"version": v, **fields}`` from a payload's bytes; raises DecodeError for anything but one whole
    payload (a version newer than known is read with the newest layout where Kafka does so, ignoring what
    follows). Consumer-protocol payloads nested in it (GroupMetadataValue members) are decoded too."""
    data = bytes(data)
    spec, version, layout_version = _read_version(name, data)
    body, end = decode(spec, layout_version, data, 2)
    if end != len(data) and layout_version == version:
        raise DecodeError(f"{len(data) - end} trailing bytes after {spec.name} v{version}", path="", offset=end)
    _attach_sites(_BY_OWNER.get(name, ()), body, version, "", [])
    return {VERSION_KEY: version, **body}


def encode_payload(name: str, value: dict) -> bytes:
    """The bytes of a payload dict as :func:`decode_payload` returns it (``"version"`` is required)."""
    spec = payload_spec(name)
    if not isinstance(value, dict) or not isinstance(value.get(VERSION_KEY), int):
        raise EncodeError(f"{spec.name}: expected a dict with an int {VERSION_KEY!r}, got {value!r:.80}")
    body = {k: v for k, v in value.items() if k != VERSION_KEY}
    version = value[VERSION_KEY]
    layout_version = _layout_version(name, spec, version)
    if layout_version is None:
        raise EncodeError(_unsupported(spec, version))
    body = _detach_sites(_BY_OWNER.get(name, ()), body)
    try:
        prefix = struct.pack(">h", version)
    except struct.error as exc:
        raise EncodeError(f"{spec.name}: version {version}: {exc}") from None
    return prefix + encode(spec, layout_version, body)


def trace_payload(name: str, data: bytes, parent: FieldNode, base: int, path: str) -> None:
    """Add nodes under ``parent`` describing the payload in ``data``, which sits at offset ``base`` of the
    parent's buffer: a ``version`` int16 leaf, then the fields (paths under ``path``), then, for a newer
    version read with the newest layout, one leaf for the ignored rest. The new leaves cover ``data`` exactly.
    Raises DecodeError, leaving ``parent`` untouched, when the bytes do not decode."""
    data = bytes(data)
    spec, version, layout_version = _read_version(name, data)
    scratch = FieldNode(path, name, "payload", 0, len(data))
    scratch.add(FieldNode(_join(path, VERSION_KEY), VERSION_KEY, "int16", 0, 2, version))
    try:
        body, end = decode_struct(message_layout(spec, layout_version), data, 2, path, scratch)
    except Malformed as exc:
        raise exc.error from None
    if end != len(data):
        if layout_version == version:
            raise DecodeError(f"{len(data) - end} trailing bytes after {spec.name} v{version}", path=path,
                              offset=base + end)
        scratch.add(FieldNode(_join(path, "_ignored"), "_ignored", "bytes", end, len(data), data[end:],
                              diagnostics=[f"{spec.name} v{version} is newer than v{layout_version}: "
                                           f"{len(data) - end} bytes after the v{layout_version} layout ignored"]))
    nested: list[_Found] = []
    _attach_sites(_BY_OWNER.get(name, ()), body, version, path, nested)
    _expand_nodes(scratch, nested)
    for node in scratch.walk():
        if node is not scratch:
            node.start += base
            node.end += base
    parent.children.extend(scratch.children)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# ---------------------------------------------------------------- substitution in decoded bodies

@dataclass(slots=True)
class _Found:
    path: str
    payload: str
    data: bytes
    value: dict


def attach_payloads(message: Message) -> None:
    """Replace the payload bytes of a decoded message by their decoded dicts (only where lossless) and, when
    the message has a tree, turn each such bytes leaf into a container describing the payload."""
    sites = _BY_OWNER.get((message.api_key, message.kind))
    if sites is None or not isinstance(message.body, dict):
        return
    found: list[_Found] = []
    _attach_sites(sites, message.body, message.api_version, "", found)
    if found and message.tree is not None:
        _expand_nodes(message.tree, found)


def _attach_sites(sites: tuple[PayloadSite, ...], body: dict, version: int, prefix: str,
                  found: list[_Found]) -> None:
    for site in sites:
        _attach_at(site, site.steps, 0, body, version, prefix, found)


def _attach_at(site: PayloadSite, steps: tuple[str, ...], depth: int, holder: Any, version: int, path: str,
               found: list[_Found]) -> None:
    if not isinstance(holder, dict):
        return
    if depth == site.type_depth and version >= site.type_since and holder.get(site.type_name) != CONSUMER:
        return
    step = steps[depth]
    if depth == len(steps) - 1:
        data = holder.get(step)
        if isinstance(data, (bytes, bytearray)) and data:
            value = _lossless(site.payload, bytes(data))
            if value is not None:
                holder[step] = value
                found.append(_Found(_join(path, step), site.payload, bytes(data), value))
        return
    if step.endswith("[]"):
        name = step[:-2]
        for i, item in enumerate(holder.get(name) or ()):
            _attach_at(site, steps, depth + 1, item, version, f"{_join(path, name)}[{i}]", found)
    else:
        _attach_at(site, steps, depth + 1, holder.get(step), version, _join(path, step), found)


def _lossless(name: str, data: bytes) -> dict | None:
    """The decoded payload when it decodes completely and encodes back to ``data``; otherwise None."""
    try:
        value = decode_payload(name, data)
        if encode_payload(name, value) == data:
            return value
    except ProtocolError:
        pass
    return None


def _expand_nodes(root: FieldNode, found: list[_Found]) -> None:
    """Give each substituted bytes leaf children: its length prefix, then the payload's own nodes."""
    wanted = {f.path: f for f in found}
    for node in [n for n in root.walk() if n.path in wanted and n.is_leaf]:
        hit = wanted[node.path]
        data_start = node.end - len(hit.data)
        if node.value != hit.data or data_start < node.start:
            continue
        children: list[FieldNode] = []
        if data_start > node.start:
            compact = node.wire_type.startswith("compact")
            children.append(FieldNode(node.path + "#length", "length", "compact_length" if compact else "int32",
                                      node.start, data_start, len(hit.data)))
        holder = FieldNode(node.path, node.name, node.wire_type, node.start, node.end, children=children)
        try:
            trace_payload(hit.payload, hit.data, holder, data_start, node.path)
        except ProtocolError:
            continue
        node.children.extend(holder.children)
        node.value = hit.value


# ---------------------------------------------------------------- back to bytes before encoding

def detach_payloads(api_key: int, kind: str, body: dict | None) -> dict | None:
    """``body`` with every payload dict at a known site encoded back to bytes. Only the dicts and lists on
    the way to a changed value are copied; ``body`` itself is returned when nothing changes."""
    sites = _BY_OWNER.get((api_key, kind))
    if sites is None or not isinstance(body, dict):
        return body
    return _detach_sites(sites, body)


def _detach_sites(sites: tuple[PayloadSite, ...], body: dict) -> dict:
    for site in sites:
        body = _detach_at(site, site.steps, 0, body)
    return body


def _detach_at(site: PayloadSite, steps: tuple[str, ...], depth: int, holder: Any) -> Any:
    if not isinstance(holder, dict):
        return holder
    step = steps[depth]
    if depth == len(steps) - 1:
        value = holder.get(step)
        if not isinstance(value, dict):
            return holder
        return {**holder, step: encode_payload(site.payload, value)}
    name = step[:-2] if step.endswith("[]") else step
    inner = holder.get(name)
    if step.endswith("[]"):
        if not isinstance(inner, (list, tuple)):
            return holder
        items = [_detach_at(site, steps, depth + 1, item) for item in inner]
        if all(new is old for new, old in zip(items, inner)):
            return holder
        return {**holder, name: items}
    new = _detach_at(site, steps, depth + 1, inner)
    return holder if new is inner else {**holder, name: new}


# ---------------------------------------------------------------- internal topics

def _decode_record(kinds: dict[int, tuple[str, str, str]], topic: str, key: bytes, value: bytes | None) -> dict:
    if key is None or len(key) < 2:
        raise DecodeError(f"a {topic} record key needs a 2-byte version", path="key", offset=0)
    key_version = struct.unpack_from(">h", key, 0)[0]
    if key_version not in kinds:
        raise DecodeError(f"{topic} key version {key_version} is not described (known: "
                          f"{', '.join(map(str, sorted(kinds)))})", path="key.version", offset=0)
    key_type, key_schema, value_schema = kinds[key_version]
    return {"key_type": key_type, "key": decode_payload(key_schema, key),
            "value": None if value is None else decode_payload(value_schema, value)}


def decode_offsets_record(key: bytes, value: bytes | None) -> dict:
    """A ``__consumer_offsets`` record: ``{"key_type": "offset_commit"|"group_metadata"|"consumer_group_...",
    "key": {...}, "value": {...} or None (a tombstone)}``; the key's int16 picks the kind
    (:data:`OFFSETS_RECORD_KINDS`: 0-2 classic, 3-8 KIP-848 consumer groups). Raises DecodeError for key kinds
    not described here (9+: share and streams group records) and for bytes that do not decode exactly."""
    return _decode_record(OFFSETS_RECORD_KINDS, "__consumer_offsets", key, value)


def decode_transaction_record(key: bytes, value: bytes | None) -> dict:
    """A ``__transaction_state`` record: ``{"key_type": "transaction_log", "key": {...}, "value": {...} or
    None (a tombstone for an expired transactional id)}``; raises DecodeError."""
    return _decode_record(TRANSACTION_RECORD_KINDS, "__transaction_state", key, value)
