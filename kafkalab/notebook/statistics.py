"""The explorer's Statistics panel as data: Conversations, the I/O graph and response times, JSON-able.

What it owns: turning the explorer's frames table into the rows the browser draws, each with the display
filter that clicking it applies (``stream == N``, ``api_name == "Produce"``). What it must not own: any
number. Conversations are :func:`.plots.conversations`, the I/O graph :func:`.plots.io_graph` (drawn by
:func:`.plots.io_svg.io_graph_svg`) and response times :func:`.plots.latency_stats` (which counts acks=0
Produce requests apart: no answer is expected, so they are not "unanswered"). The browser formats, never
computes. Works on whatever table the explorer holds: a capture's, or a followed broker's as it grows.
"""
from __future__ import annotations

import math
from typing import Any

from .plots import conversations, exchanges_from_frames, latency_stats
from .plots.io_svg import api_filter, io_graph_svg

LATENCY_COLUMNS = ["api", "requests", "answered", "unanswered", "acks0", "errors", "p50_ms", "p90_ms", "p99_ms",
                   "max_ms"]


def statistics(frames) -> dict[str, Any]:
    """``{"frames", "conversations": [...], "latency": [...], "io_svg": "<svg ...>"}`` for a frames table."""
    return {"frames": int(len(frames)), "conversations": conversation_rows(frames),
            "latency": latency_rows(frames), "io_svg": io_graph_svg(frames)}


def conversation_rows(frames) -> list[dict[str, Any]]:
    rows = []
    for row in conversations(frames).itertuples(index=False):
        rows.append({"stream": int(row.stream), "client": str(row.client), "server": str(row.server),
                     "frames": int(row.frames), "requests": int(row.requests), "responses": int(row.responses),
                     "client_bytes": int(row.client_bytes), "server_bytes": int(row.server_bytes),
                     "errors": int(row.errors), "first": row.first.isoformat(), "last": row.last.isoformat(),
                     "duration_s": float(row.duration_s), "filter": f"stream == {int(row.stream)}"})
    return rows


def latency_rows(frames) -> list[dict[str, Any]]:
    if not len(frames):
        return []
    stats = latency_stats(exchanges_from_frames(frames))
    rows = []
    for api, row in stats.iterrows():
        out: dict[str, Any] = {"api": str(api), "filter": api_filter(str(api))}
        for name in LATENCY_COLUMNS[1:]:
            value = row[name]
            out[name] = None if value is None or (isinstance(value, float) and math.isnan(value)) else \
                (float(value) if name.endswith("_ms") else int(value))
        rows.append(out)
    return rows
