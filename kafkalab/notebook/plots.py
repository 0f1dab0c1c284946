"""Views of Kafka traffic: sequence diagrams, latency, throughput, consumer lag and errors.

Everything here works from the data-model tables (``frames``, ``exchanges``, ``records``), so a Capture, the
broker's journal and Spark results are handled alike. Each function accepts

* a table: a pandas DataFrame with the data-model columns, or anything with ``toPandas()`` (Spark) or
  ``to_pandas()`` (Arrow), converted here (keep such tables small, or aggregate first);
* a source: a :class:`~kafkalab.capture.Capture`, a :class:`~kafkalab.broker.Broker`, an Explorer or a list
  of :class:`~kafkalab.dissect.frame.Frame`, whose table is taken.

Consumer lag needs message bodies (high watermarks, committed offsets), which no table carries:
:func:`offsets_table` reads them from Frame objects into an ``offsets`` table, and :func:`consumer_lag`
computes the lag from that table (so a Spark job producing the same columns gets the same lag).

Data functions (``latency_stats``, ``throughput``, ``offsets_table``, ``consumer_lag``, ``error_timeline``)
return DataFrames; ``plot_*`` functions draw them with matplotlib (imported on first use, never at import
time) and return the Axes; :func:`sequence_diagram` returns a :class:`SequenceDiagram`, an SVG text with a
plain-text ladder and a PNG rendering (what an untrusted notebook shows, since JupyterLab does not render
untrusted SVG).
"""
from __future__ import annotations

import base64
import io
import uuid
from dataclasses import dataclass, field
from html import escape
from typing import Any, Iterable, Iterator

PALETTE = ["#1f6fb2", "#d9730d", "#2e8b57", "#8e44ad", "#b8860b", "#17a2b8", "#c2185b", "#5d6d7e",
           "#6b8e23", "#a0522d"]
ERROR_COLOR = "#c62828"
INFERRED_COLOR = "#7f8c8d"
OFFSET_COLUMNS = ["time", "frame", "stream", "source", "kind", "group", "topic", "partition", "offset"]
LAG_COLUMNS = ["time", "frame", "group", "topic", "partition", "high_watermark", "committed", "lag"]
ERROR_COLUMNS = ["time", "frame", "stream", "api_name", "kind", "category", "detail"]
STATS_COLUMNS = ["requests", "answered", "unanswered", "errors", "mean_ms"]
UNKNOWN_TOPIC = "(topic id)"


# ====================================================================== inputs

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
        from kafkalab.dissect.frame import frames_table
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


# ====================================================================== latency

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


# ====================================================================== throughput

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
        try:
            name, data = item
        except (TypeError, ValueError):
            continue
        size += len(name.encode() if isinstance(name, str) else name or b"")
        size += len(data) if isinstance(data, (bytes, bytearray)) else 0
    return size


def plot_throughput(source: Any, freq: str = "1s", metric: str = "records", direction: str = "produce",
                    ax=None, frames: Any = None):
    """Records (``metric="records"``) or payload bytes (``"bytes"``) per time bin, stacked by topic."""
    import pandas as pd

    plt = _pyplot()
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
               color=PALETTE[i % len(PALETTE)])
    ax.set_ylabel(f"{metric} per {freq}")
    ax.set_title(f"Throughput per topic ({direction})")
    _time_axis(ax, origin)
    if len(series.columns):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


# ====================================================================== consumer lag

