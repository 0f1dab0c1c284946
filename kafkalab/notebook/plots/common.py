"""Shared plumbing of the plots: turning any source (a table, a Capture, the broker, frames) into the
data-model tables, time axes, and matplotlib set-up (imported on first use)."""
from __future__ import annotations

from typing import Any


PALETTE = ["#1f6fb2", "#d9730d", "#2e8b57", "#8e44ad", "#b8860b", "#17a2b8", "#c2185b", "#5d6d7e",
           "#6b8e23", "#a0522d", "#0b3c5d", "#f2a541", "#76b041", "#d4a5e8", "#e4572e", "#7fb7be",
           "#5b2333", "#a8a8a8", "#2d5d2a", "#ff8fab"]
MARKERS = ["o", "s", "^", "D", "v", "P"]


def style_of(i: int) -> dict:
    """Colour and marker of the ``i``-th series: 20 colours, then the colours again with another marker,
    so no two of 120 series look alike."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[(i // len(PALETTE)) % len(MARKERS)]}


ERROR_COLOR = "#c62828"


INFERRED_COLOR = "#7f8c8d"


OFFSET_COLUMNS = ["time", "frame", "stream", "source", "kind", "group", "topic", "partition", "offset"]


LAG_COLUMNS = ["time", "frame", "group", "topic", "partition", "high_watermark", "committed", "lag"]


ERROR_COLUMNS = ["time", "frame", "stream", "api_name", "kind", "category", "detail"]


STATS_COLUMNS = ["requests", "answered", "acks0", "unanswered", "errors", "version_fallbacks", "mean_ms"]


UNKNOWN_TOPIC = "(topic id)"


def _pandas(table: Any):
    """A pandas DataFrame from pandas, Spark (``toPandas``) or Arrow (``to_pandas``) tables; else None."""
    import pandas as pd

    if isinstance(table, pd.DataFrame):
        return table
    for name in ("toPandas", "to_pandas"):
        convert = getattr(table, name, None)
        if callable(convert):
            return convert()
    return None


def _frame_objects(source: Any) -> list | None:
    """The Frame objects of a source (list of Frames, Capture, Broker, Journal), or None for tables."""
    from kafkalab.dissect.frame import Frame

    if isinstance(source, Frame):
        return [source]
    if isinstance(source, (list, tuple)):
        return list(source) if all(isinstance(f, Frame) for f in source) else None
    journal = getattr(source, "journal", None)            # Broker
    if isinstance(journal, list):
        return journal
    frame_list = getattr(source, "frame_list", None)      # Capture
    if isinstance(frame_list, list):
        return frame_list
    frames = getattr(source, "frames", None)              # Journal.frames()
    if callable(frames):
        result = frames()
        if isinstance(result, list):
            return result
    return None


def frames_of(source: Any):
    """The ``frames`` table of a source or table (see the module docstring)."""
    table = _pandas(source)
    if table is not None:
        return table
    own = getattr(source, "frames", None)                 # Capture (cached), Broker, Explorer
    if own is not None and not callable(own):
        table = _pandas(own)
        if table is not None:
            return table
    objects = _frame_objects(source)
    if objects is not None:
        from kafkalab.dissect.frames_table import frames_table
        return frames_table(objects)
    if table is None:
        raise TypeError(f"expected a frames table or a Capture, Broker or list of Frames, not "
                        f"{type(source).__name__}")
    return table


def exchanges_of(source: Any):
    """The ``exchanges`` table: one row per request with its response (a source's own table when it has
    one, else derived from the frames table, so the broker journal and Spark frames work too)."""
    table = _pandas(source)
    if table is None:
        own = getattr(source, "exchanges", None)
        table = _pandas(own() if callable(own) else own) if own is not None else None
    if table is None:
        objects = _frame_objects(source)
        if objects is not None:
            from kafkalab.dissect.tables import exchanges_table
            return exchanges_table(objects)
        table = frames_of(source)
    if "request_time" in table.columns:
        return table
    return exchanges_from_frames(table)


def exchanges_from_frames(frames):
    """Exchanges (the data model's columns) derived from a ``frames`` table alone."""
    import pandas as pd

    from kafkalab.dissect.tables import EXCHANGE_COLUMNS

    requests = frames[frames["kind"] == "request"].reset_index(drop=True)
    responses = frames.loc[frames["kind"] == "response", ["frame", "time", "error_code", "error", "size"]]
    responses = responses.rename(columns={"frame": "answer", "time": "response_time",
                                          "size": "response_size"})
    joined = requests.drop(columns=["error_code", "error"]).merge(
        responses, how="left", left_on=requests["response_frame"].astype("Int64"), right_on="answer")
    found = joined["answer"].notna()
    summary = joined["summary"].astype("string").fillna("")
    acks0 = ((joined["api_key"] == 0) & summary.str.contains("acks=0", regex=False)).fillna(False)
    table = pd.DataFrame({
        "request_frame": joined["frame"], "response_frame": joined["answer"],
        "stream": joined["stream"], "client": joined["src"], "server": joined["dst"],
        "api_key": joined["api_key"], "api_name": joined["api_name"], "api_version": joined["api_version"],
        "correlation_id": joined["correlation_id"], "client_id": joined["client_id"],
        "request_time": joined["time"], "response_time": joined["response_time"],
        "latency_ms": joined["latency_ms"].where(found), "error_code": joined["error_code"],
        "error": joined["error"], "request_size": joined["size"], "response_size": joined["response_size"],
        "expects_response": ~acks0.astype(bool),
    })
    table = table.astype({"request_frame": "Int64", "response_frame": "Int64", "stream": "Int64",
                          "api_key": "Int16", "api_version": "Int16", "correlation_id": "Int32",
                          "error_code": "Int16", "request_size": "Int64", "response_size": "Int64",
                          "expects_response": bool, "latency_ms": "float64"})
    for name in ("request_time", "response_time"):
        table[name] = pd.to_datetime(table[name], utc=True)
    for name in ("client", "server", "api_name", "client_id", "error"):
        table[name] = table[name].astype("string")
    return table[EXCHANGE_COLUMNS]


def records_of(source: Any):
    table = _pandas(source)
    if table is not None:
        return table
    own = getattr(source, "records", None)
    table = _pandas(own() if callable(own) else own) if own is not None else None
    if table is not None:
        return table
    objects = _frame_objects(source)
    if objects is None:
        raise TypeError(f"expected a records table or a Capture, Broker or list of Frames, not "
                        f"{type(source).__name__}")
    from kafkalab.dissect.tables import records_table
    return records_table(objects)


def _seconds(values, origin):
    """Times as seconds since ``origin`` (plots use a relative axis, like a packet list's time column)."""
    import pandas as pd

    times = pd.to_datetime(pd.Series(values), utc=True)
    return ((times - origin).dt.total_seconds()).to_numpy(dtype=float)


def _origin(*columns):
    """The earliest time among the given time columns (None when they are all empty)."""
    import pandas as pd

    firsts = [pd.to_datetime(pd.Series(c), utc=True).min() for c in columns if len(c)]
    firsts = [t for t in firsts if not pd.isna(t)]
    return min(firsts) if firsts else None


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:             # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'kafkalab[notebook]'") from exc
    return plt


def _time_axis(ax, origin) -> None:
    """Label the x axis as seconds since ``origin`` (named in UTC), with a light grid; data at a single
    instant gets a one-second axis around it rather than matplotlib's ±0.04."""
    when = origin.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC" if origin is not None else "the first frame"
    ax.set_xlabel(f"seconds since {when}")
    ax.grid(True, alpha=0.3)
    ax.set_xmargin(0.01)               # no tick far left of the data to collide with the lowest y label
    ax.autoscale_view(scalex=True, scaley=False)
    low, high = ax.get_xlim()
    if ax.has_data() and ax.dataLim.width == 0 and high - low < 1.0:     # one instant: a readable second
        middle = ax.dataLim.x0
        ax.set_xlim(middle - 0.5, middle + 0.5)


def _plain_log_ticks(axis) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _items(value: Any) -> list:
    """A list column's cell as a list (lists from pandas, arrays from Arrow/Spark, missing as empty)."""
    if value is None or isinstance(value, (str, bytes)):
        return []
    try:
        return list(value)
    except TypeError:
        return []


def _isna(value: Any) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
