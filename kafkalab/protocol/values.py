"""Plain-data views of decoded values: what JSON output and ``to_dict()`` show.

UUIDs become canonical strings, bytes become lowercase hex, record batches become dicts (through their own
``to_dict``), tuples become lists. Decoded bodies themselves keep the rich types; this is only for display
and export.
"""
from __future__ import annotations

import uuid
from typing import Any


def to_plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_plain(to_dict())
    return repr(value)
