"""The I/O graph as SVG: frames per second and bytes per second, one stepped line per API.

The numbers are :func:`.throughput.io_graph`'s (the one home of the I/O graph); this only draws them, for
the explorer's Statistics panel, where a picture must come without matplotlib and stay small. Readable by
construction: at most six value ticks per axis, time ticks at least ``MIN_TICK_GAP`` px apart, the legend
in its own column (one row per API, never on the plot), and a look per API that no two of 120 APIs share
(:func:`.common.style_of`'s 20 colours, then the same colours with a dash pattern).
"""
from __future__ import annotations

import math
from html import escape
from typing import Any

from .common import PALETTE, style_of
from .throughput import auto_freq, io_graph

WIDTH, PLOT_HEIGHT = 560, 150       # px of one plot (frames/s, then bytes/s)
LEFT, RIGHT_GAP, TOP, AXIS = 64, 24, 22, 30
LEGEND_WIDTH, LEGEND_ROW = 220, 15
FONT, CHAR = 11, 6.6
MIN_TICK_GAP = 80                   # px between time labels
DASHES = ["", "6 3", "2 2", "8 3 2 3", "1 3", "10 4"]


def io_graph_svg(source: Any, freq: str | None = None, by: str = "api_name") -> str:
    """Frames/s and bytes/s per time bin and API of a source or frames table, as one SVG; each line and
    legend row is a ``<g class="io-series" data-api=... data-filter=...>`` (the filter shows that API's
    frames in the explorer)."""
    import pandas as pd

    from .common import frames_of

    frames = frames_of(source)
    if frames.empty:
        return _empty()
    times = pd.to_datetime(frames["time"], utc=True)
    freq = freq or auto_freq((times.max() - times.min()).total_seconds())
    table = io_graph(frames, freq, by)
    seconds = pd.Timedelta(freq).total_seconds()
    bins = pd.date_range(table["time"].min(), table["time"].max(), freq=freq)
    order = table.groupby(by)["frames"].sum().sort_values(ascending=False, kind="stable").index.tolist()
    series = {metric: table.pivot_table(index="time", columns=by, values=metric, aggfunc="sum", fill_value=0)
              .reindex(index=bins, columns=order, fill_value=0) / seconds for metric in ("frames", "bytes")}
    offsets = [(t - bins[0]).total_seconds() for t in bins]
    span = max(offsets[-1] + seconds, seconds)
    legend_height = TOP + LEGEND_ROW * len(order) + 8
    height = max(2 * (PLOT_HEIGHT + AXIS + TOP), legend_height)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="kafkalab-io" width="{WIDTH + LEGEND_WIDTH}" '
           f'height="{height}" viewBox="0 0 {WIDTH + LEGEND_WIDTH} {height}" font-size="{FONT}" '
           f'font-family="ui-monospace,Menlo,Consolas,monospace" data-freq="{freq}" data-apis="{len(order)}">',
           f"<title>I/O graph by {escape(by)}, bins of {freq}</title>",
           f'<rect x="0" y="0" width="{WIDTH + LEGEND_WIDTH}" height="{height}" fill="#ffffff"/>']
    for n, (metric, unit) in enumerate((("frames", "frames/s"), ("bytes", "bytes/s"))):
        top = n * (PLOT_HEIGHT + AXIS + TOP) + TOP
        out += _plot(series[metric], offsets, seconds, span, top, unit, by)
    out += _legend(order, by)
    out.append("</svg>")
    return "\n".join(out)


def _plot(values, offsets: list[float], bin_s: float, span: float, top: float, unit: str, by: str) -> list[str]:
    left, right, bottom = LEFT, WIDTH - RIGHT_GAP, top + PLOT_HEIGHT
    peak = float(values.to_numpy().max()) if values.size else 0.0
    step = nice_step(peak / 5 if peak else 1.0)
    high = step * max(1, math.ceil(peak / step))
    x = lambda s: left + (right - left) * s / span                       # noqa: E731
    y = lambda v: bottom - PLOT_HEIGHT * v / high                         # noqa: E731
    out = [f'<text x="{left}" y="{top - 8}" font-weight="bold" fill="#24292e">{unit}</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#8c959f"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#8c959f"/>']
    ticks = int(round(high / step))
    for k in range(ticks + 1):
        v = k * step
        out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{right}" y2="{y(v):.1f}" stroke="#eaeef2"/>')
        out.append(f'<text class="io-tick" x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
                   f'fill="#59636e">{_short(v)}</text>')
    tick = nice_step(span * MIN_TICK_GAP / (right - left))
    s = 0.0
    while s <= span + 1e-9:
        out.append(f'<text class="io-tick" x="{x(s):.1f}" y="{bottom + 15}" text-anchor="middle" '
                   f'fill="#59636e">{_short(s)}</text>')
        s += tick
    out.append(f'<text x="{right}" y="{bottom + AXIS - 2}" text-anchor="end" fill="#59636e">'
               f'seconds since the first frame</text>')
    for i, key in enumerate(values.columns):
        style, points = style_of(i), []
        for at, v in zip(offsets, values[key].to_numpy(dtype=float)):
            points += [f"{x(at):.1f},{y(v):.1f}", f"{x(at + bin_s):.1f},{y(v):.1f}"]
        dash = DASHES[(i // len(PALETTE)) % len(DASHES)]
        out.append(f'<g class="io-series" data-api="{escape(str(key))}" data-filter="{escape(api_filter(key, by))}">'
                   f'<polyline points="{" ".join(points)}" fill="none" stroke="{style["color"]}" stroke-width="1.6"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/></g>")
    return out


def _legend(order: list, by: str) -> list[str]:
    left = WIDTH + 4
    out = [f'<text x="{left}" y="{TOP - 8}" font-weight="bold" fill="#24292e">{escape(by)}</text>']
    limit = int((LEGEND_WIDTH - 32) / CHAR)
    for i, key in enumerate(order):
        style, y = style_of(i), TOP + LEGEND_ROW * i
        dash = DASHES[(i // len(PALETTE)) % len(DASHES)]
        name = str(key) if len(str(key)) <= limit else str(key)[:limit - 1] + "…"
        out.append(f'<g class="io-series io-legend" data-api="{escape(str(key))}" '
                   f'data-filter="{escape(api_filter(key, by))}" style="cursor:pointer">'
                   f'<line x1="{left}" y1="{y + 4}" x2="{left + 22}" y2="{y + 4}" stroke="{style["color"]}" '
                   f'stroke-width="2.4"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>"
                   f'<text x="{left + 28}" y="{y + 8}" fill="#24292e">{escape(name)}</text></g>')
    return out


def api_filter(key: Any, by: str = "api_name") -> str:
    """The display filter showing the frames of one API (or one value of ``by``)."""
    if isinstance(key, str):
        return f'{by} == "' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{by} == {key}"


def nice_step(raw: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``raw`` (> 0)."""
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))


def _short(value: float) -> str:
    """A tick label of at most six characters: 1.5k, 20M, 0.25."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def _empty() -> str:
    return ('<svg xmlns="http://www.w3.org/2000/svg" class="kafkalab-io" width="320" height="40" data-apis="0">'
            '<text x="8" y="24" font-size="11" fill="#59636e">I/O graph: no frames</text></svg>')
