"""Hypothesis strategies generated from the schema: a valid body for any (message, version)."""
from __future__ import annotations

from hypothesis import strategies as st

from kafkalab.protocol.codec.layout import Layout, Slot, message_layout
from kafkalab.protocol.records import build_batch

INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


SAMPLE_RECORD_SETS = [
    b"",
    [build_batch([{"key": b"k", "value": b"v", "headers": [("h", b"1")]}], codec="none")],
    [build_batch([{"key": None, "value": b"x" * 40}, {"key": b"k2", "value": None}], codec="gzip",
                 base_timestamp=1_700_000_000_000)],
    [build_batch([{"key": b"a", "value": b"b"}], magic=1, codec="snappy", base_timestamp=1_700_000_000_000)],
]


def scalar(wire_type: str, nullable: bool):
    base = wire_type.replace("compact_", "").replace("nullable_", "")
    if base in INT_RANGES:
        bits = INT_RANGES[base]
        strategy = st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    elif base == "uint16":
        strategy = st.integers(0, 0xFFFF)
    elif base == "uint32":
        strategy = st.integers(0, 0xFFFFFFFF)
    elif base == "float64":
        strategy = st.floats(allow_nan=False)
    elif base == "bool":
        strategy = st.booleans()
    elif base == "uuid":
        strategy = st.uuids()
    elif base == "string":
        strategy = TEXT
    elif base == "bytes":
        strategy = st.binary(max_size=12)
    else:
        raise AssertionError(wire_type)
    return st.one_of(st.none(), strategy) if nullable else strategy


def slot_strategy(slot: Slot, depth: int):
    if slot.kind == "scalar":
        return scalar(slot.wire_type, slot.nullable)
    if slot.kind == "records":
        choices = st.sampled_from(SAMPLE_RECORD_SETS)
        return st.one_of(st.none(), choices) if slot.nullable else choices
    if slot.kind == "struct":
        inner = layout_strategy(slot.layout, depth + 1)
        return st.one_of(st.none(), inner) if slot.nullable else inner
    item = layout_strategy(slot.layout, depth + 1) if slot.layout else scalar(slot.item_wire_type, False)
    items = st.lists(item, max_size=3 if depth < 2 else 1)
    return st.one_of(st.none(), items) if slot.nullable else items


def layout_strategy(layout: Layout, depth: int = 0):
    required = {s.name: slot_strategy(s, depth) for s in layout.slots}
    optional = {s.name: slot_strategy(s, depth) for s in layout.tagged}
    return st.fixed_dictionaries(required, optional=optional)


def body_strategy(spec, version: int):
    return layout_strategy(message_layout(spec, version))
