"""Consumer lag from a capture: Fetch high watermarks minus committed offsets, per group, topic, partition."""
from __future__ import annotations

import uuid
from typing import Any, Iterable, Iterator

from .common import LAG_COLUMNS, OFFSET_COLUMNS, style_of, _frame_objects, _origin, _pandas, _pyplot, _seconds, _time_axis


def offsets_table(source: Any):
    """Offsets seen on the wire, from Frame objects (a Capture, a Broker, a list of Frames):

    * ``kind="high_watermark"`` from Fetch responses (per topic and partition; no group), partitions with
      an error skipped, and from ListOffsets responses to a request for the latest offset (timestamp -1)
      under read_uncommitted, which is the high watermark (consumers starting at the end ask for it);
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
        elif frame.api_key == 2 and frame.kind == "response":
            request = by_number.get(frame.request_frame) if frame.request_frame is not None else None
            rows.extend(_listed_ends(frame, request, names))
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


def _listed_ends(frame, request, names) -> Iterator[tuple]:
    """ListOffsets answers for partitions the paired request asked the latest offset of (timestamp -1), read
    uncommitted: the high watermark. Earliest (-2) and by-time lookups, and read_committed answers (the last
    stable offset), are not the end a consumer's lag is measured from."""
    asked = request.body if request is not None and request.body else {}
    if asked.get("isolation_level", 0) != 0:
        return
    latest = {(_topic(topic, names), part.get("partition_index")) for topic in asked.get("topics") or ()
              for part in topic.get("partitions") or () if part.get("timestamp") == -1}
    for topic in (frame.body or {}).get("topics") or ():
        name = _topic(topic, names)
        for part in topic.get("partitions") or ():
            index = part.get("partition_index")
            offset = part.get("offset", (part.get("old_style_offsets") or [-1])[0])          # v0: a list
            if (name, index) in latest and part.get("error_code", 0) == 0 and isinstance(offset, int) and offset >= 0:
                yield (frame.ts, frame.frame, frame.stream, "ListOffsets", "high_watermark", None, name, index, offset)


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
    """Lag over time, one step line per group/topic/partition, the latest value written at its end. A
    window shorter than a second is widened to one (a single commit is a labelled point, not a blank axis)."""
    plt = _pyplot()
    lag = consumer_lag(source)
    ax = ax if ax is not None else plt.subplots(figsize=(9, 3.4))[1]
    origin = _origin(lag["time"])
    series = list(lag.groupby(["group", "topic", "partition"]))
    for i, ((group, topic, partition), rows) in enumerate(series):
        xs, ys = _seconds(rows["time"], origin), rows["lag"].astype("float64").to_numpy()
        style = style_of(i)
        ax.step(xs, ys, where="post", marker=style["marker"], markersize=5, color=style["color"],
                label=f"{group} · {topic}[{partition}]")
        if len(series) <= 6:
            ax.annotate(f"{int(ys[-1])}", (xs[-1], ys[-1]), xytext=(6, 2 + 11 * i), textcoords="offset points",
                        fontsize=8, color=style["color"])
    if len(lag):
        xs = _seconds(lag["time"], origin)
        if xs.max() - xs.min() < 1.0:
            middle = (xs.max() + xs.min()) / 2
            ax.set_xlim(middle - 0.5, middle + 0.5)
        ax.set_ylim(0, max(1.0, float(lag["lag"].max())) * 1.25)
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel("lag (records)")
    ax.set_title("Consumer lag: Fetch high watermark − committed offset" if len(lag) else
                 "Consumer lag: no committed offsets and high watermarks in the data")
    _time_axis(ax, origin)
    if len(lag):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax
