"""The decoded record-layer objects: immutable snapshots of what was on the wire.

Decoded objects keep the exact bytes they came from (``raw``) so that re-encoding an untouched object is
byte-identical even when the peer used a compressor setting, header order or CRC we would not produce.
``raw`` is an ``init=False`` field: ``dataclasses.replace(batch, records=...)`` and the constructors yield an
object without it, which the encoders then build from the fields. Nothing else is needed to tell "unchanged"
from "edited", because the objects are frozen.

``to_dict()`` gives the plain form JSON output uses (bytes stay bytes; the caller hexes them) and that
:func:`encode_records` accepts back.

A :class:`RecordBatch` from the decoder may be *lazy*: its header, record count and CRC check are done,
while its records (and the diagnostics only they can give) are decoded on first access of ``records`` or
``diagnostics``. The object reads, compares, hashes, copies and pickles exactly as an eagerly decoded one;
``decoded`` tells whether the records have been read yet.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
TIMESTAMP_TYPES = ("create", "log_append")


def _bytes_repr(b: bytes | None, limit: int = 24) -> str:
    if b is None:
        return "None"
    return repr(b[:limit]) + (f"...(+{len(b) - limit})" if len(b) > limit else "")


def with_raw(obj, raw: bytes | None):
    """Attach the wire bytes an object was decoded from (decoders only; ``raw`` is not an init field)."""
    object.__setattr__(obj, "raw", raw)
    return obj


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A transaction marker (KIP-98): key = version int16 + type int16, value = version int16 + epoch int32."""
    version: int = 0
    type: int = 0
    coordinator_epoch: int = 0
    value_version: int = 0

    @property
    def type_name(self) -> str:
        return CONTROL_TYPES.get(self.type, f"UNKNOWN({self.type})")

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "type": self.type, "type_name": self.type_name,
                "coordinator_epoch": self.coordinator_epoch, "value_version": self.value_version}

    def __repr__(self) -> str:
        return f"ControlRecord({self.type_name}, coordinator_epoch={self.coordinator_epoch})"


@dataclass(frozen=True, slots=True)
class Record:
    """One record. ``offset``/``timestamp`` are absolute; the deltas are what v2 puts on the wire."""
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    offset: int | None = None
    offset_delta: int = 0
    timestamp_delta: int = 0
    attributes: int = 0
    control: ControlRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "offset_delta": self.offset_delta, "timestamp": self.timestamp,
                "timestamp_delta": self.timestamp_delta, "attributes": self.attributes, "key": self.key,
                "value": self.value, "headers": [[k, v] for k, v in self.headers],
                "control": None if self.control is None else self.control.to_dict()}

    def __repr__(self) -> str:
        parts = [f"offset={self.offset}", f"key={_bytes_repr(self.key)}", f"value={_bytes_repr(self.value)}"]
        if self.headers:
            parts.append("headers={" + ", ".join(f"{k!r}: {_bytes_repr(v, 12)}" for k, v in self.headers) + "}")
        if self.timestamp is not None:
            parts.append(f"timestamp={self.timestamp}")
        if self.control is not None:
            parts.append(repr(self.control))
        return f"Record({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A magic 2 record batch (KIP-98), or a partial/garbage tail of a record set (``partial``/diagnostics)."""
    base_offset: int = 0
    batch_length: int = 0
    partition_leader_epoch: int = -1
    magic: int = 2
    crc: int = 0
    crc_ok: bool = True
    attributes: int = 0
    codec: str = "none"
    timestamp_type: str = "create"
    transactional: bool = False
    control: bool = False
    delete_horizon: bool = False
    last_offset_delta: int | None = None
    base_timestamp: int = -1
    max_timestamp: int | None = None
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    record_count: int = 0
    records: tuple[Record, ...] = ()
    partial: bool = False
    diagnostics: tuple[str, ...] = ()
    raw: bytes | None = field(default=None, init=False, repr=False, compare=False)
    #: decoders only: how to decode ``records`` (and the rest of ``diagnostics``) on first access
    _lazy: Any = field(default=None, init=False, repr=False, compare=False)

    def __getattr__(self, name: str):
        # Reached only when a slot is unset: a lazily decoded batch leaves ``records`` and ``diagnostics``
        # empty until first asked for (the header, record count and CRC check are done eagerly).
        if name in _LAZY_FIELDS:
            lazy = object.__getattribute__(self, "_lazy")
            if lazy is not None:
                records, diagnostics = lazy[0](self, *lazy[1:])
                object.__setattr__(self, "records", records)
                object.__setattr__(self, "diagnostics", diagnostics)
                object.__setattr__(self, "_lazy", None)
                return records if name == "records" else diagnostics
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def decoded(self) -> bool:
        """False while the records of a lazily decoded batch have not been read yet."""
        return object.__getattribute__(self, "_lazy") is None

    @property
    def last_offset(self) -> int:
        return self.base_offset + (self.last_offset_delta or 0)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size(self) -> int:
        """Bytes on the wire including the 12-byte offset/length prefix."""
        return len(self.raw) if self.raw is not None else 12 + self.batch_length

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _BATCH_SCALARS}
        out["records"] = [r.to_dict() for r in self.records]
        out["diagnostics"] = list(self.diagnostics)
        if self.partial or (self.raw is not None and self.magic not in (0, 1, 2)):
            out["raw"] = self.raw  # nothing decodable: the bytes are the only faithful form
        return out

    def __repr__(self) -> str:
        if self.partial:
            return f"RecordBatch(partial, {len(self.raw or b'')} bytes at offset {self.base_offset})"
        flags = [f for f in ("transactional", "control", "delete_horizon") if getattr(self, f)]
        head = (f"RecordBatch(offsets {self.base_offset}..{self.last_offset}, {self.record_count} records, "
                f"codec={self.codec}, crc=0x{self.crc:08x}{'' if self.crc_ok else ' BAD'}")
        if self.producer_id >= 0:
            head += f", producer={self.producer_id}/{self.producer_epoch} seq={self.base_sequence}"
        if flags:
            head += ", " + "+".join(flags)
        if self.diagnostics:
            head += f", diagnostics={list(self.diagnostics)}"
        return head + ")"


