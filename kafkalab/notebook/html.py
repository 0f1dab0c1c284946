"""Static HTML views of frames, field trees and bytes: what a saved notebook shows without a kernel.

Everything here must survive JupyterLab's sanitizer on an *untrusted* reopen (and GitHub/nbviewer): inline
``style=`` attributes only, never ``<style>`` blocks or scripts; ``<details>``/``<summary>`` make trees
collapsible without JavaScript; ``<mark>`` shows the bytes of the selected field. Every piece of peer data
(names, values, client ids) goes through :func:`html.escape`.

This module knows Frames, FieldNodes and frames tables, and nothing about IPython or widgets.
"""
from __future__ import annotations

from html import escape
from typing import Any, Iterable

from kafkalab.dissect.text import describe_value
from kafkalab.protocol.tree import FieldNode

MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;line-height:1.45"
MUTED = "color:#6a737d"
DIAG = "color:#c62828;font-weight:600"
MARK = "background:#ffe08a;color:#1f2328;padding:0"       # dark text: readable in dark themes too
HIGHLIGHT = "background:#ffe08a;color:#1f2328"
INDENT = "margin-left:1.3em"
OPEN_DEPTH = 2            # containers shallower than this start expanded
MAX_NODES = 2000          # a static snapshot stays small; the live explorer shows everything
MAX_HEX_BYTES = 4096
WIDTH = 16
ARRAYS = ("array", "compact_array", "nullable_array", "compact_nullable_array")
TABLE_COLUMNS = ["frame", "time", "stream", "src", "dst", "kind", "api_name", "api_version", "correlation_id",
                 "size", "latency_ms", "error", "summary"]


# ---------------------------------------------------------------- field trees

def node_label(node: FieldNode) -> str:
    """The plain-text label of a node: ``name: value`` for leaves, ``name [count]`` for arrays."""
    label = node.name or node.path or "frame"
    if node.children:
        if node.wire_type in ARRAYS:
            count = sum(1 for c in node.children if not c.path.endswith("#count") and c.name != "count")
            return f"{label} [{count}]"
        return label
    return f"{label}: {describe_value(node)}"


def node_span(node: FieldNode) -> str:
    span = f"{node.wire_type} [{node.start}:{node.end}]"
    if node.buffer is not None:
        span += f" · {len(node.buffer)} inflated bytes below"
    return span


def tree_html(node: FieldNode, raw: bytes | None = None, highlight: str | None = None, *,
              max_nodes: int = MAX_NODES) -> str:
    """``node`` and its subtree as nested ``<details>``; with ``raw``, a hex dump follows in which the bytes
    of the node whose path is ``highlight`` are marked (in the inflated buffer when the node lives there)."""
    on_path = _ancestors_of(node, highlight)
    budget = [max_nodes]
    parts = [f'<div style="{MONO}">']
    _node_html(node, 0, highlight, on_path, budget, parts)
    if budget[0] < 0:
        hidden = sum(1 for _ in node.walk()) - max_nodes
        parts.append(f'<div style="{MUTED}">… {hidden} more nodes not shown '
                     f'(kafkalab.notebook.explore() shows them all)</div>')
    parts.append("</div>")
    if raw is not None:
        buffer, start, end = raw, None, None
        target = node.find(highlight) if highlight else None
        if target is not None:
            buffer, start, end = locate(node, target, raw)
        parts.append(hexdump_html(buffer, start, end))
    return "".join(parts)


def _ancestors_of(root: FieldNode, path: str | None) -> set[int]:
    """ids of the nodes on the way from ``root`` to the node named ``path`` (they are rendered open)."""
    if not path:
        return set()
    chain: list[FieldNode] = []

    def visit(node: FieldNode) -> bool:
        chain.append(node)
        if node.path == path or any(visit(c) for c in node.children):
            return True
        chain.pop()
        return False

    visit(root)
    return {id(n) for n in chain}


