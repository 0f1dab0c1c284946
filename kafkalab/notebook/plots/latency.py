"""Request latency: percentiles by API and plots over time."""
from __future__ import annotations

from typing import Any, Iterable

from .common import PALETTE, STATS_COLUMNS, _origin, _plain_log_ticks, _pyplot, _seconds, _time_axis, exchanges_of


def latency_stats(source: Any, percentiles: Iterable[float] = (50, 90, 99), by: str = "api_name"):
    """Latency by API (or ``by`` another exchanges column): request count, answered and unanswered
    requests (acks=0 Produce requests expect no answer and are not counted as unanswered), responses
    carrying an error, mean and percentile latencies in ms, and the maximum; most requested first."""
    import pandas as pd

    table = exchanges_of(source)
    percentiles = list(percentiles)
    columns = STATS_COLUMNS + [f"p{_pct_label(p)}_ms" for p in percentiles] + ["max_ms"]
    if table.empty:
        return pd.DataFrame(columns=columns).rename_axis(by)
    rows = {}
    for key, group in table.groupby(by, sort=False, dropna=False):
        latency = group["latency_ms"].dropna().astype("float64")
        answered = int(group["response_frame"].notna().sum())
        expected = group["expects_response"].astype(bool)
        row = {"requests": len(group), "answered": answered,
               "unanswered": int((group["response_frame"].isna() & expected).sum()),
               "errors": int((group["error_code"].fillna(0) != 0).sum()),
               "mean_ms": latency.mean() if len(latency) else float("nan")}
        for p in percentiles:
            row[f"p{_pct_label(p)}_ms"] = latency.quantile(p / 100) if len(latency) else float("nan")
        row["max_ms"] = latency.max() if len(latency) else float("nan")
        rows[key] = row
    stats = pd.DataFrame.from_dict(rows, orient="index")[columns].rename_axis(by)
    return stats.sort_values("requests", ascending=False, kind="stable")


def _pct_label(p: float) -> str:
    return str(int(p)) if float(p).is_integer() else str(p).replace(".", "_")


def plot_latency(source: Any, ax=None, by: str = "api_name", logy: bool = True):
    """Latency of every answered request over time, one colour per API (log scale by default)."""
    plt = _pyplot()
    table = exchanges_of(source).dropna(subset=["latency_ms"])
    ax = ax if ax is not None else plt.subplots(figsize=(9, 3.6))[1]
    origin = _origin(table["request_time"])
    for i, (key, group) in enumerate(table.groupby(by, sort=False)):
        ax.scatter(_seconds(group["request_time"], origin), group["latency_ms"], s=14, label=str(key),
                   color=PALETTE[i % len(PALETTE)])
    if logy and len(table) and (table["latency_ms"] > 0).all():
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    ax.set_ylabel("latency (ms)")
    ax.set_title("Request latency")
    _time_axis(ax, origin)
    if len(table):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


def plot_latency_percentiles(source: Any, ax=None, percentiles: Iterable[float] = (50, 90, 99)):
    """Horizontal bars: latency percentiles (and the maximum) per API."""
    import numpy as np

    plt = _pyplot()
    stats = latency_stats(source, percentiles).dropna(subset=["max_ms"])
    names = [f"p{_pct_label(p)}_ms" for p in percentiles] + ["max_ms"]
    ax = ax if ax is not None else plt.subplots(figsize=(8, 0.5 + 0.45 * max(len(stats), 1)))[1]
    positions = np.arange(len(stats))
    height = 0.8 / len(names)
    for i, name in enumerate(names):
        ax.barh(positions + i * height, stats[name].to_numpy(dtype=float), height=height,
                label=name.removesuffix("_ms"), color=PALETTE[i % len(PALETTE)])
    ax.set_yticks(positions + height * (len(names) - 1) / 2, [str(k) for k in stats.index])
    ax.invert_yaxis()
    ax.set_xlabel("latency (ms)")
    ax.set_title("Latency percentiles by API")
    if len(stats):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax
