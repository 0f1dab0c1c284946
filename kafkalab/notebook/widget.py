"""The Explorer: Wireshark's three linked panes (frame list, field tree, bytes) as an anywidget.

What it owns: the synced state (the list's totals and version, the filter text and its error, the sort, the
selected frame, its place in the list and field path, the view of the selected frame, notices, Expert Info)
and the Python API (``select``, ``select_byte``, ``go_to``, ``follow_connection``, ``show_sequence``,
``show_statistics``, ``rows_at``, ``append``, ``follow``). The
browser half (``static/explorer.js``, ``static/explorer.css``, shipped in the package, no CDN) draws the
panes, asks for the rows it is about to show (custom messages, a page at a time), and writes back
``selected_frame``/``selected_path``/``filter_text``/``sort`` when the user clicks or types. The logic that
needs no widget library lives in :mod:`.model` and :mod:`.listing`.

Selection: ``selected_path`` is the public identity of a field (``topic_data[0].name``); the view's nodes
carry their byte spans and the buffer they refer to, so either side can resolve a path to bytes or a byte to
the deepest node. A saved notebook shows a static snapshot (:class:`.snapshotted.Snapshotted`).
"""
from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any, Iterable

import anywidget
import traitlets

from kafkalab.dissect.filter import FilterError
from kafkalab.dissect.frame import Frame
from kafkalab.dissect.frames_table import frames_table

from . import model
from .html import explorer_snapshot_html
from .listing import Listing
from .snapshotted import Snapshotted

STATIC = Path(__file__).parent / "static"


def esm(name: str, *helpers: str) -> str:
    """A widget's browser module: the shared ``dom.js`` helpers, then ``static/<helper>`` for each helper,
    then ``static/<name>`` (anywidget loads one module, so the parts are put in front rather than imported)."""
    return "".join((STATIC / part).read_text() for part in ("dom.js", *helpers, name))