def _node_html(node: FieldNode, depth: int, highlight: str | None, on_path: set[int], budget: list[int],
               parts: list[str]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        return
    style = f' style="{HIGHLIGHT}"' if highlight and node.path == highlight else ""
    attrs = f' data-path="{escape(node.path)}" data-start="{node.start}" data-end="{node.end}"'
    head = (f'<span{style}>{escape(node_label(node))}</span> '
            f'<span style="{MUTED}">{escape(node_span(node))}</span>')
    diagnostics = "".join(f'<div style="{DIAG};{INDENT}">⚠ {escape(d)}</div>' for d in node.diagnostics)
    if not node.children:
        parts.append(f"<div{attrs}>{head}{diagnostics}</div>")
        return
    is_open = " open" if depth < OPEN_DEPTH or id(node) in on_path else ""
    parts.append(f"<details{is_open}{attrs}><summary>{head}</summary>{diagnostics}<div style=\"{INDENT}\">")
    for child in node.children:
        _node_html(child, depth + 1, highlight, on_path, budget, parts)
    parts.append("</div></details>")


def locate(root: FieldNode, target: FieldNode, raw: bytes) -> tuple[bytes, int, int]:
    """(buffer, start, end) of ``target``: the frame bytes, or the inflated buffer its offsets refer to."""
    buffer = raw

    def visit(node: FieldNode, current: bytes) -> bytes | None:
        if node is target:
            return current
        inner = node.buffer if node.buffer is not None else current
        for child in node.children:
            found = visit(child, inner)
            if found is not None:
                return found
        return None

    found = visit(root, buffer)
    return (found if found is not None else raw), target.start, target.end


# ---------------------------------------------------------------- bytes

def hexdump_html(raw: bytes, start: int | None = None, end: int | None = None, *,
                 max_bytes: int = MAX_HEX_BYTES) -> str:
    """Offset, hex and ASCII columns in a ``<pre>``; bytes in [start, end) are wrapped in ``<mark>``.
    Long buffers show a window of ``max_bytes`` (around the marked bytes when there are some)."""
    raw = bytes(raw)
    first = 0
    if len(raw) > max_bytes and start is not None and start >= max_bytes - WIDTH * 4:
        first = max(0, (start // WIDTH - 4) * WIDTH)
    last = min(len(raw), first + max_bytes)
    marked = (lambda i: start <= i < end) if start is not None and end is not None else (lambda i: False)
    lines = []
    if first:
        lines.append(f'<span style="{MUTED}">… {first} bytes before</span>')
    for row in range(first, last, WIDTH):
        chunk = raw[row:min(row + WIDTH, last)]
        hex_cells = _marked_run([f"{b:02x}" for b in chunk], row, marked, " ")
        hex_cells += "   " * (WIDTH - len(chunk))
        text = _marked_run([escape(chr(b)) if 32 <= b < 127 else "." for b in chunk], row, marked, "")
        lines.append(f'<span style="{MUTED}">{row:04x}</span>  {hex_cells}  {text}')
    if last < len(raw):
        lines.append(f'<span style="{MUTED}">… {len(raw) - last} more bytes</span>')
    data = f' data-start="{start}" data-end="{end}"' if start is not None and end is not None else ""
    return f'<pre style="{MONO};margin:4px 0"{data}>' + "\n".join(lines) + "</pre>"


def _marked_run(cells: list[str], row: int, marked, sep: str) -> str:
    """Join cells, wrapping each maximal run of marked cells in one ``<mark>``."""
    out, i = [], 0
    while i < len(cells):
        j = i
        if marked(row + i):
            while j < len(cells) and marked(row + j):
                j += 1
            out.append(f'<mark style="{MARK}">{sep.join(cells[i:j])}</mark>')
            i = j
        else:
            out.append(cells[i])
            i += 1
    return sep.join(out)


# ---------------------------------------------------------------- frames

def frame_title(frame: Any) -> str:
    """``#3 14:02:11.123456 10.0.0.1:5000 → 10.0.0.2:9092 Produce v9 request · …`` (plain text)."""
    when = frame.time.strftime("%H:%M:%S.%f") if getattr(frame, "ts", None) else ""
    arrow = f"{frame.src} → {frame.dst}" if frame.src or frame.dst else ""
    latency = f" · {frame.latency_ms:.3f} ms" if frame.latency_ms is not None else ""
    return " ".join(p for p in (f"#{frame.frame}", when, arrow, frame.summary + latency) if p)


def frame_html(frame: Any, highlight: str | None = None, *, bytes_open: bool = False) -> str:
    """Summary line, diagnostics, the field tree and the frame's bytes (collapsed unless ``bytes_open``)."""
    parts = [f'<div style="{MONO}" data-frame="{int(frame.frame)}">',
             f'<div style="font-weight:600">{escape(frame_title(frame))}</div>']
    parts += [f'<div style="{DIAG}">⚠ {escape(d)}</div>' for d in frame.diagnostics]
    tree = frame.tree
    if tree is not None:
        parts.append(tree_html(tree, None, highlight))
    parts.append(f"<details{' open' if bytes_open else ''}><summary>bytes ({len(frame.raw)})</summary>")
    target = tree.find(highlight) if tree is not None and highlight else None
    if target is not None:
        parts.append(hexdump_html(*locate(tree, target, frame.raw)))
    else:
        parts.append(hexdump_html(frame.raw))
    parts.append("</details></div>")
    return "".join(parts)


def frames_html(frames: Any, max_rows: int = 50, columns: Iterable[str] = TABLE_COLUMNS, *,
                selected: int | None = None) -> str:
    """A frames table (DataFrame with the data-model columns, or a list of Frames) as a plain HTML table of
    its first ``max_rows`` rows; the row of frame ``selected`` is highlighted."""
    table = _as_table(frames)
    columns = [c for c in columns if c in table.columns]
    cell = "padding:1px 8px;border-bottom:1px solid #e1e4e8;text-align:left;white-space:nowrap"
    parts = [f'<div style="{MONO}"><table style="border-collapse:collapse">',
             "<tr>" + "".join(f'<th style="{cell}">{escape(c)}</th>' for c in columns) + "</tr>"]
    for row in table.head(max_rows).itertuples(index=False):
        values = row._asdict()
        error = values.get("error")
        styles = [HIGHLIGHT] if selected is not None and values.get("frame") == selected else []
        styles += ["color:#c62828"] if isinstance(error, str) and error else []
        row_style = f' style="{";".join(styles)}"' if styles else ""
        parts.append(f"<tr{row_style}>" + "".join(f'<td style="{cell}">{escape(_cell_text(values[c]))}</td>'
                                                  for c in columns) + "</tr>")
    parts.append("</table>")
    if len(table) > max_rows:
        parts.append(f'<div style="{MUTED}">showing {max_rows} of {len(table)} frames</div>')
    parts.append("</div>")
    return "".join(parts)


# ---------------------------------------------------------------- the explorer's snapshot

LIVE_NOTE = (f'<div style="{MONO};{MUTED}">kafkalab Explorer (live view: run the cell to explore '
             f'interactively)</div>')
SNAPSHOT_SWITCH = (  # trusted outputs keep <style>; untrusted ones drop it and show both outputs, harmlessly
    "<style>"
    ".jp-OutputArea-child:has(.kl-snapshot):has(+ .jp-OutputArea-child :is(.kl-explorer,.kl-browser)){display:none}"
    ".jp-OutputArea-child:has(.kl-snapshot) + .jp-OutputArea-child:not(:has(.kl-explorer,.kl-browser)){display:none}"
    "</style>")


def snapshot_switch(snapshot: str) -> str:
    """The snapshot as an output of its own, next to the live view's: while the live explorer is drawn the
    snapshot hides; when the live view cannot be drawn (a saved notebook after a restart: "model not found")
    that error hides and the snapshot stays."""
    return f'<div class="kl-snapshot">{SNAPSHOT_SWITCH}{snapshot}</div>'


def explorer_snapshot_html(window: Any, total: int, first: int, frame: Any, highlight: str | None,
                           filter_text: str = "") -> str:
    """What the Explorer looks like, without a kernel: ``window``, the rows of the frame list from row
    ``first`` of ``total`` (around the selected frame), then that frame's tree and bytes, the selected field
    marked in both."""
    number = int(frame.frame) if frame is not None else None
    head = f"kafkalab Explorer · {total} frames"
    head += f" matching {filter_text!r}" if filter_text else ""
    head += f" · frame {number} selected" if number is not None else ""
    shown = f"rows {first + 1}..{first + len(window)} of {total}" if len(window) < total else f"{total} rows"
    parts = [f'<div style="{MONO}"><div style="font-weight:600">{escape(head)} '
             f'<span style="{MUTED};font-weight:400">(a snapshot: run the cell for the live explorer)</span></div>',
             f'<div style="max-height:16em;overflow:auto">'
             f'{frames_html(window, len(window), selected=number)}</div>',
             f'<div style="{MUTED}">{escape(shown)}</div>']
    if frame is not None:
        parts.append(frame_html(frame, highlight, bytes_open=True))
    parts.append("</div>")
    return "".join(parts)


def _as_table(frames: Any):
    if hasattr(frames, "columns") and hasattr(frames, "itertuples"):
        return frames
    from kafkalab.dissect.frames_table import frames_table
    return frames_table(list(frames))


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    try:
        import pandas as pd
        if not isinstance(value, (list, tuple)) and pd.isna(value):
            return ""
        if isinstance(value, pd.Timestamp):
            return value.strftime("%H:%M:%S.%f")
    except (TypeError, ValueError):
        pass
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


# ---------------------------------------------------------------- plain values (undissected messages, batches)

def value_html(value: Any, label: str = "", depth: int = 0) -> str:
    """Nested dicts/lists (a decoded body) as ``<details>``; scalars as ``label: value``."""
    prefix = f"{escape(label)}: " if label else ""
    if isinstance(value, dict) or (isinstance(value, (list, tuple)) and value and
                                   isinstance(value[0], (dict, list, tuple))):
        items = value.items() if isinstance(value, dict) else ((f"[{i}]", v) for i, v in enumerate(value))
        is_open = " open" if depth < OPEN_DEPTH else ""
        inner = "".join(value_html(v, str(k), depth + 1) for k, v in items)
        size = f" [{len(value)}]" if isinstance(value, (list, tuple)) else ""
        return (f"<details{is_open}><summary>{escape(label or 'body')}{size}</summary>"
                f'<div style="{INDENT}">{inner}</div></details>')
    if isinstance(value, (bytes, bytearray)):
        text = value.hex()
        text = (text if len(text) <= 80 else text[:80] + "…") + f" ({len(value)} bytes)"
    else:
        text = repr(value) if isinstance(value, str) else str(value)
        text = text if len(text) <= 200 else text[:200] + "…"
    return f"<div>{prefix}{escape(text)}</div>"
