"""Building batches from Python values: for the broker, the tests and users crafting traffic.

:func:`build_batch` encodes the records with the requested format and codec, then decodes the result, so
the object it returns is exactly what a reader of those bytes would see (CRC, lengths, counts filled in,
``raw`` attached). :func:`from_dict` turns the ``to_dict()`` form back into objects for
:func:`~.recordset.encode_records`.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..errors import EncodeError
from . import batch as v2
from . import legacy
from .compression import DEFAULT_MAX_INFLATED, Codec
from .control import parse_control
from .model import TIMESTAMP_TYPES, ControlRecord, LegacyMessage, Record, RecordBatch


def build_batch(records: Iterable[Record | dict | tuple | ControlRecord], *, magic: int = 2,
                codec: str | Codec = "none", base_offset: int = 0, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
                control: bool = False, timestamp_type: str = "create", partition_leader_epoch: int = -1,
                base_timestamp: int | None = None
                ) -> RecordBatch | LegacyMessage | tuple[LegacyMessage, ...]:
    """A v2 :class:`RecordBatch`; for magic 0/1 a compressed wrapper :class:`LegacyMessage`, or - with
    codec "none", where a legacy set is just consecutive messages - a tuple of messages (encode_records
    accepts it as one item).

    Records are a :class:`Record`, a dict (``key``, ``value``, ``headers``, ``timestamp``, ``offset``), a
    tuple ``(key, value[, headers[, timestamp[, offset]]])`` or, in a control batch, a
    :class:`ControlRecord` / ``"commit"`` / ``"abort"``. Missing offsets count up from ``base_offset``;
    missing timestamps default to ``base_timestamp`` (else the first given timestamp, else -1: no clocks
    here).
    """
    codec = Codec.parse(codec)
    if timestamp_type not in TIMESTAMP_TYPES:
        raise EncodeError(f"timestamp_type must be one of {TIMESTAMP_TYPES}, not {timestamp_type!r}")
    items = [_normalize(r) for r in records]
    for i, item in enumerate(items):
        if item["offset"] is None:
            item["offset"] = base_offset + i
        if item["offset"] < base_offset:
            raise EncodeError(f"record {i} offset {item['offset']} is below base_offset {base_offset}")
    if base_timestamp is None:
        base_timestamp = next((it["timestamp"] for it in items if it["timestamp"] is not None), -1)
    for item in items:
        if item["timestamp"] is None:
            item["timestamp"] = base_timestamp
    if magic == 2:
        return _build_v2(items, codec, base_offset, base_timestamp, timestamp_type, producer_id, producer_epoch,
                         base_sequence, transactional, control, partition_leader_epoch)
    if magic not in (0, 1):
        raise EncodeError(f"magic must be 0, 1 or 2, not {magic}")
    if producer_id != -1 or transactional or control or base_sequence != -1 or producer_epoch != -1:
        raise EncodeError("producer ids, transactions and control batches need magic 2")
    if any(it["headers"] for it in items):
        raise EncodeError("record headers need magic 2")
    return _build_legacy(items, magic, codec, base_offset, base_timestamp, timestamp_type)


def _normalize(r) -> dict[str, Any]:
    if isinstance(r, (ControlRecord, str)):
        return _item(None, None, (), None, None, parse_control(r))
    if isinstance(r, Record):
        return _item(r.key, r.value, r.headers, r.timestamp, r.offset, r.control, r.attributes)
    if isinstance(r, dict):
        ctrl = r.get("control")
        return _item(r.get("key"), r.get("value"), r.get("headers") or (), r.get("timestamp"), r.get("offset"),
                     parse_control(ctrl) if ctrl is not None else None, r.get("attributes", 0))
    if isinstance(r, tuple) and 2 <= len(r) <= 5:
        return _item(*r, *([None] * (5 - len(r))))
    raise EncodeError(f"cannot make a record of {r!r}")


def _item(key, value, headers, timestamp, offset, ctrl=None, attributes=0) -> dict[str, Any]:
    if isinstance(headers, dict):
        headers = headers.items()
    return {"key": _as_bytes(key), "value": _as_bytes(value), "timestamp": timestamp, "offset": offset,
            "headers": tuple((k if isinstance(k, str) else bytes(k).decode("utf-8", "surrogateescape"),
                              _as_bytes(v)) for k, v in (headers or ())),
            "control": ctrl, "attributes": attributes}


def _as_bytes(v) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def _build_v2(items, codec, base_offset, base_ts, ts_type, pid, epoch, seq, txn, control, ple) -> RecordBatch:
    if control and any(it["control"] is None for it in items):
        raise EncodeError("a control batch holds only control records (ControlRecord, 'commit', 'abort')")
    records = tuple(Record(key=it["key"], value=it["value"], headers=it["headers"], timestamp=it["timestamp"],
                           offset=it["offset"], offset_delta=it["offset"] - base_offset,
                           timestamp_delta=it["timestamp"] - base_ts, attributes=it["attributes"],
                           control=it["control"] if control else None) for it in items)
    draft = RecordBatch(base_offset=base_offset, partition_leader_epoch=ple, codec=codec.label,
                        timestamp_type=ts_type, transactional=txn, control=control, base_timestamp=base_ts,
                        max_timestamp=max((it["timestamp"] for it in items), default=base_ts),
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq, records=records)
    data = v2.encode(draft)
    return v2.decode(data, 0, len(data), max_inflated=max(DEFAULT_MAX_INFLATED, 2 * len(data)))


def _build_legacy(items, magic, codec, base_offset, base_ts, ts_type):
    log_append = ts_type == "log_append"
    ts_attr = legacy.TIMESTAMP_TYPE_BIT if magic == 1 and log_append else 0
    if codec == Codec.NONE:
        msgs = [LegacyMessage(offset=it["offset"], magic=magic, attributes=ts_attr, timestamp_type=ts_type,
                              timestamp=it["timestamp"] if magic == 1 else None, key=it["key"], value=it["value"])
                for it in items]
        return tuple(_roundtrip_legacy(m) for m in msgs)
    if not items:
        raise EncodeError("a compressed legacy wrapper needs at least one message")
    # KIP-31: magic 1 producers number inner messages from 0; magic 0 ones write absolute offsets
    inner = tuple(LegacyMessage(offset=it["offset"] - (base_offset if magic == 1 else 0), magic=magic,
                                timestamp=it["timestamp"] if magic == 1 else None, key=it["key"],
                                value=it["value"]) for it in items)
    wrapper_ts = (base_ts if log_append else max(it["timestamp"] for it in items)) if magic == 1 else None
    wrapper = LegacyMessage(offset=items[-1]["offset"], magic=magic, attributes=ts_attr, codec=codec.label,
                            timestamp_type=ts_type, timestamp=wrapper_ts, inner=inner)
    return _roundtrip_legacy(wrapper)


def _roundtrip_legacy(msg: LegacyMessage) -> LegacyMessage:
    data = legacy.encode(msg)
    return legacy.decode(data, 0, len(data), max_inflated=max(DEFAULT_MAX_INFLATED, 2 * len(data)))


# --- dict form --------------------------------------------------------------------------------------------

def from_dict(d: dict[str, Any]) -> RecordBatch | LegacyMessage | bytes:
    """The object a ``to_dict()`` form describes (partial/undecodable entries come back as their bytes)."""
    if d.get("partial") or d.get("raw") is not None:
        return bytes(d["raw"])
    magic = d.get("magic", 2)
    if magic == 2:
        base, base_ts = d.get("base_offset", 0), d.get("base_timestamp", -1)
        fields = {k: d[k] for k in _V2_FIELDS if k in d}
        return RecordBatch(**fields, records=tuple(_record(r, base, base_ts) for r in d.get("records", ())))
    if magic in (0, 1):
        fields = {k: d[k] for k in _LEGACY_FIELDS if k in d}
        inner = tuple(from_dict(m) for m in d.get("inner", ()))
        return LegacyMessage(**fields, inner=inner)
    raise EncodeError(f"cannot encode an entry with magic {magic!r}")


_V2_FIELDS = ("base_offset", "partition_leader_epoch", "attributes", "codec", "timestamp_type", "transactional",
              "control", "delete_horizon", "last_offset_delta", "base_timestamp", "max_timestamp",
              "producer_id", "producer_epoch", "base_sequence")
_LEGACY_FIELDS = ("offset", "magic", "attributes", "codec", "timestamp_type", "timestamp", "key", "value")


def _record(r: dict[str, Any], base_offset: int, base_ts: int) -> Record:
    offset, ts = r.get("offset"), r.get("timestamp")
    offset_delta = r.get("offset_delta", offset - base_offset if offset is not None else 0)
    ts_delta = r.get("timestamp_delta", ts - base_ts if ts is not None else 0)
    ctrl = r.get("control")
    return Record(key=_as_bytes(r.get("key")), value=_as_bytes(r.get("value")),
                  headers=tuple((k, _as_bytes(v)) for k, v in r.get("headers", ())), timestamp=ts,
                  offset=offset, offset_delta=offset_delta, timestamp_delta=ts_delta,
                  attributes=r.get("attributes", 0), control=parse_control(ctrl) if ctrl is not None else None)
