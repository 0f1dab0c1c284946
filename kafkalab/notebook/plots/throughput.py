"""Records and bytes per topic over time, produced or fetched."""
from __future__ import annotations

from typing import Any

from .common import PALETTE, UNKNOWN_TOPIC, style_of, _items, _origin, _pandas, _pyplot, _seconds, _time_axis, frames_of, records_of


def throughput(source: Any, freq: str = "1s", direction: str = "produce", frames: Any = None):
    """Records and payload bytes (key + value + header keys and values, uncompressed) per topic and time
    bin. ``direction``: "produce" (records in Produce requests: what was written), "fetch" (records in
    Fetch responses: what was read) or "both". Times are the frames' capture times when a frames table
    is at hand (a source, or ``frames=``), else the records' own timestamps.

    Columns: time (bin start, UTC), direction, topic, records, bytes. Fetch responses that name topics by
    id (Fetch v13+) carry no topic name in the records table; they are counted under "(topic id)"."""
    import pandas as pd

    records = records_of(source)
    if frames is None and _pandas(source) is None:
        try:
            frames = frames_of(source)
        except TypeError:
            frames = None
    kinds = {"produce": ["request"], "fetch": ["response"], "both": ["request", "response"]}
    if direction not in kinds:
        raise ValueError(f"direction must be 'produce', 'fetch' or 'both', not {direction!r}")
    records = records[records["kind"].isin(kinds[direction]) & ~records["control"].astype(bool)]
    columns = ["time", "direction", "topic", "records", "bytes"]
    if records.empty:
        return pd.DataFrame(columns=columns)
    if frames is not None:
        when = frames_of(frames).set_index("frame")["time"]
        time = pd.to_datetime(records["frame"].map(when), utc=True)
    else:
        time = pd.to_datetime(records["timestamp"], utc=True)
    data = pd.DataFrame({
        "time": time,
        "direction": records["kind"].map({"request": "produce", "response": "fetch"}),
        "topic": records["topic"].astype("string").fillna(UNKNOWN_TOPIC),
        "bytes": [_payload_size(k, v, h) for k, v, h in zip(records["key"], records["value"], records["headers"])],
    })
    data["records"] = 1
    grouped = (data.groupby([pd.Grouper(key="time", freq=freq), "direction", "topic"])[["records", "bytes"]]
               .sum().reset_index())
    grouped = grouped[grouped["records"] > 0]
    return grouped[columns].astype({"records": "int64", "bytes": "int64"}).reset_index(drop=True)


def _payload_size(key, value, headers) -> int:
    size = len(key) if isinstance(key, (bytes, bytearray)) else 0
    size += len(value) if isinstance(value, (bytes, bytearray)) else 0
    for item in _items(headers):
        try:       # the records table's {"key", "value"} structs; (key, value) pairs also accepted
            name, data = (item.get("key"), item.get("value")) if isinstance(item, dict) else item
        except (TypeError, ValueError):
            continue
        size += len(name.encode() if isinstance(name, str) else name or b"")
        size += len(data) if isinstance(data, (bytes, bytearray)) else 0
    return size


BINS = ["1ms", "2ms", "5ms", "10ms", "20ms", "50ms", "100ms", "200ms", "500ms", "1s", "2s", "5s", "10s",
        "30s", "1min", "2min", "5min", "10min", "30min", "1h"]


def auto_freq(span_seconds: float, bins: int = 30) -> str:
    """The round bin width that cuts ``span_seconds`` into about ``bins`` bars (at least 1 ms)."""
    import pandas as pd

    target = span_seconds / bins
    return next((b for b in BINS if pd.Timedelta(b).total_seconds() >= target), BINS[-1])


def plot_throughput(source: Any, freq: str | None = None, metric: str = "records", direction: str = "produce",
                    ax=None, frames: Any = None):
    """Records (``metric="records"``) or payload bytes (``"bytes"``) per time bin, stacked by topic. The
    bin width defaults to one that gives about 30 bars over the data's time span."""
    import pandas as pd

    plt = _pyplot()
    if freq is None:
        fine = throughput(source, "1ms", direction, frames)
        span = (fine["time"].max() - fine["time"].min()).total_seconds() if len(fine) else 0.0
        freq = auto_freq(span)
    table = throughput(source, freq, direction, frames)
    ax = ax if ax is not None else plt.subplots(figsize=(9, 3.4))[1]
    series = table.pivot_table(index="time", columns=["direction", "topic"], values=metric, aggfunc="sum",
                               fill_value=0)
    origin = _origin(series.index.to_series())
    for i, column in enumerate(series.columns):
        label = column[1] if direction != "both" else f"{column[1]} ({column[0]})"
        ax.bar(_seconds(series.index.to_series(), origin), series[column].to_numpy(dtype=float),
               width=pd.Timedelta(freq).total_seconds() * 0.9, align="edge", label=label, alpha=0.75,
               bottom=series[series.columns[:i]].sum(axis=1).to_numpy(dtype=float) if i else None,
               color=style_of(i)["color"], hatch=None if i < len(PALETTE) else "//")
    ax.set_ylabel(f"{metric} per {freq}")
    ax.set_title(f"Throughput per topic ({direction})" if len(series.columns) else
                 f"Throughput per topic ({direction}): no records")
    _time_axis(ax, origin)
    if len(series.columns):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


def io_graph(source: Any, freq: str | None = None, by: str = "api_name"):
    """Wireshark's I/O graph as a table: frames and bytes (``size``) per time bin and API (or ``by`` another
    frames column). ``freq`` defaults to a bin width giving about 30 bins over the data's span.
    Columns: time (bin start, UTC), the ``by`` column, frames, bytes."""
    import pandas as pd

    frames = frames_of(source)
    columns = ["time", by, "frames", "bytes"]
    if frames.empty:
        return pd.DataFrame(columns=columns)
    times = pd.to_datetime(frames["time"], utc=True)
    freq = freq or auto_freq((times.max() - times.min()).total_seconds())
    data = pd.DataFrame({"time": times, by: frames[by].astype("string").fillna("?"), "frames": 1,
                         "bytes": frames["size"].fillna(0).astype("int64")})
    grouped = data.groupby([pd.Grouper(key="time", freq=freq), by])[["frames", "bytes"]].sum().reset_index()
    return grouped[grouped["frames"] > 0][columns].reset_index(drop=True)


def plot_io(source: Any, freq: str | None = None, metric: str = "frames", by: str = "api_name", ax=None):
    """The I/O graph: frames (``metric="frames"``) or bytes per time bin, one line per API."""
    plt = _pyplot()
    table = io_graph(source, freq, by)
    ax = ax if ax is not None else plt.subplots(figsize=(9, 3.4))[1]
    origin = _origin(table["time"])
    for i, (key, rows) in enumerate(table.groupby(by, sort=False)):
        style = style_of(i)
        ax.plot(_seconds(rows["time"], origin), rows[metric].to_numpy(dtype=float), drawstyle="steps-post",
                marker=style["marker"], markersize=3, color=style["color"], label=str(key))
    ax.set_ylabel(f"{metric} per bin")
    ax.set_ylim(bottom=0)
    ax.set_title("I/O graph by API" if len(table) else "I/O graph: no frames")
    _time_axis(ax, origin)
    if len(table):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax
