"""Version personas: ``Broker(emulate="2.8")`` advertises and enforces the API ranges of a Kafka release.

The ranges are data (``personas.json``: per release, api_key -> [min, max] as that release's brokers answer
ApiVersions; its ``about`` names the source). A persona clamps the handler registry: each API the broker serves
gets the intersection of its own range and the release's; APIs the release lacks (or whose ranges do not meet)
leave the registry. The dispatcher then does the rest unchanged: ApiVersions advertises the clamped table,
a version outside it gets UNSUPPORTED_VERSION, and an API the release lacks closes the connection, as brokers
of that age did on an API key they did not know.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..handlers import Handler

_DATA = Path(__file__).with_name("personas.json")


@lru_cache(maxsize=1)
def releases() -> dict[str, dict[int, tuple[int, int]]]:
    """Every release the persona table knows, oldest first: {"2.8": {api_key: (min, max)}}."""
    data = json.loads(_DATA.read_text(encoding="utf-8"))["releases"]
    return {name: {int(k): (lo, hi) for k, (lo, hi) in table.items()} for name, table in data.items()}


def release_name(emulate: str) -> str:
    """The table's name for a release: "2.8" and "2.8.1" give "2.8", "0.10" gives "0.10.0"."""
    known = releases()
    text = str(emulate).strip()
    parts = text.split(".")
    for candidate in (text, ".".join(parts[:2]), ".".join(parts[:3]), text + ".0"):
        if candidate in known:
            return candidate
    raise ValueError(f"no persona for Kafka {emulate!r}; known releases: {', '.join(known)}")


def persona_registry(registry: dict[int, Handler], emulate: str) -> dict[int, Handler]:
    """The registry as a broker of release ``emulate`` would serve it."""
    ranges = releases()[release_name(emulate)]
    clamped = {}
    for key, handler in registry.items():
        if key not in ranges:
            continue
        low, high = max(handler.min_version, ranges[key][0]), min(handler.max_version, ranges[key][1])
        if low <= high:
            clamped[key] = Handler(key, low, high, handler.handle)
    return clamped