_LAZY_FIELDS = ("records", "diagnostics")
_BATCH_SCALARS = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "crc_ok",
                  "attributes", "codec", "timestamp_type", "transactional", "control", "delete_horizon",
                  "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                  "base_sequence", "record_count", "partial")


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """A magic 0/1 message. A compressed *wrapper* holds its nested message set in ``inner``.

    ``offset`` is the offset as written: for messages inside a magic 1 wrapper it is relative (KIP-31).
    ``records`` gives the uniform view: one :class:`Record` per real message, offsets absolute.
    """
    offset: int = 0
    message_size: int = 0
    crc: int = 0
    crc_ok: bool = True
    magic: int = 1
    attributes: int = 0
    codec: str = "none"
    timestamp_type: str = "create"
    timestamp: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    inner: tuple[LegacyMessage, ...] = ()
    records: tuple[Record, ...] = ()
    partial: bool = False
    diagnostics: tuple[str, ...] = ()
    raw: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def base_offset(self) -> int:
        return self.records[0].offset if self.records and self.records[0].offset is not None else self.offset

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def size(self) -> int:
        return len(self.raw) if self.raw is not None else 12 + self.message_size

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _LEGACY_SCALARS}
        out["inner"] = [m.to_dict() for m in self.inner]
        out["records"] = [r.to_dict() for r in self.records]
        out["diagnostics"] = list(self.diagnostics)
        if self.partial:
            out["raw"] = self.raw
        return out

    def __repr__(self) -> str:
        if self.partial:
            return f"LegacyMessage(partial, {len(self.raw or b'')} bytes at offset {self.offset})"
        text = (f"LegacyMessage(magic={self.magic}, offset={self.offset}, codec={self.codec}, "
                f"crc=0x{self.crc:08x}{'' if self.crc_ok else ' BAD'}")
        if self.inner:
            text += f", {len(self.inner)} inner messages"
        else:
            text += f", key={_bytes_repr(self.key)}, value={_bytes_repr(self.value)}"
        if self.timestamp is not None:
            text += f", timestamp={self.timestamp}"
        if self.diagnostics:
            text += f", diagnostics={list(self.diagnostics)}"
        return text + ")"


_LEGACY_SCALARS = ("offset", "message_size", "crc", "crc_ok", "magic", "attributes", "codec", "timestamp_type",
                   "timestamp", "key", "value", "partial")
