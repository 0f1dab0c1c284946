"""The schema as Python objects: APIs, messages and fields, loaded from kafkalab's own JSON schema files.

A schema file (``apis/NNN_name.json``, written by ``scripts/generate_schema.py``) describes one API key: its
request and response, each with the version range, the first flexible version and a field tree. Every field
carries inclusive ``[low, high]`` version ranges for when it exists, is nullable and is tagged. This module
only reads and represents that data; how a version is laid out on the wire is the codec's business.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

Range = tuple[int, int]
ZERO_UUID = uuid.UUID(int=0)
ZERO_VALUES: dict[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
    "bool": False, "string": "", "bytes": b"", "records": None,
}


def in_range(version: int, span: Range | None) -> bool:
    return span is not None and span[0] <= version <= span[1]


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message, across all the versions it exists in."""

    name: str
    type: str                       # int8..float64, bool, uuid, string, bytes, records, struct, array
    versions: Range
    items: str | None = None        # for arrays: a primitive type name or "struct"
    nullable: Range | None = None
    tag: int | None = None
    tagged: Range | None = None
    default: Any = None
    has_default: bool = False       # the schema states a default other than the type's zero value
    null_default: bool = False      # the schema states null as the default (where nullable)
    fields: tuple[Field, ...] = ()
    entity: str | None = None       # Kafka's entityType: topicName, brokerId, groupId, transactionalId...
    ignorable: bool = False         # may be dropped when encoding a version that lacks it
    flexible_never: bool = False    # keeps the classic encoding even in flexible versions (ClientId)
    kafka_name: str | None = None

    @property
    def is_struct(self) -> bool:
        return self.type == "struct" or self.items == "struct"

    def exists_in(self, version: int) -> bool:
        return in_range(version, self.versions)

    def nullable_in(self, version: int) -> bool:
        return in_range(version, self.nullable)

    def tagged_in(self, version: int) -> bool:
        return in_range(version, self.tagged)

    def default_value(self, version: int) -> Any:
        """The value a missing field takes: the schema default, else the type's zero value."""
        if self.null_default and self.nullable_in(version):
            return None
        if self.has_default:
            return uuid.UUID(self.default) if self.type == "uuid" else self.default
        if self.type == "array":
            return []
        if self.type == "struct":
            return {f.name: f.default_value(version) for f in self.fields if f.exists_in(version)}
        if self.type == "uuid":
            return ZERO_UUID
        return ZERO_VALUES[self.type]


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A request or response (or header, or nested payload) definition."""

    name: str                 # ProduceRequest, RequestHeader, ConsumerProtocolSubscription...
    kind: str                 # request, response, header, payload
    versions: Range
    flexible: int | None      # first flexible version
    fields: tuple[Field, ...]
    api_key: int = -1
    api_name: str = ""

    def is_flexible(self, version: int) -> bool:
        return self.flexible is not None and version >= self.flexible

    def has_version(self, version: int) -> bool:
        return in_range(version, self.versions)


@dataclass(frozen=True, slots=True)
class ApiSpec:
    api_key: int
    name: str
    request: MessageSpec
    response: MessageSpec
    extra: dict = field(default_factory=dict, compare=False)

    def message(self, kind: str) -> MessageSpec:
        return self.request if kind == "request" else self.response


def field_from_data(data: dict) -> Field:
    default = data.get("default")
    if data["type"] == "bytes" and isinstance(default, str):
        default = bytes.fromhex(default)
    return Field(
        name=data["name"], type=data["type"], versions=tuple(data["versions"]), items=data.get("items"),
        nullable=tuple(data["nullable"]) if "nullable" in data else None, tag=data.get("tag"),
        tagged=tuple(data["tagged"]) if "tagged" in data else None, default=default,
        has_default=default is not None, null_default="default" in data and default is None,
        fields=tuple(field_from_data(d) for d in data.get("fields", ())), entity=data.get("entity"),
        ignorable=bool(data.get("ignorable")), flexible_never=bool(data.get("flexible_never")),
        kafka_name=data.get("kafka_name"),
    )


def message_from_data(data: dict, name: str, kind: str, api_key: int = -1, api_name: str = "") -> MessageSpec:
    return MessageSpec(name=name, kind=kind, versions=tuple(data["versions"]), flexible=data.get("flexible"),
                       fields=tuple(field_from_data(d) for d in data["fields"]), api_key=api_key,
                       api_name=api_name)


def api_from_json(text: str) -> ApiSpec:
    data = json.loads(text)
    key, name = data["api_key"], data["name"]
    return ApiSpec(api_key=key, name=name,
                   request=message_from_data(data["request"], name + "Request", "request", key, name),
                   response=message_from_data(data["response"], name + "Response", "response", key, name))