class Explorer(Snapshotted, anywidget.AnyWidget):
    """``Explorer(source, select=path, follow=False)``: a Frame, a list of Frames, a Capture (``cap[n]``) or a
    Broker/Journal (``.frame(n)``), all with the data-model ``frames`` table. ``follow=True`` (or a poll
    interval in seconds) keeps appending the source's new frames."""

    _esm = esm("explorer.js", "statistics.js")
    _css = STATIC / "explorer.css"

    columns = traitlets.List(traitlets.Unicode(), default_value=model.LIST_COLUMNS).tag(sync=True)
    row_total = traitlets.Int(0).tag(sync=True)          # frames in the table
    match_total = traitlets.Int(0).tag(sync=True)        # frames the filter shows
    list_version = traitlets.Int(0).tag(sync=True)       # bumps when the shown order changes (filter, sort)
    filter_text = traitlets.Unicode("").tag(sync=True)
    filter_error = traitlets.Unicode("").tag(sync=True)
    sort = traitlets.Unicode("").tag(sync=True)          # "column" or "-column"; "" is frame order
    selected_frame = traitlets.Int(0).tag(sync=True)
    selected_index = traitlets.Int(-1).tag(sync=True)    # where the selected frame is in the shown order
    selected_path = traitlets.Unicode("").tag(sync=True)
    field_filter = traitlets.Unicode("").tag(sync=True)  # the filter the selected field stands for, or ""
    notice = traitlets.Unicode("").tag(sync=True)        # what went wrong, said to the user
    expert = traitlets.List(traitlets.Dict()).tag(sync=True)   # diagnostics grouped, most frequent first
    view = traitlets.Dict(default_value={}).tag(sync=True)
    following = traitlets.Bool(False).tag(sync=True)
    sequence = traitlets.Unicode("").tag(sync=True)      # a connection's sequence diagram (SVG); "" hides it
    statistics = traitlets.Dict(default_value={}).tag(sync=True)   # the Statistics panel's data; {} hides it
    height = traitlets.Unicode("560px").tag(sync=True)

    def __init__(self, source: Any = (), *, select: str | None = None, follow: bool | float = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lock = threading.RLock()
        self._source = model.FrameSource(list(source) if isinstance(source, tuple) else source)
        self._extra: dict[int, Frame] = {}
        self._listing = Listing(self._source.table())
        self._follower: model.Follower | None = None
        self._expert = model.expert_info(self._listing.table)
        self._publish_expert()
        self._apply_listing()
        self.on_msg(self._on_message)
        if len(self._listing):
            self.selected_frame = self._listing.frame_at(0)
        if select:
            self.select(select)
        if follow:
            self.follow(interval=1.0 if follow is True else float(follow))

    # ------------------------------------------------------------ frames

    def frame(self, number: int) -> Frame:
        """The Frame numbered ``number`` (appended frames first, then the source)."""
        return self._extra[number] if number in self._extra else self._source.frame(number)

    @property
    def frames(self):
        """The frames table the list is drawn from (data-model columns)."""
        return self._listing.table

    @property
    def rows(self) -> list[dict]:
        """The first rows the list shows (the browser reads any window of them the same way)."""
        return self.rows_at(0, 500)

    def rows_at(self, start: int, count: int) -> list[dict]:
        """Rows ``start .. start+count`` of the list as shown (filtered and sorted)."""
        with self._lock:
            return self._listing.page(start, count, self.columns)

    def append(self, frames: Frame | Iterable[Frame]) -> None:
        """Add frames (live mode: the broker journal and the sniffer call this); thread-safe. Only the new
        frames are tabulated and filtered."""
        new = [frames] if isinstance(frames, Frame) else list(frames)
        with self._lock:
            new = [f for f in new if self._listing.row_of(f.frame) < 0]
            if not new:
                return
            for f in new:
                self._extra[f.frame] = f
            addition = frames_table(new)
            self._listing.append(addition)
            model.expert_info(addition, self._expert)
            with self.hold_sync():
                self._publish_expert()
                self.row_total = len(self._listing.table)
                self.match_total = len(self._listing)
                if self._listing.sort:
                    self.list_version += 1
                if not self.selected_frame:
                    self.selected_frame = new[0].frame
                self.selected_index = self._listing.index_of(self.selected_frame)
        if self.statistics:                    # a followed broker's statistics grow with it
            self.show_statistics()

    def follow(self, source: Any = None, interval: float = 1.0) -> model.Follower:
        """Poll ``source`` (default: the explored one) every ``interval`` s and append new frames; returns a
        handle whose ``stop()`` ends it. ``poll()`` on the handle fetches once, synchronously."""
        self.unfollow()
        frame_source = self._source if source is None else model.FrameSource(source)
        self._follower = model.Follower(frame_source, self.append, self._last_frame, interval)
        self.following = True
        return self._follower

    def unfollow(self) -> None:
        if self._follower is not None:
            self._follower.stop()
            self._follower = None
        self.following = False

    def _last_frame(self) -> int:
        with self._lock:
            table = self._listing.table
            return int(table["frame"].iat[-1]) if len(table) else 0

    # ------------------------------------------------------------ the frame list

    def _publish_expert(self) -> None:
        groups = sorted(self._expert.values(), key=lambda g: (g["severity"] != "error", -g["count"]))
        self.expert = [dict(g, frames=list(g["frames"])) for g in groups]      # copies: a change is seen

    def _apply_listing(self) -> None:
        with self._lock:
            try:
                self._listing.apply(self.filter_text, self.sort)
            except (FilterError, KeyError) as exc:     # the list stays as it was; the box says why
                self.filter_error = str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)
                return
            with self.hold_sync():
                self.filter_error = ""
                self.row_total = len(self._listing.table)
                self.match_total = len(self._listing)
                self.list_version += 1
                self.selected_index = self._listing.index_of(self.selected_frame)

    @traitlets.observe("filter_text", "sort", "columns")
    def _on_filter(self, change: dict) -> None:
        if hasattr(self, "_listing"):
            self._apply_listing()

    def _on_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        """The browser asks for a window of rows, or for a frame by number (go to)."""
        kind = content.get("type")
        if kind == "rows":
            rows = self.rows_at(int(content.get("start", 0)), min(int(content.get("count", 100)), 1000))
            self.send({"type": "rows", "version": content.get("version"), "start": content.get("start"),
                       "rows": rows})
        elif kind == "goto":
            self.go_to(int(content.get("frame", 0)))
        elif kind == "connection":
            self.follow_connection(int(content.get("frame", 0)))
        elif kind == "pcap":                 # "Save pcap": the shown frames, downloaded by the browser
            out = io.BytesIO()
            count = self.write_pcap(out)
            self.send({"type": "pcap", "name": "kafkalab-frames.pcap", "frames": count}, [out.getvalue()])
        elif kind == "sequence":
            self.show_sequence(int(content.get("frame", 0))) if content.get("show") else self.hide_sequence()
        elif kind == "statistics":
            self.show_statistics() if content.get("show") else self.hide_statistics()

    def go_to(self, number: int) -> None:
        """Select frame ``number`` (the list scrolls to it); a notice says why when it cannot be shown."""
        if self._listing.row_of(number) < 0:
            self.notice = f"there is no frame {number} (frames {self._span()})"
            return
        self.selected_frame = number
        if self.selected_index < 0:
            self.notice = f"frame {number} is hidden by the filter"

    def follow_connection(self, number: int | None = None) -> str:
        """Show only the connection frame ``number`` (default: the selected one) belongs to, as Wireshark's
        "Follow TCP stream" does: the filter becomes ``stream == N``, which this returns."""
        self.filter_text = f"stream == {self._stream_of(number)}"
        return self.filter_text

    def show_sequence(self, number: int | None = None) -> str:
        """Draw the sequence diagram of the connection frame ``number`` (default: the selected one) belongs to
        above the tree; clicking an arrow selects its frame. Returns the SVG (``hide_sequence()`` removes it)."""
        from .plots import sequence_diagram

        self.sequence = sequence_diagram(self.frames, self._stream_of(number)).svg
        return self.sequence

    def hide_sequence(self) -> None:
        self.sequence = ""

    def show_statistics(self) -> dict:
        """Open the Statistics panel (Wireshark's Statistics menu) on every frame of the table: Conversations
        (one row per connection; a click filters to ``stream == N``), the I/O graph (frames/s and bytes/s per
        API) and response time per API (a click filters to that API). Kept current while following; returns
        the panel's data (:func:`kafkalab.notebook.statistics.statistics`)."""
        from .statistics import statistics

        with self._lock:
            table = self._listing.table
        self.statistics = statistics(table)
        return self.statistics

    def hide_statistics(self) -> None:
        self.statistics = {}

    def write_pcap(self, path_or_file) -> int:
        """Write the frames the list shows (filtered, in frame order) as a pcap that tshark and
        :func:`kafkalab.read_capture` open; returns the number of frames. Frames whose bytes are gone (evicted
        from a broker's journal) are left out."""
        from kafkalab.broker.journal import write_tcp_pcap

        with self._lock:
            numbers = sorted(int(n) for n in self._listing.table["frame"].to_numpy()[self._listing.order])
        frames = []
        for number in numbers:
            try:
                frames.append(self.frame(number))
            except (KeyError, IndexError):
                continue
        return write_tcp_pcap(frames, path_or_file)

    def _stream_of(self, number: int | None) -> int:
        """The connection (``stream``) of frame ``number``, default the selected one."""
        number = self.selected_frame if number is None else number
        row = self._listing.row_of(number) if number else -1
        if row < 0:
            raise KeyError(f"there is no frame {number}")
        return int(self._listing.table["stream"].iat[row])

    def _span(self) -> str:
        table = self._listing.table
        return f"{int(table['frame'].min())}..{int(table['frame'].max())}" if len(table) else "none"

    # ------------------------------------------------------------ selection

    @traitlets.observe("selected_frame")
    def _on_frame(self, change: dict) -> None:
        number = change["new"]
        with self.hold_sync():
            self.selected_index = self._listing.index_of(number) if number else -1
            if not number:
                self.view = {}
                return
            try:
                view = model.frame_view(self.frame(number))
                self.notice = ""
            except (KeyError, IndexError) as exc:        # e.g. evicted from the broker's journal
                reason = str(exc.args[0]) if exc.args else f"frame {number} is not available"
                view = {"frame": number, "missing": reason, "buffers": [], "nodes": [], "diagnostics": []}
                self.notice = f"frame {number} cannot be shown: {reason}"
            keep = self.selected_path if model.find_node(view, self.selected_path) >= 0 else ""
            self.view = view
            self.selected_path = keep

    @traitlets.validate("selected_path")
    def _check_path(self, proposal: dict) -> str:
        path = proposal["value"]
        if path and self.view and model.find_node(self.view, path) < 0:
            raise traitlets.TraitError(f"frame {self.selected_frame} has no field {path!r}")
        return path

    @traitlets.observe("selected_path")
    def _on_path(self, change: dict) -> None:
        try:
            self.field_filter = model.field_filter(self.selected_node)
        except (KeyError, IndexError):
            self.field_filter = ""

    def select(self, path: str, frame: int | None = None) -> tuple[int, int, int]:
        """Select the field ``path`` (of ``frame``, default the selected one); returns its byte range."""
        if frame is not None and frame != self.selected_frame:
            self.selected_frame = frame
        if model.find_node(self.view, path) < 0:
            raise KeyError(f"frame {self.selected_frame} has no field {path!r}")
        self.selected_path = path
        return self.selected_range

    def select_byte(self, offset: int, buffer: int = 0) -> str:
        """Select the deepest field covering byte ``offset`` of ``buffer`` (0: the frame, then each inflated
        buffer in tree order, as the view lists them); returns its path."""
        index = model.node_at(self.view, buffer, offset)
        if index < 0:
            raise KeyError(f"no field covers byte {offset} of buffer {buffer}")
        self.selected_path = self.view["nodes"][index]["p"]
        return self.selected_path

    @property
    def selected_range(self) -> tuple[int, int, int] | None:
        """(buffer, start, end) of the selected field, end exclusive; None when nothing is selected."""
        index = model.find_node(self.view, self.selected_path) if self.selected_path else -1
        return model.node_range(self.view, index) if index >= 0 else None

    @property
    def selected_bytes(self) -> bytes | None:
        """The selected field's bytes (from the inflated buffer when it lives there); None when nothing is
        selected. ``selected_bytes.hex()`` is what the bytes pane's "Copy hex" puts on the clipboard."""
        selected = self.selected_range
        if selected is None:
            return None
        buffer, start, end = selected
        return bytes(self.view["buffers"][buffer]["data"][start:end])

    @property
    def selected_node(self):
        """The selected :class:`FieldNode` (None when nothing is selected)."""
        if not self.selected_frame or not self.selected_path:
            return None
        tree = self.frame(self.selected_frame).tree
        return tree.find(self.selected_path) if tree is not None else None

    # ------------------------------------------------------------ display

    def snapshot_html(self) -> str:
        """The static stand-in a saved notebook shows: the frame list and the selected frame."""
        selected = None
        if self.selected_frame:
            try:
                selected = self.frame(self.selected_frame)
            except (KeyError, IndexError):
                selected = None
        at = max(0, self.selected_index)
        first = max(0, at - 5)
        window = self._listing.table.iloc[self._listing.order[first:first + 50]]
        return explorer_snapshot_html(window, len(self._listing), first, selected, self.selected_path or None,
                                      self.filter_text)

    def __repr__(self) -> str:
        return (f"<kafkalab Explorer: {len(self._listing.table)} frames, frame {self.selected_frame or '-'} "
                f"selected{', field ' + self.selected_path if self.selected_path else ''}>")


def explore(source: Any, **kwargs: Any) -> Explorer:
    """``explore(capture_or_broker_or_frames)``: an :class:`Explorer` on ``source``."""
    return Explorer(source, **kwargs)
