"""Text views of a dissected frame: an indented field tree like ``tshark -V`` and a hex dump like ``-x``."""
from __future__ import annotations

from datetime import datetime, timezone

from kafkalab.protocol.records.batch import CODEC_MASK, CONTROL_BIT, DELETE_HORIZON_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from kafkalab.protocol.records.compression import codec_name
from kafkalab.protocol.schema.enum_fields import field_enum
from kafkalab.protocol.schema.error_codes import error_name
from kafkalab.protocol.schema.registry import api_name
from kafkalab.protocol.tree import FieldNode

MAX_VALUE_CHARS = 80
EPOCH_MS = (946_684_800_000, 4_102_444_800_000)      # 2000-01-01 .. 2100-01-01: a millisecond timestamp


def describe_value(node: FieldNode) -> str:
    """A leaf's value as one short string, with error names spelled out."""
    value = node.value
    if isinstance(value, (bytes, bytearray)):
        text = value.hex()
        shown = text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"
        printable = _printable(value)
        return f"{shown} {printable} ({len(value)} bytes)" if printable else f"{shown} ({len(value)} bytes)"
    if node.name == "error_code" and isinstance(value, int):
        return f"{value} ({error_name(value)})" if value else "0"
    text = repr(value) if isinstance(value, str) else str(value)
    text = text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"
    meaning = value_meaning(node)
    return f"{text} ({meaning})" if meaning else text


def value_meaning(node: FieldNode) -> str | None:
    """What a raw number stands for, from the schema: an API key's name, an enum's name, a batch's attribute
    bits, a millisecond timestamp's UTC date; None when it is just a number."""
    value, name = node.value, node.name
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if name == "request_api_key":
        return api_name(value)
    if name == "attributes" and node.wire_type in ("int16", "int8") and (value or node.wire_type == "int16"):
        return _attribute_bits(value, batch=node.wire_type == "int16")
    if name.endswith("timestamp") and EPOCH_MS[0] <= value < EPOCH_MS[1]:
        return datetime.fromtimestamp(value / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
    table = field_enum(name)
    return table.label(value) if table is not None else None


def _attribute_bits(value: int, *, batch: bool) -> str:
    """A record batch's (int16) or a v0/v1 message's (int8) attributes: codec, timestamp type, flags."""
    bits = [codec_name(value & CODEC_MASK), "LogAppendTime" if value & TIMESTAMP_TYPE_BIT else "CreateTime"]
    if batch:
        bits += [flag for bit, flag in ((TRANSACTIONAL_BIT, "transactional"), (CONTROL_BIT, "control"),
                                        (DELETE_HORIZON_BIT, "delete horizon")) if value & bit]
    return ", ".join(bits)


def _printable(value: bytes) -> str | None:
    """Short byte strings that are readable text are shown as text too, the way a hex pane's ASCII column is."""
    if not value or len(value) > MAX_VALUE_CHARS:
        return None
    try:
        text = bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return repr(text) if text.isprintable() else None


def format_tree(root: FieldNode, *, offsets: bool = True) -> str:
    """Render ``root`` and everything below it, one node per line."""
    lines: list[str] = []
    _render(root, 0, lines, offsets)
    return "\n".join(lines)


def _render(node: FieldNode, depth: int, lines: list[str], offsets: bool) -> None:
    label = node.name or node.path or "frame"
    if node.children:
        text = f"{label}"
        if node.wire_type in ("array", "compact_array", "nullable_array", "compact_nullable_array"):
            count = sum(1 for c in node.children if not c.path.endswith("#count"))
            text += f" [{count}]"
    else:
        text = f"{label}: {describe_value(node)}"
    text = "    " * depth + text
    if offsets:
        text = f"{text:<72} {node.wire_type} [{node.start}:{node.end}]"
    if node.buffer is not None:
        text += f" (offsets below are within the {len(node.buffer)} inflated bytes)"
    lines.append(text.rstrip())
    for diagnostic in node.diagnostics:
        lines.append("    " * (depth + 1) + f"[!] {diagnostic}")
    for child in node.children:
        _render(child, depth + 1, lines, offsets)


def hexdump(data: bytes, *, start: int = 0, end: int | None = None, width: int = 16) -> str:
    """Offset, hex and ASCII columns; bytes in [start, end) are bracketed to show a selected field."""
    end = len(data) if end is None else end
    lines = []
    for row in range(0, len(data), width):
        chunk = data[row:row + width]
        cells = []
        for i, byte in enumerate(chunk):
            mark = start <= row + i < end and (start, end) != (0, len(data))
            cells.append(f"[{byte:02x}]" if mark else f" {byte:02x} ")
        ascii_text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{row:04x}  {''.join(cells):<{width * 4}}  {ascii_text}")
    return "\n".join(lines)