def offsets_table(source: Any):
    """Offsets seen on the wire, from Frame objects (a Capture, a Broker, a list of Frames):

    * ``kind="high_watermark"`` from Fetch responses (per topic and partition; no group), partitions with
      an error skipped;
    * ``kind="committed"`` from OffsetCommit requests (per group, topic and partition), skipped where the
      paired response rejected that partition, and from OffsetFetch responses (what the group had
      committed, useful when a capture starts after the commits).

    Topics named by id (Fetch v13+, OffsetCommit v10, OffsetFetch v10) are resolved with the names that
    Metadata, CreateTopics and DescribeTopicPartitions responses in the same frames reported; unresolved
    ids stay as the id's text. Columns: OFFSET_COLUMNS; ``source`` is the API the offset came from."""
    import pandas as pd

    frames = _frame_objects(source)
    if frames is None:
        table = _pandas(source)
        if table is not None and {"kind", "offset", "group"} <= set(table.columns):
            return table
        raise TypeError("offsets_table needs Frame objects (a Capture, a Broker or a list of Frames): "
                        "high watermarks and committed offsets are in message bodies, not in the tables")
    frames = sorted(frames, key=lambda f: (f.ts, f.frame))
    by_number = {f.frame: f for f in frames}
    names = topic_names(frames)
    rows: list[tuple] = []
    for frame in frames:
        if frame.api_key == 1 and frame.kind == "response":
            rows.extend(_high_watermarks(frame, names))
        elif frame.api_key == 8 and frame.kind == "request":
            response = by_number.get(frame.response_frame) if frame.response_frame is not None else None
            rows.extend(_commits(frame, response, names))
        elif frame.api_key == 9 and frame.kind == "response":
            request = by_number.get(frame.request_frame) if frame.request_frame is not None else None
            rows.extend(_fetched_commits(frame, request, names))
    table = pd.DataFrame(rows, columns=OFFSET_COLUMNS)
    table["time"] = pd.to_datetime(table["time"].astype("float64"), unit="s", utc=True)
    table = table.astype({"frame": "Int64", "stream": "Int64", "partition": "Int32", "offset": "Int64"})
    for name in ("source", "kind", "group", "topic"):
        table[name] = table[name].astype("string")
    return table


def topic_names(frames: Iterable) -> dict[uuid.UUID, str]:
    """{topic id: name} from every response body that pairs a ``topic_id`` with a ``name`` (Metadata,
    CreateTopics, DescribeTopicPartitions...)."""
    names: dict[uuid.UUID, str] = {}
    for frame in frames:
        if frame.kind != "response" or frame.api_key not in (3, 19, 75):
            continue
        for item in _dicts(frame.body):
            topic_id, name = item.get("topic_id"), item.get("name")
            if isinstance(topic_id, uuid.UUID) and topic_id.int and isinstance(name, str):
                names[topic_id] = name
    return names


def _dicts(value: Any) -> Iterator[dict]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            if isinstance(item, (dict, list)):
                yield from _dicts(item)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                yield from _dicts(item)


def _topic(item: dict, names: dict, key: str = "name") -> str | None:
    name = item.get(key)
    if isinstance(name, str) and name:
        return name
    topic_id = item.get("topic_id")
    if isinstance(topic_id, uuid.UUID):
        return names.get(topic_id, str(topic_id))
    return None


def _high_watermarks(frame, names) -> Iterator[tuple]:
    for topic in (frame.body or {}).get("responses") or ():
        name = _topic(topic, names, "topic")
        for part in topic.get("partitions") or ():
            hw = part.get("high_watermark", -1)
            if part.get("error_code", 0) == 0 and isinstance(hw, int) and hw >= 0:
                yield (frame.ts, frame.frame, frame.stream, "Fetch", "high_watermark", None, name,
                       part.get("partition_index"), hw)


def _commits(frame, response, names) -> Iterator[tuple]:
    body = frame.body or {}
    rejected: set[tuple] = set()
    if response is not None and response.body:
        for topic in response.body.get("topics") or ():
            name = _topic(topic, names)
            for part in topic.get("partitions") or ():
                if part.get("error_code", 0):
                    rejected.add((name, part.get("partition_index")))
    group = body.get("group_id")
    for topic in body.get("topics") or ():
        name = _topic(topic, names)
        for part in topic.get("partitions") or ():
            offset, index = part.get("committed_offset", -1), part.get("partition_index")
            if isinstance(offset, int) and offset >= 0 and (name, index) not in rejected:
                yield (frame.ts, frame.frame, frame.stream, "OffsetCommit", "committed", group, name, index, offset)


