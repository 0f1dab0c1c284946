"""Facts about a decoded body that tables and summaries need: topics, partitions, errors, record counts.

They are found generically from the schema: topic names are the fields Kafka marks with the ``topicName``
entity type, errors are fields named ``error_code`` (or ending in it), records are RECORDS fields. No per-API
code. Two implementations of the same rules:

* :func:`walk` and the functions over it visit every field of the body alongside its layout: the reference.
* :func:`body_facts` runs a function generated once per (API, kind, version) that visits only the paths
  leading to those fields (for a Heartbeat response: one ``error_code``; for a Fetch response: topics,
  partitions, error codes and records), which is what the capture reader calls for every frame.

Rules: the topics are in order of first appearance (string fields and arrays of strings marked
``topicName``), each with the partitions mentioned under it (items of the topic's arrays carrying
``partition_index``/``partition``/``index``/``partition_id``, or arrays of plain integers); the error is
the first non-zero error code in wire order (depth first); the record count adds up the record counts of
the batches (a v2 batch's header count: its records are decoded only when read).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, NamedTuple

from kafkalab.protocol.codec.layout import Layout, Slot, message_layout
from kafkalab.protocol.schema.error_codes import error_name
from kafkalab.protocol.schema.registry import api_spec

PARTITION_FIELDS = ("partition_index", "partition", "index", "partition_id")
INTEGER_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint16", "uint32"})


class Facts(NamedTuple):
    partitions: dict                     # topic name, then topic id (a UUID) where no name is given -> partitions
    error_code: int
    error: str | None
    record_count: int
    notes: list[str]                     # e.g. CRC mismatches of record batches
    topic_ids: dict | None               # topic id -> name, where a struct gives both (Metadata v10+...)


NO_FACTS = Facts({}, 0, None, 0, [], None)


def body_layout(api_key: int, kind: str, api_version: int) -> Layout | None:
    try:
        spec = api_spec(api_key).message(kind)
    except KeyError:
        return None
    return message_layout(spec, api_version) if spec.has_version(api_version) else None


# ---------------------------------------------------------------- the reference: walk everything

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
        elif slot.field.entity == "topicName" and isinstance(value, list):      # arrays of topic names
            for name in value:
                if isinstance(name, str):
                    found.setdefault(name, [])
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
            total += sum(_batch_count(batch) for batch in value)
    return total


def _batch_count(batch) -> int:
    count = getattr(batch, "record_count", 0)
    return count if isinstance(count, int) and count > 0 and not getattr(batch, "partial", False) else 0


# ---------------------------------------------------------------- the fast path: generated per layout

def body_facts(api_key: int, kind: str, api_version: int, body: Any) -> Facts:
    """All the facts of ``body`` in one pass over only the fields that can hold them."""
    fn = FACTS_BY_VERSION.get((api_key, kind, api_version), False)
    if fn is False:
        fn = facts_function(api_key, kind, api_version)
    if fn is None or body.__class__ is not dict:
        return NO_FACTS
    partitions, code, count, notes, topic_ids, by_id = fn(body)
    if by_id:
        partitions = {**partitions, **by_id}
    return Facts(partitions, code, error_name(code) if code else None, count, notes, topic_ids)


FACTS_BY_VERSION: dict[tuple[int, str, int], Callable | None] = {}


def facts_function(api_key: int, kind: str, api_version: int) -> Callable | None:
    """The generated facts function for one message version (cached), or None for unknown ones."""
    layout = body_layout(api_key, kind, api_version)
    fn = FACTS_BY_VERSION[(api_key, kind, api_version)] = build_facts(layout) if layout is not None else None
    return fn


def uses_topic_ids(api_key: int, kind: str, api_version: int) -> bool:
    """Whether a message version has a ``topic_id`` anywhere, so that describing it may depend on (or teach)
    the capture's topic id -> name map. Messages without one describe the same way whatever came before,
    which is what lets a reader reuse the description of a frame it has seen before."""
    key = (api_key, kind, api_version)
    known = _USES_TOPIC_IDS.get(key)
    if known is None:
        layout = body_layout(api_key, kind, api_version)
        known = _USES_TOPIC_IDS[key] = layout is None or _has_topic_id(layout)
    return known


_USES_TOPIC_IDS: dict[tuple[int, str, int], bool] = {}


def _has_topic_id(layout: Layout) -> bool:
    return any(_is_topic_id(s) or (s.layout is not None and _has_topic_id(s.layout))
               for s in layout.slots + layout.tagged)


def _is_topic(slot: Slot) -> bool:
    return slot.kind == "scalar" and slot.field.entity == "topicName"


def _is_topic_list(slot: Slot) -> bool:
    return slot.kind == "array" and slot.layout is None and slot.field.entity == "topicName"


def _is_topic_id(slot: Slot) -> bool:
    return slot.kind == "scalar" and slot.wire_type == "uuid" and slot.name == "topic_id"


def _is_error(slot: Slot) -> bool:
    return slot.kind == "scalar" and slot.name.endswith("error_code") and slot.wire_type in INTEGER_TYPES


def reads(slot: Slot) -> bool:
    """Whether the rules above read this field's value: a topic name or id, an error code, a partition
    number (by its name, wherever it is), records. Frames that differ in no such field (nor in their layout)
    have the same facts: what lets :mod:`.repeats` remember a description across offsets."""
    return (slot.name in PARTITION_FIELDS or slot.kind == "records" or _is_topic(slot) or _is_topic_list(slot)
            or _is_topic_id(slot) or _is_error(slot))


def _relevant(layout: Layout, memo: dict[int, bool]) -> bool:
    key = id(layout)
    if key not in memo:
        memo[key] = False           # cut cycles (there are none in Kafka's schemas, but be safe)
        memo[key] = any(_is_topic(s) or _is_topic_list(s) or _is_topic_id(s) or _is_error(s) or
                        s.kind == "records" or
                        (s.layout is not None and _relevant(s.layout, memo))
                        for s in layout.slots + layout.tagged)
    return memo[key]


def build_facts(layout: Layout) -> Callable:
    """Generate ``fn(body) -> (partitions, error_code, record_count, notes, topic_ids, by_id)`` for one
    layout. Topics named only by id (Fetch v13+...) go to ``by_id`` (UUID -> partitions, None when there
    are none); where a struct has both a name and an id, the pair goes to ``topic_ids`` (None when there are
    none) so readers can resolve ids later."""
    lines = ["def facts(body):", "    topics = {}", "    err = 0", "    count = 0", "    notes = []",
             "    ids = None", "    by_id = None"]
    memo: dict[int, bool] = {}
    counter = [0]

    def var(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def emit(ind: int, text: str) -> None:
        lines.append("    " * ind + text)

    def partitions_below(layout: Layout, d: str, out: str, ind: int) -> None:
        for slot in layout.slots + layout.tagged:
            if slot.kind != "array":
                continue
            if slot.layout is not None:
                names = {s.name for s in slot.layout.slots + slot.layout.tagged
                         if s.kind == "scalar" and s.wire_type in INTEGER_TYPES}
                candidates = [f for f in PARTITION_FIELDS if f in names]
                if not candidates:
                    continue
                item, x = var("it"), var("x")
                emit(ind, f"for {item} in {d}.get({slot.name!r}) or ():")
                for depth, name in enumerate(candidates):
                    emit(ind + 1 + depth, f"{x} = {item}.get({name!r})")
                    emit(ind + 1 + depth, f"if {x}.__class__ is int: {out}.append({x})")
                    if depth + 1 < len(candidates):
                        emit(ind + 1 + depth, "else:")
            elif slot.item_wire_type in INTEGER_TYPES:
                v = var("a")
                emit(ind, f"{v} = {d}.get({slot.name!r})")
                emit(ind, f"if {v}: {out}.extend({v})")

    def struct(layout: Layout, d: str, ind: int) -> None:
        slots = layout.slots + layout.tagged
        named = next((s.name for s in slots if _is_topic(s)), None)
        for slot in slots:
            name = slot.name
            if _is_topic_id(slot):
                t, ps = var("t"), var("ps")
                emit(ind, f"{t} = {d}.get({name!r})")
                if named is not None:              # name and id side by side: remember the pair
                    n = var("n")
                    emit(ind, f"{n} = {d}.get({named!r})")
                    emit(ind, f"if {t} is not None and {t}.int and {n}.__class__ is str:")
                    emit(ind + 1, "if ids is None: ids = {}")
                    emit(ind + 1, f"ids[{t}] = {n}")
                    continue
                emit(ind, f"if {t} is not None and {t}.int:")
                emit(ind + 1, "if by_id is None: by_id = {}")
                emit(ind + 1, f"{ps} = by_id.get({t})")
                emit(ind + 1, f"if {ps} is None: {ps} = by_id[{t}] = []")
                partitions_below(layout, d, ps, ind + 1)
            elif _is_topic_list(slot):
                t = var("t")
                emit(ind, f"for {t} in {d}.get({name!r}) or ():")
                emit(ind + 1, f"if {t}.__class__ is str and {t} not in topics: topics[{t}] = []")
            elif _is_topic(slot):
                t, ps = var("t"), var("ps")
                emit(ind, f"{t} = {d}.get({name!r})")
                emit(ind, f"if {t}.__class__ is str:")
                emit(ind + 1, f"{ps} = topics.get({t})")
                emit(ind + 1, f"if {ps} is None: {ps} = topics[{t}] = []")
                partitions_below(layout, d, ps, ind + 1)
            elif _is_error(slot):
                e = var("e")
                emit(ind, "if not err:")
                emit(ind + 1, f"{e} = {d}.get({name!r})")
                emit(ind + 1, f"if {e} and {e}.__class__ is int: err = {e}")
            elif slot.kind == "records":
                r, b = var("r"), var("b")
                emit(ind, f"{r} = {d}.get({name!r})")
                emit(ind, f"if {r}.__class__ is list:")
                emit(ind + 1, f"for {b} in {r}:")
                emit(ind + 2, f"count += _count({b})")
                emit(ind + 2, f"if not {b}.crc_ok and not {b}.partial: notes.append(_crc_note({b}))")
            elif slot.layout is not None and _relevant(slot.layout, memo):
                if slot.kind == "struct":
                    s = var("s")
                    emit(ind, f"{s} = {d}.get({name!r})")
                    emit(ind, f"if {s}.__class__ is dict:")
                    struct(slot.layout, s, ind + 1)
                else:
                    item = var("d")
                    emit(ind, f"for {item} in {d}.get({name!r}) or ():")
                    struct(slot.layout, item, ind + 1)

    struct(layout, "body", 1)
    lines.append("    return topics, err, count, notes, ids, by_id")
    namespace: dict[str, Any] = {"_count": _batch_count, "_crc_note": crc_note}
    exec(compile("\n".join(lines), "<kafkalab facts>", "exec"), namespace)  # noqa: S102 - our own generated code
    fn = namespace["facts"]
    fn.source = "\n".join(lines)
    return fn


def crc_note(batch) -> str:
    return f"CRC mismatch in the record batch at base offset {batch.base_offset}"
