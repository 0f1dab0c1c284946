"""Kafka's API keys as named constants: ``ApiKey.PRODUCE`` rather than a bare ``0``.

The names come from the schema files themselves (``apis/000_produce.json`` gives ``PRODUCE = 0``), so adding an
API to the schema adds its constant and nothing here is kept by hand. Only the file names are read, not the
schemas, so importing this costs a directory listing. Members are ints: they go straight into request bodies,
dictionary keys and comparisons with decoded values.
"""
from __future__ import annotations

from enum import IntEnum
from importlib import resources


def schema_files() -> dict[int, object]:
    """API key -> its schema file, ascending: the key is the file name's number (``apis/000_produce.json``)."""
    files = {}
    for entry in resources.files(__package__).joinpath("apis").iterdir():
        stem, _, suffix = entry.name.partition(".")
        number, _, snake = stem.partition("_")
        if suffix == "json" and number.isdigit():
            files[int(number)] = entry
    return dict(sorted(files.items()))


def _members() -> list[tuple[str, int]]:
    """(``PRODUCE``, 0) for each schema file: the name's words after the number."""
    return [(entry.name.partition(".")[0].partition("_")[2].upper(), key) for key, entry in schema_files().items()]


ApiKey = IntEnum("ApiKey", _members(), module=__name__)

__all__ = ["ApiKey"]