def _fetched_commits(frame, request, names) -> Iterator[tuple]:
    body = frame.body or {}
    groups = body.get("groups")
    if groups is None:                       # v0-7: one group, named in the request
        group = (request.body or {}).get("group_id") if request is not None else None
        groups = [{"group_id": group, "topics": body.get("topics") or ()}]
    for entry in groups:
        for topic in entry.get("topics") or ():
            name = _topic(topic, names)
            for part in topic.get("partitions") or ():
                offset = part.get("committed_offset", -1)
                if part.get("error_code", 0) == 0 and isinstance(offset, int) and offset >= 0:
                    yield (frame.ts, frame.frame, frame.stream, "OffsetFetch", "committed", entry.get("group_id"),
                           name, part.get("partition_index"), offset)


def consumer_lag(source: Any, latest: bool = False):
    """Consumer lag per group, topic and partition: the last high watermark seen for the partition minus
    the group's last committed offset, recomputed at every offset event once both are known.

    ``source``: an offsets table (:func:`offsets_table`'s columns, e.g. from Spark) or Frame objects.
    Returns LAG_COLUMNS rows in time order; ``latest=True`` keeps the last row per group/topic/partition."""
    import pandas as pd

    offsets = offsets_table(source)
    offsets = offsets.sort_values(["time", "frame"], kind="stable")
    high: dict[tuple, int] = {}
    committed: dict[tuple, int] = {}
    rows = []
    for event in offsets.itertuples(index=False):
        topic, partition = event.topic, None if pd.isna(event.partition) else int(event.partition)
        key = (topic, partition)
        if event.kind == "high_watermark":
            high[key] = int(event.offset)
            affected = [g for (g, t, p) in committed if (t, p) == key]
        elif event.kind == "committed":
            committed[(event.group, topic, partition)] = int(event.offset)
            affected = [event.group]
        else:
            continue
        for group in affected:
            if key in high and (group, topic, partition) in committed:
                hw, done = high[key], committed[(group, topic, partition)]
                rows.append((event.time, event.frame, group, topic, partition, hw, done, hw - done))
    lag = pd.DataFrame(rows, columns=LAG_COLUMNS)
    lag = lag.astype({"frame": "Int64", "partition": "Int32", "high_watermark": "Int64", "committed": "Int64",
                      "lag": "Int64"})
    lag["time"] = pd.to_datetime(lag["time"], utc=True)
    for name in ("group", "topic"):
        lag[name] = lag[name].astype("string")
    if latest:
        lag = lag.groupby(["group", "topic", "partition"], sort=True).tail(1)
        lag = lag.sort_values(["group", "topic", "partition"]).reset_index(drop=True)
    return lag


def plot_consumer_lag(source: Any, ax=None):
    """Lag over time, one step line per group/topic/partition."""
    plt = _pyplot()
    lag = consumer_lag(source)
    ax = ax if ax is not None else plt.subplots(figsize=(9, 3.4))[1]
    origin = _origin(lag["time"])
    for i, ((group, topic, partition), rows) in enumerate(lag.groupby(["group", "topic", "partition"])):
        ax.step(_seconds(rows["time"], origin), rows["lag"].astype("float64"), where="post", marker="o",
                markersize=4, label=f"{group} · {topic}[{partition}]", color=PALETTE[i % len(PALETTE)])
    ax.set_ylabel("lag (records)")
    ax.set_ylim(bottom=0)
    ax.set_title("Consumer lag: Fetch high watermark − committed offset")
    _time_axis(ax, origin)
    if len(lag):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


