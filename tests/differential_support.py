"""Adapters that let tests/test_differential.py compare kafkalab's codec with two independent implementations.

* **kio** (Aiven, ``kio==0.6.5``): one frozen dataclass per (api, version, kind), read and written by
  ``kio.serial.entity_reader`` / ``entity_writer``.
* **kafka-python** (``kafka-python==3.0.12``): ``kafka.protocol``'s schema-driven ``ApiMessage`` classes, one per
  (api, kind), versioned at encode/decode time.

Both libraries are described to the tests through one small model: an :class:`OStruct` (the fields of one
struct level in one version: regular fields in wire order, tagged fields by tag) made of :class:`OField`\\ s.
:func:`match` pairs a kafkalab :class:`~kafkalab.protocol.codec.layout.Layout` with an ``OStruct`` *by wire
position* (regular fields) and *by tag* (tagged fields), and then insists that the names agree after a generic
normalisation (case, underscores, kio's dropped ``_ms`` suffix), that the kinds agree (scalar, array, struct,
records) and that the types are compatible. Any disagreement is a :class:`Mismatch`, reported with its path:
nothing is paired by API-specific knowledge.

Value conversion is by the *other* library's field type only (``error_code`` to kio's ``ErrorCode`` enum,
``timedelta_i32`` to ``timedelta``, kafka-python's ``bitfield`` to a set of bit positions...), in both
directions: :meth:`Adapter.to_kafkalab` normalises a decoded object into a kafkalab-shaped dict, and
:meth:`Adapter.build` turns a kafkalab dict into the library's object.

:func:`body_strategy` is the Hypothesis strategy of ``tests/schema_strategies.py`` narrowed to the values the
other library can represent (documented per field type in ``Adapter.scalar_strategy``).
"""
from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import pkgutil
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from kafkalab.protocol import all_apis
from kafkalab.protocol.codec.layout import Layout, Slot, message_layout
from schema_strategies import scalar as kafkalab_scalar

ZERO_UUID = uuid.UUID(int=0)
INT32_MIN = -(1 << 31)
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
ONE_MS = datetime.timedelta(milliseconds=1)


# ---------------------------------------------------------------- the common model

@dataclass
class OField:
    """One field of the other library, in one version."""

    name: str
    kind: str                   # scalar, array, struct, records
    type: str                   # the library's type name for scalars and scalar arrays' items ("" otherwise)
    nullable: bool
    tag: int | None = None
    child: OStruct | None = None
    handle: Any = None          # the library's own field object


@dataclass
class OStruct:
    name: str
    regular: list[OField]
    tagged: dict[int, OField]
    handle: Any = None          # what builds an instance: kio dataclass, kafka-python data class


@dataclass
class Link:
    """A kafkalab slot paired with the other library's field."""

    slot: Slot
    other: OField
    child: StructLink | None = None


@dataclass
class StructLink:
    layout: Layout
    other: OStruct
    regular: list[Link] = field(default_factory=list)
    tagged: list[Link] = field(default_factory=list)

    @property
    def links(self) -> list[Link]:
        return self.regular + self.tagged


class Mismatch(Exception):
    """The other library's schema for this (api, version, kind) disagrees structurally with kafkalab's."""


def base_type(slot: Slot) -> str:
    """kafkalab's schema type of a scalar slot, or of a scalar array's items."""
    return slot.field.items if slot.kind == "array" else slot.field.type


def norm_name(name: str) -> str:
    name = name.lower().replace("_", "")
    return name[:-2] if name.endswith("ms") else name


