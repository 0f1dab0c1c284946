"""An error timeline: Kafka error codes, malformed frames and CRC problems over time."""
from __future__ import annotations

from typing import Any

from .common import ERROR_COLOR, ERROR_COLUMNS, INFERRED_COLOR, _items, _origin, _pyplot, _seconds, _shorten, _time_axis, frames_of


def error_timeline(source: Any):
    """Everything that went wrong, in time order: responses with an error code (``category="error"``),
    frame diagnostics such as CRC mismatches, malformed fields or inferred APIs (``"diagnostic"``), and
    requests without a response in the data (``"no response"``; acks=0 Produce requests expect none and
    are left out). Columns: ERROR_COLUMNS."""
    import pandas as pd

    frames = frames_of(source)
    rows = []
    for row in frames.itertuples(index=False):
        base = (row.time, row.frame, row.stream, row.api_name, row.kind)
        if row.kind == "response" and not pd.isna(row.error_code) and row.error_code != 0:
            rows.append(base + ("error", row.error if isinstance(row.error, str) else f"error {row.error_code}"))
        for note in _items(row.diagnostics):
            rows.append(base + ("diagnostic", str(note)))
        if row.kind == "request" and pd.isna(row.response_frame):
            summary = row.summary if isinstance(row.summary, str) else ""
            if not (row.api_key == 0 and "acks=0" in summary):
                rows.append(base + ("no response", "no response in the data"))
    table = pd.DataFrame(rows, columns=ERROR_COLUMNS)
    table["time"] = pd.to_datetime(table["time"], utc=True)
    table = table.astype({"frame": "Int64", "stream": "Int64"})
    for name in ("api_name", "kind", "category", "detail"):
        table[name] = table[name].astype("string")
    return table.sort_values(["time", "frame"], kind="stable").reset_index(drop=True)


def plot_errors(source: Any, ax=None):
    """The error timeline: one row per API, a marker per problem (shape and colour by category); what went
    wrong is written once per row, right of the axes (each distinct problem with its count), so labels
    never pile up on each other however many problems there are."""
    import matplotlib.transforms as transforms

    plt = _pyplot()
    table = error_timeline(source)
    ax = ax if ax is not None else plt.subplots(figsize=(9, 0.9 + 0.4 * max(table["api_name"].nunique(), 1)))[1]
    apis = list(dict.fromkeys(table["api_name"].fillna("?")))
    markers = {"error": ("X", ERROR_COLOR), "diagnostic": ("D", "#d9730d"), "no response": ("o", INFERRED_COLOR)}
    origin = _origin(table["time"])
    for category, (marker, color) in markers.items():
        rows = table[table["category"] == category]
        if not rows.empty:
            ys = [apis.index(a) for a in rows["api_name"].fillna("?")]
            ax.scatter(_seconds(rows["time"], origin), ys, marker=marker, color=color, s=40, zorder=3)
    beside = transforms.blended_transform_factory(ax.transAxes, ax.transData)
    for y, api in enumerate(apis):
        rows = table[table["api_name"].fillna("?") == api]
        counts = rows.groupby(["category", "detail"], sort=False).size()
        parts = [f"{_shorten(str(detail), 34)} ×{n}" if n > 1 else _shorten(str(detail), 34)
                 for (_category, detail), n in counts.items()]
        text = "; ".join(parts[:2]) + (f"; +{len(parts) - 2} more" if len(parts) > 2 else "")
        color = markers.get(counts.index[0][0], ("", "#333"))[1] if len(counts) else "#333"
        ax.text(1.01, y, text, transform=beside, fontsize=7, color=color, va="center", clip_on=False)
    ax.set_yticks(range(len(apis)), apis)
    ax.set_ylim(-0.7, max(len(apis), 1) - 0.3)
    ax.set_title("Errors (X), diagnostics (◆) and unanswered requests (●)" if len(table)
                 else "Errors and diagnostics: none")
    _time_axis(ax, origin)
    return ax
