"""The Explorer: Wireshark's three linked panes (frame list, field tree, bytes) as an anywidget.

What it owns: the synced state (rows of the frame list, the filter text, the selected frame and field path,
the view of the selected frame) and the Python API (``select``, ``select_byte``, ``append``, ``follow``).
The browser half (``static/explorer.js``, ``static/explorer.css``, shipped in the package, no CDN) draws the
panes and writes back ``selected_frame``/``selected_path``/``filter_text`` when the user clicks or types.
All the logic that needs no widget library lives in :mod:`kafkalab.notebook.model`.

Selection: ``selected_path`` is the public identity of a field (``topic_data[0].name``); the view's nodes
carry their byte spans and the buffer they refer to, so either side can resolve a path to bytes or a byte to
the deepest node. A saved notebook shows the static HTML snapshot carried in the mimebundle's ``text/html``.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterable

import anywidget
import traitlets

from kafkalab.dissect.frame import Frame, frames_table

from . import model
from .html import frame_html, frames_html

STATIC = Path(__file__).parent / "static"


class Explorer(anywidget.AnyWidget):
    """``Explorer(source)``: a Frame, a list of Frames, a Capture (``cap[n]``) or a Broker/Journal
    (``.frame(n)``), all with the data-model ``frames`` table."""

    _esm = STATIC / "explorer.js"
    _css = STATIC / "explorer.css"

    columns = traitlets.List(traitlets.Unicode(), default_value=model.LIST_COLUMNS).tag(sync=True)
    rows = traitlets.List(traitlets.Dict(), default_value=[]).tag(sync=True)
    row_total = traitlets.Int(0).tag(sync=True)
    match_total = traitlets.Int(0).tag(sync=True)
    max_rows = traitlets.Int(2000).tag(sync=True)
    filter_text = traitlets.Unicode("").tag(sync=True)
    selected_frame = traitlets.Int(0).tag(sync=True)
    selected_path = traitlets.Unicode("").tag(sync=True)
    view = traitlets.Dict(default_value={}).tag(sync=True)
    following = traitlets.Bool(False).tag(sync=True)
    height = traitlets.Unicode("560px").tag(sync=True)

    def __init__(self, source: Any = (), *, select: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lock = threading.RLock()
        self._source = model.FrameSource(list(source) if isinstance(source, tuple) else source)
        self._extra: dict[int, Frame] = {}
        self._table = self._source.table()
        self._follower: model.Follower | None = None
        self._refresh_rows()
        if len(self._table):
            self.selected_frame = int(self._table["frame"].iloc[0])
        if select:
            self.select(select)

    # ------------------------------------------------------------ frames

    def frame(self, number: int) -> Frame:
        """The Frame numbered ``number`` (appended frames first, then the source)."""
        return self._extra[number] if number in self._extra else self._source.frame(number)

    @property
    def frames(self):
        """The frames table the list is drawn from (data-model columns)."""
        return self._table

    def append(self, frames: Frame | Iterable[Frame]) -> None:
        """Add frames (live mode: the broker journal and the sniffer call this); thread-safe."""
        import pandas as pd

        new = [frames] if isinstance(frames, Frame) else list(frames)
        with self._lock:
            known = set(self._table["frame"].astype(int)) if len(self._table) else set()
            new = [f for f in new if f.frame not in known]
            if not new:
                return
            for f in new:
                self._extra[f.frame] = f
            addition = frames_table(new)
            self._table = addition if not len(self._table) else pd.concat([self._table, addition],
                                                                          ignore_index=True)
            self._refresh_rows()
            if not self.selected_frame:
                self.selected_frame = new[0].frame

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
            return int(self._table["frame"].max()) if len(self._table) else 0

    # ------------------------------------------------------------ the frame list

    def _refresh_rows(self) -> None:
        matches = model.filter_table(self._table, self.filter_text)
        shown = matches.tail(self.max_rows) if self.following else matches.head(self.max_rows)
        columns = list(self.columns)
        rows = [model.row_dict(r, columns) for r in shown.to_dict("records")]
        with self.hold_sync():
            self.rows = rows
            self.row_total = len(self._table)
            self.match_total = len(matches)

    @traitlets.observe("filter_text", "max_rows", "columns")
    def _on_filter(self, change: dict) -> None:
        if hasattr(self, "_table"):
            self._refresh_rows()

    # ------------------------------------------------------------ selection

    @traitlets.observe("selected_frame")
    def _on_frame(self, change: dict) -> None:
        number = change["new"]
        if not number:
            self.view = {}
            return
        view = model.frame_view(self.frame(number))
        keep = self.selected_path if model.find_node(view, self.selected_path) >= 0 else ""
        with self.hold_sync():
            self.view = view
            self.selected_path = keep

    @traitlets.validate("selected_path")
    def _check_path(self, proposal: dict) -> str:
        path = proposal["value"]
        if path and self.view and model.find_node(self.view, path) < 0:
            raise traitlets.TraitError(f"frame {self.selected_frame} has no field {path!r}")
        return path

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
    def selected_node(self):
        """The selected :class:`FieldNode` (None when nothing is selected)."""
        if not self.selected_frame or not self.selected_path:
            return None
        tree = self.frame(self.selected_frame).tree
        return tree.find(self.selected_path) if tree is not None else None

    # ------------------------------------------------------------ display

    def snapshot_html(self) -> str:
        """The static stand-in a saved notebook shows: the frame list and the selected frame."""
        parts = [frames_html(self._table, max_rows=50)]
        if self.selected_frame:
            parts.append(frame_html(self.frame(self.selected_frame), self.selected_path or None))
        return "".join(parts)

    def _repr_mimebundle_(self, **kwargs: Any):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data)
        data["text/html"] = self.snapshot_html()
        return data, metadata

    def __repr__(self) -> str:
        return (f"<kafkalab Explorer: {len(self._table)} frames, frame {self.selected_frame or '-'} "
                f"selected{', field ' + self.selected_path if self.selected_path else ''}>")


def explore(source: Any, **kwargs: Any) -> Explorer:
    """``explore(capture_or_broker_or_frames)``: an :class:`Explorer` on ``source``."""
    return Explorer(source, **kwargs)