# ====================================================================== errors

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
    """The error timeline: one row per API, a marker per problem (shape by category), labelled."""
    plt = _pyplot()
    table = error_timeline(source)
    ax = ax if ax is not None else plt.subplots(figsize=(9, 0.9 + 0.4 * max(table["api_name"].nunique(), 1)))[1]
    apis = list(dict.fromkeys(table["api_name"].fillna("?")))
    markers = {"error": ("X", ERROR_COLOR), "diagnostic": ("D", "#d9730d"), "no response": ("o", INFERRED_COLOR)}
    origin = _origin(table["time"])
    for category, (marker, color) in markers.items():
        rows = table[table["category"] == category]
        if rows.empty:
            continue
        ys = [apis.index(a) for a in rows["api_name"].fillna("?")]
        xs = _seconds(rows["time"], origin)
        ax.scatter(xs, ys, marker=marker, color=color, s=40, label=category, zorder=3)
        for x, y, text in zip(xs, ys, rows["detail"]):
            ax.annotate(_shorten(str(text), 40), (x, y), xytext=(4, 5), textcoords="offset points", fontsize=7,
                        color=color)
    ax.set_yticks(range(len(apis)), apis)
    ax.set_ylim(-0.7, max(len(apis), 1) - 0.3)
    ax.set_title("Errors and diagnostics" if len(table) else "Errors and diagnostics: none")
    _time_axis(ax, origin)
    if len(table):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


# ====================================================================== comparing two frames

COMPARE_COLUMNS = ["path", "a", "b", "a_bytes", "b_bytes", "same"]


def compare_frames(a: Any, b: Any, *, differences_only: bool = True):
    """Two frames (Frames, decoded messages with a tree, or FieldNode trees) field by field: one row per
    leaf path of either tree, in the order of ``a`` then the paths only ``b`` has, plus the containers only
    one side has (a ``deflated`` block of compressed records, say). ``a``/``b`` are the values as the text
    tree shows them (None where a side lacks the field), ``a_bytes``/``b_bytes`` the field sizes in bytes.
    With ``differences_only`` (the default) equal fields are left out."""
    import pandas as pd

    from kafkalab.dissect.text import describe_value

    left, right = _nodes_by_path(_tree_of(a)), _nodes_by_path(_tree_of(b))

    def shown(node):
        if node is None:
            return None
        return f"[{node.wire_type}]" if node.children else describe_value(node)

    rows = []
    for path in list(left) + [p for p in right if p not in left]:
        x, y = left.get(path), right.get(path)
        if (x is None or x.children) and (y is None or y.children) and (x is not None and y is not None):
            continue                                      # a container both sides have: its leaves tell
        same = (x is not None and y is not None and x.value == y.value and x.wire_type == y.wire_type
                and not x.children and not y.children)
        if differences_only and same:
            continue
        rows.append((path, shown(x), shown(y), None if x is None else x.end - x.start,
                     None if y is None else y.end - y.start, same))
    table = pd.DataFrame(rows, columns=COMPARE_COLUMNS)
    return table.astype({"a": "string", "b": "string", "a_bytes": "Int64", "b_bytes": "Int64", "same": bool})


def _tree_of(item: Any):
    from kafkalab.protocol.tree import FieldNode

    if isinstance(item, FieldNode):
        return item
    tree = getattr(item, "tree", None)
    if tree is None:
        raise TypeError(f"{type(item).__name__} has no annotated tree (decode with annotate=True)")
    return tree


def _nodes_by_path(root) -> dict[str, Any]:
    """Every node of the tree but the root, inflated buffers included, by path (the first of repeats)."""
    nodes: dict[str, Any] = {}
    for node in root.walk():
        path = node.path or ("" if node is root else node.name)
        if path and path not in nodes:
            nodes[path] = node
    return nodes


# ====================================================================== matplotlib helpers

def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:             # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'kafkalab[notebook]'") from exc
    return plt


def _time_axis(ax, origin) -> None:
    """Label the x axis as seconds since ``origin`` (named in UTC), with a light grid."""
    when = origin.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC" if origin is not None else "the first frame"
    ax.set_xlabel(f"seconds since {when}")
    ax.grid(True, alpha=0.3)


def _plain_log_ticks(axis) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ====================================================================== sequence diagrams

ROW = 24            # px between messages
FONT = 11           # px
CHAR = 6.6          # px per character of the monospace font at FONT px (an estimate, for layout)
TOP = 64            # px above the first message (lifeline headers)
LEFT = 150          # px for the time and frame columns
MIN_GAP, MAX_GAP = 260, 560   # px between lifelines: room for the longest label, within these bounds
LABEL_CHARS = 72    # labels are shortened to this many characters


