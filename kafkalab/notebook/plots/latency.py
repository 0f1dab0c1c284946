"""Request latency: percentiles by API and plots over time."""
from __future__ import annotations

from typing import Any, Iterable

from kafkalab.protocol.messages import UNSUPPORTED_VERSION
from kafkalab.protocol.schema.headers import API_VERSIONS

from .common import PALETTE, STATS_COLUMNS, _origin, _plain_log_ticks, _pyplot, _seconds, _time_axis, exchanges_of, style_of


def latency_stats(source: Any, percentiles: Iterable[float] = (50, 90, 99), by: str = "api_name"):
    """Latency by API (or ``by`` another exchanges column): request count, answered requests, ``acks0``
    (Produce requests sent with acks=0: no answer is expected, so they are neither answered nor
    unanswered), unanswered requests, responses carrying an error, ``version_fallbacks`` (ApiVersions
    answered with UNSUPPORTED_VERSION, the normal KIP-511 negotiation, not counted as errors), mean and
    percentile latencies in ms, and the maximum; most requested first."""
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
        codes = group["error_code"].fillna(0)
        fallback = (group["api_key"] == API_VERSIONS) & (codes == UNSUPPORTED_VERSION)
        row = {"requests": len(group), "answered": answered, "acks0": int((~expected).sum()),
               "unanswered": int((group["response_frame"].isna() & expected).sum()),
               "errors": int(((codes != 0) & ~fallback).sum()), "version_fallbacks": int(fallback.sum()),
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
                   **style_of(i))
    if logy and len(table) and (table["latency_ms"] > 0).all():
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    ax.set_ylabel("latency (ms)")
    ax.set_title("Request latency")
    _time_axis(ax, origin)
    if len(table):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


def plot_latency_percentiles(source: Any, ax=None, percentiles: Iterable[float] = (50, 90, 99),
                             logx: bool | None = None):
    """Latency percentiles (and the maximum) per API: a marker per percentile on a line from the lowest to
    the highest. The axis is logarithmic (``logx=None``: when the values span more than 20x), so a 0.2 ms
    API and a 500 ms Fetch are both readable."""
    import numpy as np

    plt = _pyplot()
    stats = latency_stats(source, percentiles).dropna(subset=["max_ms"])
    names = [f"p{_pct_label(p)}_ms" for p in percentiles] + ["max_ms"]
    ax = ax if ax is not None else plt.subplots(figsize=(8, 0.7 + 0.32 * max(len(stats), 1)))[1]
    values = stats[names].to_numpy(dtype=float) if len(stats) else np.zeros((0, len(names)))
    positions = np.arange(len(stats))
    if len(stats):
        ax.hlines(positions, np.nanmin(values, axis=1), np.nanmax(values, axis=1), color="#c8ccd0", lw=2, zorder=1)
    for i, name in enumerate(names):
        ax.scatter(values[:, i], positions, s=30, zorder=2, label=name.removesuffix("_ms"),
                   color=PALETTE[i % len(PALETTE)], marker="|" if name == "max_ms" else "o")
    ax.set_yticks(positions, [str(k) for k in stats.index])
    ax.set_ylim(len(stats) - 0.5, -0.5)
    positive = values[values > 0]
    if logx is None:
        logx = bool(len(positive)) and positive.max() / positive.min() > 20
    if logx and len(positive):
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
    ax.set_xlabel("latency (ms)" + (", log scale" if logx else ""))
    ax.set_title("Latency percentiles by API" if len(stats) else "Latency percentiles by API: no answered requests")
    ax.grid(True, axis="x", alpha=0.3)
    if len(stats):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax
