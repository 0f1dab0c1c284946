"""The message browser (``kafkalab.browse(broker)``): topics, partitions and records of a running broker,
and its consumer groups, as an anywidget in the Kafdrop / AKHQ tradition.

What it owns: the synced state (the topic list, the chosen topic/partition, the offset the page starts at,
the rendering, the page of records, the groups, a notice) and the Python API (``show``, ``seek``,
``seek_time``, ``refresh``, ``follow``). Reading is :mod:`.browse_model`'s, always on the broker's loop
(the broker's state is the loop's alone). The browser half is ``static/browser.js``; a saved notebook
shows a static snapshot (:class:`.snapshotted.Snapshotted`, as the Explorer does).
"""
from __future__ import annotations

import threading
from html import escape
from typing import Any

import anywidget
import traitlets

from . import browse_model
from .html import MONO, MUTED
from .snapshotted import Snapshotted
from .widget import STATIC, esm


class Browser(Snapshotted, anywidget.AnyWidget):
    """``Browser(broker, topic=None, limit=50, follow=False)``; ``follow=True`` (or seconds) polls the broker
    and keeps the page at the partition's newest records."""

    live_note = f'<div style="{MONO};{MUTED}">kafkalab browser (live view: run the cell to browse)</div>'
    _esm = esm("browser.js")
    _css = STATIC / "browser.css"

    topics = traitlets.List(traitlets.Dict()).tag(sync=True)
    topic = traitlets.Unicode("").tag(sync=True)
    partition = traitlets.Int(0).tag(sync=True)
    partitions = traitlets.List(traitlets.Dict()).tag(sync=True)
    offset = traitlets.Int(0).tag(sync=True)          # where the page starts
    limit = traitlets.Int(50).tag(sync=True)
    mode = traitlets.Unicode("auto").tag(sync=True)   # auto, json, text, hex
    records = traitlets.List(traitlets.Dict()).tag(sync=True)
    groups = traitlets.List(traitlets.Dict()).tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    following = traitlets.Bool(False).tag(sync=True)
    height = traitlets.Unicode("520px").tag(sync=True)

    def __init__(self, broker: Any, *, topic: str | None = None, limit: int = 50, follow: bool | float = False,
                 **kwargs: Any) -> None:
        super().__init__(limit=limit, **kwargs)
        self._broker = broker
        self._lock = threading.RLock()
        self._stop: threading.Event | None = None
        self.on_msg(self._on_message)
        self.refresh()
        shown = [t["topic"] for t in self.topics if not t["internal"]]
        if topic or shown:
            self.show(topic or shown[0])
        if follow:
            self.follow(1.0 if follow is True else float(follow))

    def _ask(self, fn, *args):
        """Run ``fn(state, *args)`` on the broker's loop."""
        return self._broker._on_loop(lambda: fn(self._broker.state, *args))

    # ------------------------------------------------------------ navigation

    def refresh(self) -> None:
        """Ask the broker again: topics, groups, the partition's offsets and the page of records."""
        with self._lock, self.hold_sync():
            self.topics = self._ask(browse_model.topics)
            self.groups = self._ask(browse_model.groups)
            if self.topic:
                self._load()

    def show(self, topic: str, partition: int = 0, offset: int | None = None) -> None:
        """Browse ``topic``'s ``partition`` from ``offset`` (default: its log start)."""
        with self._lock, self.hold_sync():
            self.partitions = self._ask(browse_model.partitions, topic)
            if not 0 <= partition < len(self.partitions):
                raise KeyError(f"topic {topic!r} has partitions 0..{len(self.partitions) - 1}, not {partition}")
            self.topic, self.partition = topic, partition
            self.offset = self.partitions[partition]["log_start_offset"] if offset is None else offset
            self._load()

    def seek(self, offset: int) -> None:
        """Start the page at ``offset`` (clamped to the log start; past the high watermark the page is empty)."""
        with self._lock, self.hold_sync():
            self.offset = offset
            self._load()

    def seek_time(self, timestamp_ms: int) -> int:
        """Start the page at the first record at or after ``timestamp_ms`` (as ListOffsets finds it); returns
        that offset."""
        offset = self._ask(browse_model.offset_for_time, self.topic, self.partition, int(timestamp_ms))
        self.seek(offset)
        return offset

    def _load(self) -> None:
        try:
            self.partitions = self._ask(browse_model.partitions, self.topic)
            start = max(self.offset, self.partitions[self.partition]["log_start_offset"])
            self.records = self._ask(browse_model.read, self.topic, self.partition, start, self.limit, self.mode)
            self.notice = "" if self.records or start < self.partitions[self.partition]["high_watermark"] \
                else f"no records at offset {start} and after"
        except (KeyError, IndexError) as exc:
            self.records = []
            self.notice = str(exc.args[0]) if exc.args else "cannot read"

    @traitlets.observe("mode")
    def _on_mode(self, change: dict) -> None:
        if self.topic:
            with self._lock:
                self._load()

    def _on_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        """The browser's buttons: show a topic/partition, seek to an offset or time, refresh."""
        try:
            kind = content.get("type")
            if kind == "show":
                self.show(content["topic"], int(content.get("partition", 0)))
            elif kind == "seek":
                self.seek(int(content["offset"]))
            elif kind == "seek_time":
                self.seek_time(int(content["timestamp"]))
            elif kind == "refresh":
                self.refresh()
        except (KeyError, ValueError) as exc:
            self.notice = str(exc.args[0]) if exc.args else "bad request"

    # ------------------------------------------------------------ following

    def follow(self, interval: float = 1.0) -> None:
        """Poll every ``interval`` s; while following, the page shows the partition's newest records."""
        self.unfollow()
        stop = self._stop = threading.Event()
        self.following = True

        def run() -> None:
            while not stop.wait(interval):
                try:
                    self.poll()
                except RuntimeError:        # the broker stopped
                    break
        threading.Thread(target=run, name="kafkalab-browse-follow", daemon=True).start()

    def poll(self) -> None:
        """One follow step: refresh, and move the page to the newest ``limit`` records."""
        with self._lock, self.hold_sync():
            self.topics = self._ask(browse_model.topics)
            self.groups = self._ask(browse_model.groups)
            if self.topic:
                part = self._ask(browse_model.partitions, self.topic)[self.partition]
                self.offset = max(part["log_start_offset"], part["high_watermark"] - self.limit, self.offset)
                self._load()

    def unfollow(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        self.following = False

    # ------------------------------------------------------------ display

    def snapshot_html(self) -> str:
        return browse_snapshot_html(self.topics, self.topic, self.partition, self.partitions, self.records,
                                    self.groups)

    def __repr__(self) -> str:
        where = f"{self.topic}-{self.partition} from offset {self.offset}" if self.topic else "no topic"
        return f"<kafkalab Browser: {len(self.topics)} topics, {where}, {len(self.records)} records shown>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th style='text-align:left;padding:0 8px'>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='padding:0 8px;vertical-align:top;white-space:pre-wrap'>"
                                    f"{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def browse_snapshot_html(topics: list[dict], topic: str, partition: int, partitions: list[dict],
                         records: list[dict], groups: list[dict]) -> str:
    """What the browser showed, without a kernel: topics, the chosen partition's offsets and records, groups."""
    parts = [f'<div class="kl-browse-snapshot" style="{MONO}"><div style="font-weight:600">kafkalab browser · '
             f'{len(topics)} topics <span style="{MUTED};font-weight:400">(a snapshot: run the cell to browse)'
             f'</span></div>',
             _table(["topic", "partitions", "records"], [[t["topic"], t["partitions"], t["records"]] for t in topics])]
    if topic:
        parts.append(f"<div style='font-weight:600;margin-top:6px'>{escape(topic)}</div>")
        parts.append(_table(["partition", "log start", "high watermark", "last stable"],
                            [[p["partition"], p["log_start_offset"], p["high_watermark"], p["last_stable_offset"]]
                             for p in partitions]))
        parts.append(f"<div style='font-weight:600;margin-top:6px'>{escape(topic)}-{partition} records</div>")
        parts.append(_table(["offset", "timestamp", "key", "value", "headers"],
                            [[r["offset"], r["timestamp"], r["key"]["text"], r["value"]["text"],
                              ", ".join(f"{h['key']}={h['value']['text']}" for h in r["headers"])]
                             for r in records]))
    if groups:
        parts.append("<div style='font-weight:600;margin-top:6px'>consumer groups</div>")
        parts.append(_table(["group", "state", "members", "partition", "committed", "lag"],
                            [[g["group_id"], g["state"], len(g["members"]), f"{o['topic']}-{o['partition']}",
                              o["committed"], o["lag"]] for g in groups for o in g["offsets"] or [{
                                  "topic": "", "partition": "", "committed": "", "lag": ""}]]))
    parts.append("</div>")
    return "".join(parts)


def browse(broker: Any, **kwargs: Any) -> Browser:
    """``browse(broker)``: a :class:`Browser` on a running :class:`~kafkalab.broker.Broker`."""
    return Browser(broker, **kwargs)