def match(layout: Layout, other: OStruct, adapter: Adapter, path: str = "") -> StructLink:
    """Pair ``layout`` with ``other`` by wire position and tag; raise Mismatch naming the first disagreement."""
    link = StructLink(layout, other)
    if len(layout.slots) != len(other.regular):
        raise Mismatch(f"{path or '<body>'}: kafkalab has {len(layout.slots)} regular fields "
                       f"{[s.name for s in layout.slots]}, {adapter.name} has {len(other.regular)} "
                       f"{[f.name for f in other.regular]}")
    if set(layout.by_tag) != set(other.tagged):
        raise Mismatch(f"{path or '<body>'}: kafkalab tags {sorted(layout.by_tag)}, "
                       f"{adapter.name} tags {sorted(other.tagged)}")
    pairs = [(slot, ofield, False) for slot, ofield in zip(layout.slots, other.regular)]
    pairs += [(slot, other.tagged[slot.tag], True) for slot in layout.tagged]
    for slot, ofield, tagged in pairs:
        at = f"{path}.{slot.name}" if path else slot.name
        if norm_name(slot.name) != norm_name(ofield.name) and not adapter.renamed(slot, ofield):
            raise Mismatch(f"{at}: {adapter.name} has {ofield.name!r} in this position")
        if slot.kind != ofield.kind:
            raise Mismatch(f"{at}: kafkalab {slot.kind}, {adapter.name} {ofield.kind}")
        if slot.kind in ("scalar", "array") and (slot.kind == "scalar" or slot.layout is None):
            if not adapter.compatible(base_type(slot), ofield.type):
                raise Mismatch(f"{at}: kafkalab {base_type(slot)}, {adapter.name} {ofield.type}")
        # kio models every tagged field as non-optional in transit, so nullability is compared on regular ones
        if not tagged and slot.nullable != ofield.nullable and adapter.nullability_matters(ofield):
            raise Mismatch(f"{at}: kafkalab nullable={slot.nullable}, {adapter.name} nullable={ofield.nullable}")
        child = None
        if slot.layout is not None:
            if ofield.child is None:
                raise Mismatch(f"{at}: {adapter.name} has no struct here")
            child = match(slot.layout, ofield.child, adapter, at)
        pair = Link(slot, ofield, child)
        (link.tagged if tagged else link.regular).append(pair)
    return link


# ---------------------------------------------------------------- kafkalab-side helpers

def with_defaults(link: StructLink, body: dict) -> dict:
    """``body`` as kafkalab's decoder returns it: absent tagged fields take their defaults."""
    out = {}
    for item in link.links:
        value = body.get(item.slot.name, item.slot.default)
        if item.child is not None and value is not None:
            value = [with_defaults(item.child, v) for v in value] if item.slot.kind == "array" \
                else with_defaults(item.child, value)
        out[item.slot.name] = value
    return out


def null_body(link: StructLink) -> dict:
    """The edge-case body: every nullable field null, every other one at its default, tagged ones included."""
    out = {}
    for item in link.links:
        slot = item.slot
        if slot.nullable:
            out[slot.name] = None
        elif slot.kind == "struct":
            out[slot.name] = null_body(item.child)
        else:
            out[slot.name] = slot.default
    return out


def body_strategy(link: StructLink, adapter: Adapter, depth: int = 0):
    """A kafkalab body for ``link.layout`` that ``adapter``'s library can also represent."""
    required = {item.slot.name: slot_strategy(item, adapter, depth) for item in link.regular}
    optional = {item.slot.name: slot_strategy(item, adapter, depth) for item in link.tagged}
    return st.fixed_dictionaries(required, optional=optional)


def slot_strategy(item: Link, adapter: Adapter, depth: int):
    slot = item.slot
    if slot.kind == "scalar":
        return adapter.scalar_strategy(slot.wire_type, base_type(slot), slot.nullable, item.other)
    if slot.kind == "records":
        # opaque bytes: both libraries carry RECORDS as bytes, and kafkalab decodes them with records="raw"
        data = st.binary(max_size=24)
        return st.one_of(st.none(), data) if slot.nullable else data
    if slot.kind == "struct":
        inner = body_strategy(item.child, adapter, depth + 1)
        return st.one_of(st.none(), inner) if slot.nullable else inner
    element = body_strategy(item.child, adapter, depth + 1) if item.child is not None \
        else adapter.scalar_strategy(slot.item_wire_type, base_type(slot), False, item.other)
    items = st.lists(element, max_size=3 if depth < 2 else 1)
    return st.one_of(st.none(), items) if slot.nullable else items


