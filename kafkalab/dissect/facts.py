"""Facts about a decoded body that tables and summaries need: topics, partitions, errors, record counts.

They are found generically, by walking the body alongside its schema layout: topic names are the fields
Kafka marks with the ``topicName`` entity type, errors are fields named ``error_code`` (or ending in it),
records are RECORDS fields. No per-API code.
"""
from __future__ import annotations

from typing import Any, Iterator

from kafkalab.protocol.codec.layout import Layout, Slot, message_layout
from kafkalab.protocol.schema.error_codes import error_name
from kafkalab.protocol.schema.registry import api_spec

PARTITION_FIELDS = ("partition_index", "partition", "index", "partition_id")


def body_layout(api_key: int, kind: str, api_version: int) -> Layout | None:
    try:
        spec = api_spec(api_key).message(kind)
    except KeyError:
        return None
    return message_layout(spec, api_version) if spec.has_version(api_version) else None


def walk(layout: Layout, body: Any) -> Iterator[tuple[Slot, Any, dict]]:
    """(slot, value, containing dict) for every field present in ``body``, depth first, in wire order."""
    if not isinstance(body, dict):
        return
    for slot in layout.slots + layout.tagged:
        if slot.name not in body:
            continue
        value = body[slot.name]
        yield slot, value, body
        if slot.layout is None or value is None:
            continue
        if slot.kind == "struct":
            yield from walk(slot.layout, value)
        else:
            for item in value:
                yield from walk(slot.layout, item)


def topic_partitions(layout: Layout, body: Any) -> dict[str, list[int]]:
    """Topic name -> partitions mentioned under it (in order of appearance)."""
    found: dict[str, list[int]] = {}
    for slot, value, container in walk(layout, body):
        if slot.field.entity == "topicName" and isinstance(value, str):
            partitions = found.setdefault(value, [])
            partitions.extend(_partitions_below(container))
    return found


def _partitions_below(topic: dict) -> list[int]:
    out = []
    for value in topic.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    number = next((item[f] for f in PARTITION_FIELDS if isinstance(item.get(f), int)), None)
                    if number is not None:
                        out.append(number)
                elif isinstance(item, int) and not isinstance(item, bool):
                    out.append(item)
    return out


def first_error(layout: Layout, body: Any) -> tuple[int, str | None]:
    """The first non-zero error code anywhere in the body and its name, else (0, None)."""
    for slot, value, _ in walk(layout, body):
        if slot.name.endswith("error_code") and isinstance(value, int) and value != 0:
            return value, error_name(value)
    return 0, None


def record_count(layout: Layout, body: Any) -> int:
    total = 0
    for slot, value, _ in walk(layout, body):
        if slot.kind == "records" and isinstance(value, list):
            total += sum(len(getattr(batch, "records", ()) or ()) for batch in value)
    return total
