"""Text views of a dissected frame: an indented field tree like ``tshark -V`` and a hex dump like ``-x``."""
from __future__ import annotations

from kafkalab.protocol.schema.error_codes import error_name
from kafkalab.protocol.tree import FieldNode

MAX_VALUE_CHARS = 80


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
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"


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