# ---------------------------------------------------------------- adapters

class Adapter:
    name = "?"
    # other type name -> kafkalab base types it may carry
    COMPATIBLE: dict[str, set[str]] = {}

    def compatible(self, kafkalab_type: str, other_type: str) -> bool:
        return kafkalab_type == other_type or kafkalab_type in self.COMPATIBLE.get(other_type, ())

    dropped: list[tuple[int, int, str]] = []   # combinations this library has and kafkalab does not

    def split(self, combos, apis) -> list[tuple[int, int, str]]:
        """Keep the combinations kafkalab supports; remember the others (the coverage test shows them)."""
        self.dropped = [c for c in combos if c[0] not in apis or not apis[c[0]].message(c[2]).has_version(c[1])]
        return [c for c in combos if c not in self.dropped]

    allowed_renames: dict[str, str] = {}   # kafkalab name -> the library's, set by the caller per combination

    def renamed(self, slot: Slot, ofield: OField) -> bool:
        return self.allowed_renames.get(slot.name) == ofield.name

    def nullability_matters(self, ofield: OField) -> bool:
        return True

    def scalar_strategy(self, wire_type: str, kafkalab_type: str, nullable: bool, ofield: OField):
        return kafkalab_scalar(wire_type, nullable)

    # conversion of one scalar (or scalar array item): override per library
    def scalar_to_kafkalab(self, ofield: OField, value, nullable: bool):
        return value

    def scalar_from_kafkalab(self, ofield: OField, value, nullable: bool):
        return value

    def get(self, obj, ofield: OField):
        return getattr(obj, ofield.name)

    def make(self, ostruct: OStruct, values: dict[str, Any], link: StructLink):
        raise NotImplementedError

    def seq(self, items: list):
        return list(items)

    # ---- whole structs
    def to_kafkalab(self, link: StructLink, obj) -> dict:
        """A decoded object of this library as a kafkalab body dict (every known field present)."""
        out = {}
        for item in link.links:
            value = self.get(obj, item.other)
            out[item.slot.name] = self._value_to_kafkalab(item, value)
        return out

    def _value_to_kafkalab(self, item: Link, value):
        slot = item.slot
        if slot.kind == "records":
            return None if value is None else bytes(value)
        if slot.kind == "scalar":
            return self.scalar_to_kafkalab(item.other, value, slot.nullable)
        if value is None:
            return None
        if slot.kind == "struct":
            return self.to_kafkalab(item.child, value)
        if item.child is not None:
            return [self.to_kafkalab(item.child, v) for v in value]
        return [self.scalar_to_kafkalab(item.other, v, False) for v in value]

    def build(self, link: StructLink, body: dict):
        """This library's object for a kafkalab body dict (fields absent from ``body`` are left out)."""
        values = {}
        for item in link.links:
            if item.slot.name in body:
                values[item.other.name] = self._value_from_kafkalab(item, body[item.slot.name])
        return self.make(link.other, values, link)

    def _value_from_kafkalab(self, item: Link, value):
        slot = item.slot
        if slot.kind == "records":
            return value
        if slot.kind == "scalar":
            return self.scalar_from_kafkalab(item.other, value, slot.nullable)
        if value is None:
            return None
        if slot.kind == "struct":
            return self.build(item.child, value)
        if item.child is not None:
            return self.seq([self.build(item.child, v) for v in value])
        return self.seq([self.scalar_from_kafkalab(item.other, v, False) for v in value])


# ---- kio