@dataclass
class Arrow:
    """One message of a sequence diagram (what tests and callers can inspect without parsing SVG)."""

    frame: int
    kind: str                  # "request" or "response"
    src: str
    dst: str
    label: str
    y: float
    color: str
    dashed: bool = False
    inferred: bool = False


@dataclass
class Exchange:
    """A request and its response (either can be missing from the data)."""

    stream: int
    api_name: str
    request: Arrow | None = None
    response: Arrow | None = None
    note: str = ""


@dataclass
class SequenceDiagram:
    """A request/response sequence diagram: ``svg`` (text), ``text`` (a ladder), ``to_png()``.

    In Jupyter it shows as SVG; a notebook reopened untrusted shows the PNG (JupyterLab renders no
    untrusted SVG), and plain-text front ends show the ladder."""

    lifelines: list[str]
    exchanges: list[Exchange]
    rows: list[tuple[int, float, Arrow]]          # (frame, seconds since the first shown frame, arrow)
    title: str
    subtitles: dict[str, str] = field(default_factory=dict)
    note: str = ""
    clients: list[str] = field(default_factory=list)     # the lifelines that send requests

    # -------------------------------------------------------------- geometry

    @property
    def arrows(self) -> list[Arrow]:
        return [arrow for _, _, arrow in self.rows]

    @property
    def gap(self) -> float:
        """Room between the last client and the first broker lifeline: the longest label's width."""
        longest = max((len(arrow.label) for arrow in self.arrows), default=20)
        return min(max(longest * CHAR + 40, MIN_GAP), MAX_GAP)

    def _header_width(self, name: str) -> float:
        return max(len(name), len(self.subtitles.get(name, ""))) * CHAR + 16

    def _x(self) -> dict[str, float]:
        """Lifeline positions: clients side by side on the left, brokers right of the widest label."""
        x: dict[str, float] = {}
        position = LEFT + 20
        previous = None
        for name in self.lifelines:
            if previous is None:
                position += self._header_width(name) / 2
            elif previous in self.clients and name not in self.clients:
                position += self.gap
            else:
                position += (self._header_width(previous) + self._header_width(name)) / 2 + 40
            x[name] = position
            previous = name
        return x

    @property
    def width(self) -> int:
        last = self.lifelines[-1]
        return int(self._x()[last] + self._header_width(last) / 2 + 12)

    @property
    def height(self) -> int:
        return int(TOP + ROW * (len(self.rows) + 1) + (24 if self.note else 8))

    def _shapes(self) -> list[tuple[str, dict, list[tuple]]]:
        """Groups of primitives: (class, data attributes, [("line"|"poly"|"text"|"rect", ...)])."""
        x = self._x()
        bottom = self.height - (24 if self.note else 8)
        groups: list[tuple[str, dict, list[tuple]]] = []
        header = [("text", 8, 18, self.title, "start", FONT + 2, "#24292e", "bold")]
        header.append(("text", 8, TOP - 12, "time (ms)", "start", FONT - 1, "#6a737d", "normal"))
        header.append(("text", LEFT - 64, TOP - 12, "frame", "start", FONT - 1, "#6a737d", "normal"))
        groups.append(("header", {}, header))
        for name in self.lifelines:
            cx = x[name]
            width = max(len(name), len(self.subtitles.get(name, ""))) * CHAR + 16
            shapes = [("rect", cx - width / 2, 26, width, 30 if self.subtitles.get(name) else 20, "#f6f8fa", "#d0d7de"),
                      ("text", cx, 40, name, "middle", FONT, "#24292e", "bold")]
            if self.subtitles.get(name):
                shapes.append(("text", cx, 52, self.subtitles[name], "middle", FONT - 2, "#6a737d", "normal"))
            shapes.append(("line", cx, 56 if self.subtitles.get(name) else 46, cx, bottom, "#b0b7bf", 1, True))
            groups.append(("lifeline", {"endpoint": name}, shapes))
        index = {id(arrow): i for i, (_, _, arrow) in enumerate(self.rows)}
        times = {id(arrow): seconds for _, seconds, arrow in self.rows}
        for exchange in self.exchanges:
            shapes = []
            for arrow in (exchange.request, exchange.response):
                if arrow is None:
                    continue
                y = TOP + ROW * (index[id(arrow)] + 0.5)
                arrow.y = y
                shapes.extend(self._arrow_shapes(arrow, x, y, times[id(arrow)], self.gap))
            attrs = {"stream": exchange.stream, "api": exchange.api_name,
                     "request-frame": exchange.request.frame if exchange.request else "",
                     "response-frame": exchange.response.frame if exchange.response else ""}
            cls = "exchange" + ("" if exchange.request else " orphan") + ("" if exchange.response else " unanswered")
            groups.append((cls, attrs, shapes))
        if self.note:
            groups.append(("note", {}, [("text", 8, self.height - 10, self.note, "start", FONT - 1, "#6a737d",
                                         "normal")]))
        return groups

    @staticmethod
    def _arrow_shapes(arrow: Arrow, x: dict, y: float, seconds: float, gap: float) -> list[tuple]:
        x1, x2 = x[arrow.src], x[arrow.dst]
        direction = 1 if x2 >= x1 else -1
        tip = x2 - direction * 2
        shapes = [("text", 8, y + 4, f"{seconds * 1000:10.3f}", "start", FONT - 1, "#6a737d", "normal"),
                  ("text", LEFT - 64, y + 4, f"#{arrow.frame}", "start", FONT - 1, "#6a737d", "normal"),
                  ("line", x1, y, tip - direction * 7, y, arrow.color, 1.6 if arrow.kind == "request" else 1.2,
                   arrow.dashed, f"arrow {arrow.kind}", arrow.frame),
                  ("poly", [(tip, y), (tip - direction * 9, y - 4), (tip - direction * 9, y + 4)], arrow.color)]
        left, right = min(x1, x2), max(x1, x2)
        middle = (left + right) / 2 if right - left <= gap else right - gap / 2    # clear of other clients
        shapes.append(("text", middle, y - 4, arrow.label, "middle", FONT - 1, arrow.color,
                       "bold" if arrow.kind == "request" else "normal"))
        return shapes

    # -------------------------------------------------------------- SVG

    @property
    def svg(self) -> str:
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
               f'viewBox="0 0 {self.width} {self.height}" font-family="ui-monospace,Menlo,Consolas,monospace" '
               f'font-size="{FONT}" class="kafkalab-sequence">',
               f"<title>{escape(self.title)}</title>",
               f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>']
        for cls, attrs, shapes in self._shapes():
            data = "".join(f' data-{k}="{escape(str(v))}"' for k, v in attrs.items())
            out.append(f'<g class="{cls}"{data}>')
            out.extend(_svg_shape(s) for s in shapes)
            out.append("</g>")
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self) -> str:
        return self.svg

    # -------------------------------------------------------------- text

    @property
    def text(self) -> str:
        lines = [self.title]
        width = max((len(f"#{a.frame}") for a in self.arrows), default=2)
        for _, seconds, arrow in self.rows:
            rightwards = self.lifelines.index(arrow.dst) > self.lifelines.index(arrow.src)
            left, right = (arrow.src, arrow.dst) if rightwards else (arrow.dst, arrow.src)
            lines.append(f"{seconds * 1000:10.3f} ms  {f'#{arrow.frame}':>{width}}  {left} {'→' if rightwards else '←'} "
                         f"{right}  {arrow.label}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text

    # -------------------------------------------------------------- PNG (matplotlib)

    def to_png(self, dpi: int = 100) -> bytes:
        """The same drawing as a PNG, rendered with matplotlib's Agg canvas (no pyplot state touched)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Polygon, Rectangle

        fig = Figure(figsize=(self.width / 100, self.height / 100), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, self.width)
        ax.set_ylim(self.height, 0)
        ax.axis("off")
        points = 72 / 100            # px -> pt at 100 dpi
        for _, _, shapes in self._shapes():
            for shape in shapes:
                kind = shape[0]
                if kind == "line":
                    _, x1, y1, x2, y2, color, width, dashed = shape[:8]
                    ax.plot([x1, x2], [y1, y2], color=color, linewidth=width * points,
                            linestyle=(0, (4, 3)) if dashed else "-")
                elif kind == "poly":
                    ax.add_patch(Polygon(shape[1], closed=True, color=shape[2]))
                elif kind == "rect":
                    _, rx, ry, rw, rh, fill, stroke = shape
                    ax.add_patch(Rectangle((rx, ry), rw, rh, facecolor=fill, edgecolor=stroke))
                elif kind == "text":
                    _, tx, ty, text, anchor, size, color, weight = shape
                    ax.text(tx, ty, text, ha={"start": "left", "middle": "center", "end": "right"}[anchor],
                            va="baseline", fontsize=size * points, color=color, weight=weight, family="monospace")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
        return buffer.getvalue()

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {"text/plain": self.text, "image/svg+xml": self.svg}
        try:
            bundle["image/png"] = base64.b64encode(self.to_png()).decode("ascii")
        except ImportError:                 # pragma: no cover - matplotlib missing: SVG and text only
            pass
        return bundle

    def save(self, path) -> None:
        """Write ``path``: SVG text for ``.svg``, PNG for ``.png``."""
        path = str(path)
        if path.lower().endswith(".png"):
            with open(path, "wb") as out:
                out.write(self.to_png())
        else:
            with open(path, "w", encoding="utf-8") as out:
                out.write(self.svg)


def _svg_shape(shape: tuple) -> str:
    kind = shape[0]
    if kind == "line":
        _, x1, y1, x2, y2, color, width, dashed = shape[:8]
        cls = f' class="{shape[8]}" data-frame="{shape[9]}"' if len(shape) > 8 else ""
        dash = ' stroke-dasharray="5 4"' if dashed else ""
        return (f'<line{cls} x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                f'stroke-width="{width}"{dash}/>')
    if kind == "poly":
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in shape[1])
        return f'<polygon points="{points}" fill="{shape[2]}"/>'
    if kind == "rect":
        _, rx, ry, rw, rh, fill, stroke = shape
        return f'<rect x="{rx:.1f}" y="{ry:.1f}" width="{rw:.1f}" height="{rh:.1f}" rx="3" fill="{fill}" stroke="{stroke}"/>'
    _, tx, ty, text, anchor, size, color, weight = shape
    bold = ' font-weight="bold"' if weight == "bold" else ""
    return (f'<text x="{tx:.1f}" y="{ty:.1f}" text-anchor="{anchor}" font-size="{size}" fill="{color}"{bold} '
            f'xml:space="preserve">{escape(text)}</text>')


def sequence_diagram(source: Any, stream: int | Iterable[int] | None = None, *, max_exchanges: int = 40,
                     start: int = 0, title: str | None = None) -> SequenceDiagram:
    """Requests and responses between clients and brokers, one lifeline per endpoint (clients left,
    brokers right), one arrow per frame in frame order, grouped in one ``<g class="exchange">`` per
    request (with its response) or per response whose request is not in the data.

    ``stream``: one TCP connection (the ``stream`` column) or several; default all. ``max_exchanges``
    exchanges from the ``start``-th are drawn; a note says how many more there are. Responses are dashed,
    errors red, frames whose API was inferred grey and dotted."""
    import pandas as pd

    frames = frames_of(source)
    if stream is not None:
        wanted = [stream] if isinstance(stream, int) else list(stream)
        frames = frames[frames["stream"].isin(wanted)]
    frames = frames.sort_values("frame", kind="stable")
    by_number = {int(r.frame): r for r in frames.itertuples(index=False)}
    requests = [r for r in by_number.values() if r.kind == "request"]
    orphans = [r for r in by_number.values() if r.kind == "response" and
               (pd.isna(r.request_frame) or int(r.request_frame) not in by_number)]
    units = sorted([("request", r) for r in requests] + [("orphan", r) for r in orphans], key=lambda u: u[1].frame)
    total = len(units)
    units = units[start:start + max_exchanges]

    colors: dict[str, str] = {}

    def color_of(api: str) -> str:
        if api not in colors:
            colors[api] = PALETTE[len(colors) % len(PALETTE)]
        return colors[api]

    exchanges: list[Exchange] = []
    shown: list[tuple[Any, Arrow]] = []
    for unit, row in units:
        api = str(row.api_name)
        if unit == "request":
            exchange = Exchange(int(row.stream), api)
            summary = row.summary if isinstance(row.summary, str) else f"{api} v{row.api_version}"
            label = f"{_strip_kind(summary)} (corr {row.correlation_id})"
            exchange.request = Arrow(int(row.frame), "request", str(row.src), str(row.dst), _shorten(label, LABEL_CHARS), 0,
                                     INFERRED_COLOR if row.inferred else color_of(api), dashed=bool(row.inferred),
                                     inferred=bool(row.inferred))
            shown.append((row, exchange.request))
            answer = None if pd.isna(row.response_frame) else by_number.get(int(row.response_frame))
            if answer is not None:
                exchange.response = _response_arrow(answer, color_of(api))
                shown.append((answer, exchange.response))
            else:
                acks0 = row.api_key == 0 and "acks=0" in summary
                exchange.note = "no response expected (acks=0)" if acks0 else "no response in the data"
                exchange.request.label += " · " + exchange.note
        else:
            exchange = Exchange(int(row.stream), api)
            exchange.response = _response_arrow(row, color_of(api))
            exchange.note = "request not in the data"
            exchange.response.label += " · request not in the data"
            shown.append((row, exchange.response))
        exchanges.append(exchange)
    shown.sort(key=lambda item: int(item[0].frame))
    first = min((row.time for row, _ in shown), default=None)
    rows = [(int(row.frame), (row.time - first).total_seconds(), arrow) for row, arrow in shown]

    clients: dict[str, None] = {}
    servers: dict[str, None] = {}
    client_ids: dict[str, str] = {}
    for row, arrow in shown:
        client, server = (arrow.src, arrow.dst) if arrow.kind == "request" else (arrow.dst, arrow.src)
        clients.setdefault(client)
        servers.setdefault(server)
        if isinstance(row.client_id, str) and row.client_id and client not in client_ids:
            client_ids[client] = f"client_id {row.client_id}"
    lifelines = list(clients) + [s for s in servers if s not in clients]
    if not lifelines:
        lifelines = ["client", "broker"]
    streams = sorted({e.stream for e in exchanges})
    if title is None:
        where = (f"stream {streams[0]}" if len(streams) == 1 else f"{len(streams)} streams") if streams else "no frames"
        title = f"Kafka sequence diagram · {where} · {len(exchanges)} exchanges"
    note = ""
    if total > len(units):
        note = (f"showing exchanges {start + 1}-{start + len(units)} of {total} "
                f"(sequence_diagram(..., start=, max_exchanges=) shows others)")
    return SequenceDiagram(lifelines, exchanges, rows, title, client_ids, note, list(clients))


def _strip_kind(summary: str) -> str:
    return summary.replace(" request", "", 1).replace(" response", "", 1)


def _response_arrow(row, color: str) -> Arrow:
    summary = row.summary if isinstance(row.summary, str) else f"{row.api_name} v{row.api_version}"
    label = "↩ " + _strip_kind(summary)
    if not _isna(row.latency_ms):
        label += f" · {row.latency_ms:.2f} ms"
    error = not _isna(row.error_code) and row.error_code != 0
    inferred = bool(row.inferred) or any("inferred" in str(d) for d in _items(row.diagnostics))
    color = ERROR_COLOR if error else (INFERRED_COLOR if inferred else color)
    return Arrow(int(row.frame), "response", str(row.src), str(row.dst), _shorten(label, LABEL_CHARS), 0, color, dashed=True,
                 inferred=inferred)


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
