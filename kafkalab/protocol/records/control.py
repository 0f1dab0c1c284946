"""Control records: the transaction markers a coordinator writes into control batches (KIP-98).

A control batch (attribute bit 5) carries one record whose *key* is ``version int16, type int16``
(0 = ABORT, 1 = COMMIT) and whose *value* is ``version int16, coordinator_epoch int32``. Both are
fixed-width big-endian, unlike the varint record around them. Kafka readers ignore bytes after the known
fields of the value (it may grow new fields), so extra value bytes are tolerated here too.
"""
from __future__ import annotations

import struct

from ..errors import DecodeError
from .model import ControlRecord

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Raises DecodeError when the key or value is too short to be a marker."""
    if key is None or len(key) < _KEY.size:
        raise DecodeError(f"control record key needs {_KEY.size} bytes, has {0 if key is None else len(key)}")
    version, kind = _KEY.unpack_from(key)
    epoch = value_version = 0
    if value is not None:
        if len(value) < _VALUE.size:
            raise DecodeError(f"control record value needs {_VALUE.size} bytes, has {len(value)}")
        value_version, epoch = _VALUE.unpack_from(value)
    return ControlRecord(version=version, type=kind, coordinator_epoch=epoch, value_version=value_version)


def encode_control(control: ControlRecord) -> tuple[bytes, bytes]:
    """(key, value) bytes of a marker."""
    return (_KEY.pack(control.version, control.type),
            _VALUE.pack(control.value_version, control.coordinator_epoch))


def parse_control(spec) -> ControlRecord:
    """A ControlRecord from itself, its to_dict() form, or a type name ("commit"/"abort")."""
    if isinstance(spec, ControlRecord):
        return spec
    if isinstance(spec, str):
        return ControlRecord(type={"ABORT": 0, "COMMIT": 1}[spec.upper()])
    return ControlRecord(version=spec.get("version", 0), type=spec.get("type", 0),
                         coordinator_epoch=spec.get("coordinator_epoch", 0),
                         value_version=spec.get("value_version", 0))