class KioAdapter(Adapter):
    """kio: entity dataclasses per (api, version, kind)."""

    name = "kio"
    COMPATIBLE = {"error_code": {"int16"}, "timedelta_i32": {"int32"}, "timedelta_i64": {"int64"},
                  "datetime_i64": {"int64"}}
    # Durations and timestamps go through floats in kio (it writes round(total_seconds() * 1000) and
    # round(timestamp() * 1000)), so large values do not survive kio's own read-then-write round trip: int64
    # durations (bounded by datetime.timedelta, about +-8.6e16 ms, anyway) are drawn within +-2**53 ms and
    # timestamps (datetime_i64: a non-negative count of ms since the epoch before year 10000, -1 = null where
    # nullable) within that range, both keeping only the values kio's reader and writer round-trip exactly
    # (about |v| < 2**50 for durations, v < 2**42 for timestamps). int32 durations round-trip over the whole
    # int32 range.
    I64_TIMEDELTA_MS = 1 << 53
    MAX_DATETIME_MS = 253402300799999

    def __init__(self) -> None:
        from kio.index import load_payload_module
        from kio.schema.errors import ErrorCode
        from kio.schema.index import api_key_map, schema_name_map
        from kio.serial import entity_reader, entity_writer
        from kio.serial._introspect import (EntityField, EntityTupleField, PrimitiveTupleField, classify_field,
                                            get_field_tag, get_schema_field_type, is_optional)
        from kio.static.constants import EntityType
        self._load = load_payload_module
        self._api_key_map, self._schema_name_map = api_key_map, schema_name_map
        self._reader, self._writer = entity_reader, entity_writer
        self._introspect = (EntityField, EntityTupleField, PrimitiveTupleField, classify_field, get_field_tag,
                            get_schema_field_type, is_optional)
        self.EntityType = EntityType
        self.ErrorCode = ErrorCode
        self.error_codes = sorted(e.value for e in ErrorCode)

    def combos(self) -> list[tuple[int, int, str]]:
        out = []
        apis = {api.api_key: api for api in all_apis()}
        for api_key, name in sorted(self._api_key_map.items()):
            for version, kinds in sorted(self._schema_name_map[name].items()):
                for kind in ("request", "response"):
                    if getattr(self.EntityType, kind) in kinds:
                        out.append((api_key, version, kind))
        return self.split(out, apis)

    def entity(self, api_key: int, version: int, kind: str):
        module = self._load(api_key, version, getattr(self.EntityType, kind))
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) \
                    and getattr(value, "__type__", None) == getattr(self.EntityType, kind):
                return value
        raise LookupError(f"no {kind} entity in {module.__name__}")

    def ostruct(self, api_key: int, version: int, kind: str) -> OStruct:
        return self._ostruct(self.entity(api_key, version, kind))

    def _ostruct(self, cls) -> OStruct:
        EntityField, EntityTupleField, PrimitiveTupleField, classify, get_tag, kafka_type, is_optional = \
            self._introspect
        regular, tagged = [], {}
        for f in dataclasses.fields(cls):
            klass = classify(f)
            tag = get_tag(f)
            if isinstance(klass, (EntityField, EntityTupleField)):
                ofield = OField(f.name, "struct" if isinstance(klass, EntityField) else "array", "",
                                is_optional(f), tag, self._ostruct(klass.type_), f)
            else:
                ktype = kafka_type(f)
                kind = "array" if isinstance(klass, PrimitiveTupleField) else \
                    "records" if ktype == "records" else "scalar"
                ofield = OField(f.name, kind, ktype, is_optional(f), tag, None, f)
            if tag is None:
                regular.append(ofield)
            else:
                tagged[int(tag)] = ofield
        return OStruct(cls.__name__, regular, tagged, cls)

    def nullability_matters(self, ofield):
        # kio's None for a uuid is the all-zero UUID, for a timestamp the value -1: values, not wire nulls
        return ofield.type not in ("uuid", "datetime_i64")

    def scalar_strategy(self, wire_type, kafkalab_type, nullable, ofield):
        t = ofield.type
        if t == "error_code":
            return st.sampled_from(self.error_codes)
        if t == "timedelta_i64":
            return st.integers(-self.I64_TIMEDELTA_MS, self.I64_TIMEDELTA_MS).filter(
                lambda ms: self.kio_exact(ofield, ms))
        if t == "datetime_i64":
            stamps = st.integers(0, self.MAX_DATETIME_MS).filter(lambda ms: self.kio_exact(ofield, ms))
            return st.one_of(st.just(-1), stamps) if ofield.nullable else stamps
        if t == "float64":
            # kio's f64 is finite by definition
            return st.floats(allow_nan=False, allow_infinity=False)
        return kafkalab_scalar(wire_type, nullable)

    def kio_exact(self, ofield: OField, ms: int) -> bool:
        """Whether kio reads the int64 ``ms`` as a value that it writes back, and we convert back, unchanged."""
        from kio.serial.readers import read_datetime_i64, read_timedelta_i64
        from kio.serial.writers import write_datetime_i64, write_timedelta_i64
        reader, writer = (read_datetime_i64, write_datetime_i64) if ofield.type == "datetime_i64" \
            else (read_timedelta_i64, write_timedelta_i64)
        wire = ms.to_bytes(8, "big", signed=True)
        value, _ = reader(wire, 0)
        out = io.BytesIO()
        writer(out, value)
        return out.getvalue() == wire and self.scalar_to_kafkalab(ofield, value, False) == ms

    def scalar_to_kafkalab(self, ofield, value, nullable):
        t = ofield.type
        if t == "error_code":
            assert isinstance(value, self.ErrorCode), value
            return int(value.value)
        if t in ("timedelta_i32", "timedelta_i64"):
            assert isinstance(value, datetime.timedelta), value
            assert value % ONE_MS == datetime.timedelta(0), value
            return value // ONE_MS
        if t == "datetime_i64":
            return -1 if value is None else (value - EPOCH) // ONE_MS
        if t == "uuid":
            return ZERO_UUID if value is None else value
        if t == "bytes" and value is not None:
            return bytes(value)
        return value

    def scalar_from_kafkalab(self, ofield, value, nullable):
        t = ofield.type
        if t == "error_code":
            return self.ErrorCode(value)
        if t in ("timedelta_i32", "timedelta_i64"):
            return datetime.timedelta(milliseconds=value)
        if t == "datetime_i64":
            return None if value == -1 and ofield.nullable else EPOCH + datetime.timedelta(milliseconds=value)
        if t == "uuid":
            return None if value == ZERO_UUID else value
        return value

    def seq(self, items):
        return tuple(items)

    def make(self, ostruct, values, link):
        cls = ostruct.handle
        # kio's dataclasses require every field without a default; kafkalab's absent tagged fields take
        # kafkalab's default, converted like any other value
        for item in link.links:
            if item.other.name not in values and item.other.handle.default is dataclasses.MISSING:
                values[item.other.name] = self._value_from_kafkalab(item, item.slot.default)
        return cls(**values)

    def decode(self, api_key, version, kind, data: bytes):
        cls = self.entity(api_key, version, kind)
        obj, size = self._reader(cls)(data, 0)
        return obj, size

    def encode(self, api_key, version, kind, obj) -> bytes:
        cls = self.entity(api_key, version, kind)
        buffer = io.BytesIO()
        self._writer(cls)(buffer, obj)
        return buffer.getvalue()


