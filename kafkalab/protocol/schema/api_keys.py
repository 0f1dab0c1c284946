"""Kafka's API keys as named constants: ``ApiKey.PRODUCE`` rather than a bare ``0``.

The names come from the schema files themselves (``apis/000_produce.json`` gives ``PRODUCE = 0``), so adding an
API to the schema adds its constant and nothing here is kept by hand. Only the file names are read, not the
schemas, so importing this costs a directory listing. Members are ints: they go straight into request bodies,
dictionary keys and comparisons with decoded values.
"""
from __future__ import annotations

from enum import IntEnum
from importlib import resources


def _from_schema_files() -> list[tuple[str, int]]:
    members = []
    for entry in resources.files(__package__).joinpath("apis").iterdir():
        stem, _, suffix = entry.name.partition(".")
        number, _, snake = stem.partition("_")
        if suffix == "json" and number.isdigit():
            members.append((snake.upper(), int(number)))
    return sorted(members, key=lambda member: member[1])


ApiKey = IntEnum("ApiKey", _from_schema_files(), module=__name__)

__all__ = ["ApiKey"]
