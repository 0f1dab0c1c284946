"""Rich-display hooks: the functions the model classes' ``_repr_html_`` / ``_repr_mimebundle_`` call.

The classes (Frame, FieldNode, Request/Response, RecordBatch, Capture, Broker) keep one-line methods that
import from here lazily, so importing the core never imports this module. Each function returns static HTML
(see :mod:`kafkalab.notebook.html`); the mimebundle helper pairs it with the object's text form.
"""
from __future__ import annotations

from html import escape
from typing import Any

from . import html as H

MAX_RECORDS = 50


def frame_repr_html(frame: Any) -> str:
    return H.frame_html(frame)


def node_repr_html(node: Any) -> str:
    return H.tree_html(node)


def message_repr_html(message: Any) -> str:
    """A Request/Response: its annotated tree when it has one, else the decoded body."""
    head = f"{message.api_name} v{message.api_version} {message.kind} · correlation_id={message.correlation_id}"
    client = getattr(message, "client_id", None)
    if client is not None:
        head += f" · client_id={client!r}"
    parts = [f'<div style="{H.MONO}"><div style="font-weight:600">{escape(head)}</div>']
    parts += [f'<div style="{H.DIAG}">⚠ {escape(d)}</div>' for d in message.diagnostics]
    if message.tree is not None:
        parts.append(H.tree_html(message.tree))
    elif message.body is not None:
        parts.append(H.value_html(message.body, "body"))
    parts.append("</div>")
    return "".join(parts)


def batch_repr_html(batch: Any) -> str:
    """A RecordBatch: its header line and a table of its records (key, value, headers)."""
    cell = "padding:1px 8px;border-bottom:1px solid #e1e4e8;text-align:left"
    parts = [f'<div style="{H.MONO}"><div style="font-weight:600">{escape(repr(batch))}</div>']
    parts += [f'<div style="{H.DIAG}">⚠ {escape(d)}</div>' for d in getattr(batch, "diagnostics", ())]
    records = list(getattr(batch, "records", ()))
    if records:
        names = ("offset", "timestamp", "key", "value", "headers")
        parts.append('<table style="border-collapse:collapse"><tr>'
                     + "".join(f'<th style="{cell}">{n}</th>' for n in names) + "</tr>")
        for record in records[:MAX_RECORDS]:
            values = [getattr(record, n, None) for n in names]
            parts.append("<tr>" + "".join(f'<td style="{cell}">{escape(_short(v))}</td>' for v in values)
                         + "</tr>")
        parts.append("</table>")
        if len(records) > MAX_RECORDS:
            parts.append(f'<div style="{H.MUTED}">showing {MAX_RECORDS} of {len(records)} records</div>')
    parts.append("</div>")
    return "".join(parts)


def source_repr_html(source: Any, max_rows: int = 50) -> str:
    """A Capture or a Broker: its one-line repr and its frames table."""
    return (f'<div style="{H.MONO}"><div style="font-weight:600">{escape(repr(source))}</div>'
            + H.frames_html(source.frames, max_rows=max_rows) + "</div>")


def mimebundle(obj: Any, html: str, text: str | None = None) -> dict[str, str]:
    """``{"text/plain": ..., "text/html": ...}`` for a ``_repr_mimebundle_`` (text defaults to ``repr``)."""
    return {"text/plain": repr(obj) if text is None else text, "text/html": html}


def _short(value: Any, limit: int = 60) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
            if text.isprintable():
                return text if len(text) <= limit else text[:limit] + "…"
        except UnicodeDecodeError:
            pass
        hex_text = bytes(value).hex()
        return hex_text if len(hex_text) <= limit else hex_text[:limit] + "…"
    if isinstance(value, (list, tuple)):
        pairs = (f"{_short(p[0], 20)}={_short(p[1], 20)}" if isinstance(p, tuple) and len(p) == 2 else _short(p)
                 for p in value)
        return ", ".join(pairs)
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


HTML_FORMATTERS = (  # (module, class name, function): rich HTML for kafkalab's objects in IPython
    ("kafkalab.dissect.frame", "Frame", frame_repr_html),
    ("kafkalab.protocol.tree", "FieldNode", node_repr_html),
    ("kafkalab.protocol.messages", "Request", message_repr_html),
    ("kafkalab.protocol.messages", "Response", message_repr_html),
    ("kafkalab.protocol.records.model", "RecordBatch", batch_repr_html),
    ("kafkalab.capture.capture", "Capture", source_repr_html),
    ("kafkalab.broker.runtime", "Broker", source_repr_html),
)


def register(shell: Any) -> None:
    """Teach an IPython shell to show kafkalab's objects as static HTML. Registered by type *name*, so the
    core classes need no display code and nothing is imported until an object is shown."""
    formatter = shell.display_formatter.formatters["text/html"]
    for module, name, function in HTML_FORMATTERS:
        formatter.for_type_by_name(module, name, function)


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext kafkalab.notebook.display`` (importing kafkalab inside IPython does it already)."""
    register(shell)