# ---- kafka-python

class KafkaPythonAdapter(Adapter):
    """kafka-python 3.x: ``kafka.protocol`` ApiMessage classes built from Kafka's JSON schemas."""

    name = "kafka-python"
    # kafka-python patches MetadataResponse's *AuthorizedOperations int32 fields into a "bitfield" (a set of
    # bit positions, None for the INT32_MIN "not requested" value) and renames them "authorized_operations".
    COMPATIBLE = {"bitfield": {"int32"}}

    def __init__(self) -> None:
        import kafka.protocol as kp
        from kafka.protocol.api_message import ApiMessage
        for module in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
            # .old is the pre-3.x hand-written protocol, generate_stubs a development script
            if ".old" not in module.name and "generate_stubs" not in module.name:
                importlib.import_module(module.name)
        self.classes: dict[tuple[int, str], type] = {}
        stack = list(ApiMessage.__subclasses__())
        while stack:
            cls = stack.pop()
            stack.extend(cls.__subclasses__())
            if cls._class_version is None:
                self.classes[(cls.API_KEY, cls.type)] = cls

    def combos(self) -> list[tuple[int, int, str]]:
        out = []
        for (api_key, kind), cls in sorted(self.classes.items()):
            # _valid_versions is the schema's validVersions (kafka-python widens only the struct's range)
            low, high = cls._valid_versions
            out += [(api_key, v, kind) for v in range(low, high + 1)]
        return self.split(out, {api.api_key: api for api in all_apis()})

    def message_class(self, api_key, kind):
        return self.classes[(api_key, kind)]

    def ostruct(self, api_key: int, version: int, kind: str) -> OStruct:
        cls = self.message_class(api_key, kind)
        return self._ostruct(cls._struct, version, cls)

    def _ostruct(self, struct, version, handle) -> OStruct:
        regular = [self._ofield(f, version) for f in struct.untagged_fields(version)]
        tagged = {f.tag: self._ofield(f, version) for f in struct._fields
                  if f.for_version_q(version) and f.tagged_field_q(version)}
        return OStruct(struct.name, regular, tagged, handle)

    def _ofield(self, f, version) -> OField:
        nullable = f.nullable_for_version_q(version)
        tag = f.tag if f.tagged_field_q(version) else None
        if f.is_struct():
            return OField(f.name, "struct", "", nullable, tag, self._ostruct(f, version, f.data_class), f)
        if f.is_struct_array():
            return OField(f.name, "array", "", nullable, tag, self._ostruct(f.array_of, version, f.data_class), f)
        if f.is_array():
            return OField(f.name, "array", f.array_of.type_str, nullable, tag, None, f)
        kind = "records" if f.type_str == "records" else "scalar"
        return OField(f.name, kind, f.type_str, nullable, tag, None, f)

    def renamed(self, slot, ofield):
        return ofield.type == "bitfield" or super().renamed(slot, ofield)

    def scalar_to_kafkalab(self, ofield, value, nullable):
        t = ofield.type
        if t == "bitfield":
            if value is None:
                return INT32_MIN
            bits = sum(1 << b for b in value)
            return bits - (1 << 32) if bits & (1 << 31) else bits
        if t == "uuid":
            return ZERO_UUID if value is None else value
        if t == "bytes" and value is not None:
            return bytes(value)
        return value

    def scalar_from_kafkalab(self, ofield, value, nullable):
        if ofield.type == "bitfield":
            return {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}
        return value

    def get(self, obj, ofield):
        return getattr(obj, ofield.name)

    def _value_to_kafkalab(self, item, value):
        # kafka-python gives an absent tagged struct the value None; Kafka's (and kafkalab's) value for it is
        # the struct's default, as for any absent tagged field
        if value is None and item.other.tag is not None and item.slot.kind == "struct" and not item.slot.nullable:
            return item.slot.default
        return super()._value_to_kafkalab(item, value)

    def make(self, ostruct, values, link):
        # tagged fields equal to their default are left out: kafka-python writes every tagged field it was
        # given whose value differs from *its* default, kafkalab every one that differs from kafkalab's
        for item in link.tagged:
            name = item.other.name
            if name in values and values[name] == self._value_from_kafkalab(item, item.slot.default):
                del values[name]
        return ostruct.handle(**values)

    def decode(self, api_key, version, kind, data: bytes):
        cls = self.message_class(api_key, kind)
        flexible = cls.flexible_version_q(version)
        decoder = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls[None])
        return decoder(memoryview(data), 0)

    def encode(self, api_key, version, kind, obj) -> bytes:
        return bytes(obj.encode(version=version))


ADAPTERS = {"kio": KioAdapter, "kafka-python": KafkaPythonAdapter}
_INSTANCES: dict[str, Adapter] = {}


def adapter(name: str) -> Adapter:
    if name not in _INSTANCES:
        _INSTANCES[name] = ADAPTERS[name]()
    return _INSTANCES[name]


def structure(library: str, api_key: int, version: int, kind: str) -> StructLink:
    """The matched field tree for one combination; raises Mismatch if the schemas disagree."""
    from kafkalab.protocol import api_spec
    a = adapter(library)
    spec = api_spec(api_key).message(kind)
    return match(message_layout(spec, version), a.ostruct(api_key, version, kind), a)
