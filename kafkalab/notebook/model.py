"""The explorer's Python half, free of widget libraries: sources, the frame list, views and selection.

What it owns: turning whatever the user passes to ``explore()`` (a Frame, a list of Frames, a Capture with
``cap[n]``, a Broker or Journal with ``.frame(n)``) into a frames table plus a lookup and a cheap poll for
new frames; flattening one frame's field tree into the JSON-able *view* the browser draws (nodes with their
byte spans, one entry per coordinate space: the frame, then each inflated buffer); resolving a path or a
clicked byte to a node; the filter a field stands for; Expert Info. The frame list itself (filter, sort,
pages) is :mod:`.listing`. What it must not know: traitlets, anywidget, the DOM.

Theory: every node of a view carries ``b``, the index of the buffer its ``s``/``e`` offsets refer to (0 for
the frame). A node with ``x >= 0`` opens buffer ``x`` (inflated record data): its own span is in the parent's
space, its children's spans in buffer ``x``. A clicked byte resolves like :meth:`FieldNode.deepest_at`: the
deepest node of that buffer covering it, never descending into another buffer.
"""
from __future__ import annotations

import re
import threading
from typing import Any, Callable, Iterable

from kafkalab.dissect.frame import Frame
from kafkalab.dissect.frames_table import frames_table
from kafkalab.protocol.tree import FieldNode

from .html import node_label, node_span

LIST_COLUMNS = ["frame", "time", "src", "dst", "kind", "api_name", "api_version", "correlation_id", "size",
                "latency_ms", "error", "summary"]


class FrameSource:
    """Uniform access to the frames of a Frame, a list of Frames or an object with a ``frames`` table and
    ``frame(n)`` or ``[n]`` lookup (Capture, Broker, Journal, LiveCapture). Lookup by frame number is O(1)
    for lists (a dict kept up to date as the list grows)."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self._list: list[Frame] | None = None
        self._by_number: dict[int, Frame] = {}
        if isinstance(source, Frame):
            self._list = [source]
        elif isinstance(source, (list, tuple)):
            self._list = list(source)
        elif not hasattr(source, "frames"):
            raise TypeError(f"explore() takes a Frame, a list of Frames or an object with a frames table and "
                            f"frame lookup (a Capture, a Broker), not {type(source).__name__}")
        if self._list is not None:
            self._by_number = {f.frame: f for f in self._list}

    def frame_list(self) -> list[Frame] | None:
        """The Frame objects when the source is (or lists) them cheaply, else None."""
        if self._list is not None:
            return self._list
        listed = getattr(self.source, "__dict__", {}).get("frame_list")     # a live capture's growing list,
        if isinstance(listed, list):                                     # never a property that builds one
            return listed
        frames = self.source.frames
        frames = frames() if callable(frames) else frames
        return list(frames) if isinstance(frames, (list, tuple)) else None

    def table(self):
        frames = self.frame_list()
        if frames is not None:
            return frames_table(frames)
        frames = self.source.frames
        return frames() if callable(frames) else frames

    def frame(self, number: int) -> Frame:
        if self._list is not None:
            frame = self._by_number.get(number)
            if frame is None:
                raise KeyError(f"no frame {number}")
            return frame
        lookup = getattr(self.source, "frame", None)
        return lookup(number) if callable(lookup) else self.source[number]

    def new_frames(self, after: int) -> list[Frame]:
        """Frames numbered above ``after`` (for live following); cheap when nothing is new."""
        journal = getattr(self.source, "journal_ring", self.source)
        if callable(getattr(journal, "entries", None)):       # a broker journal: look at numbers only
            numbers = [e.number for e in journal.entries() if e.number > after]
            return [journal.frame(n) for n in numbers]
        if isinstance(self.source, list):                      # a list the caller keeps appending to
            frames: list[Frame] | None = self.source
        else:
            frames = self._list if self._list is not None else self.frame_list()
        if frames is not None:
            new = _after(frames, after)
            if self._list is not None:
                self._by_number.update((f.frame, f) for f in new)
            return new
        table = self.table()
        return [self.frame(int(n)) for n in table["frame"] if int(n) > after]


def _after(frames: list[Frame], after: int) -> list[Frame]:
    """The frames numbered above ``after`` at the end of ``frames`` (numbered in order): a walk back from
    the end, so an idle poll costs nothing."""
    start = len(frames)
    while start and frames[start - 1].frame > after:
        start -= 1
    return list(frames[start:])


def field_filter(node: FieldNode | None) -> str:
    """The display filter a field stands for ("apply as filter"), or "" when no frames-table column holds it:
    header fields, error codes, topic names, client ids."""
    if node is None or node.children:
        return ""
    name, value = node.name, node.value
    column = {"request_api_key": "api_key", "request_api_version": "api_version",
              "correlation_id": "correlation_id", "error_code": "error_code",
              "client_id": "client_id"}.get(name)
    if column and isinstance(value, (int, str)) and not isinstance(value, bool):
        return f"{column} == {_literal(value)}"
    if name in ("name", "topic", "topic_name") and isinstance(value, str) and "topic" in node.path:
        return f"topics contains {_literal(value)}"
    return ""


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


# ---------------------------------------------------------------- one frame's view

def frame_view(frame: Frame) -> dict[str, Any]:
    """The JSON-able view of one frame: buffers (label, bytes), the flattened tree, and ``partner``, the
    frame number of its request or response (None when the data has no partner)."""
    buffers: list[dict[str, Any]] = [{"label": f"Frame {frame.frame} ({len(frame.raw)} bytes)",
                                      "data": bytes(frame.raw)}]
    nodes: list[dict[str, Any]] = []
    tree = frame.tree
    if tree is not None:
        _flatten(tree, 0, 0, -1, nodes, buffers)
    partner = frame.response_frame if frame.kind == "request" else frame.request_frame
    return {"frame": int(frame.frame), "title": frame.summary, "diagnostics": list(frame.diagnostics),
            "partner": int(partner) if partner is not None else None, "buffers": buffers, "nodes": nodes}


def _flatten(node: FieldNode, buffer: int, depth: int, parent: int, nodes: list, buffers: list) -> int:
    index = len(nodes)
    entry = {"p": node.path, "l": node_label(node), "w": node_span(node), "s": node.start, "e": node.end,
             "b": buffer, "x": -1, "depth": depth, "parent": parent, "d": list(node.diagnostics), "c": []}
    nodes.append(entry)
    inner = buffer
    if node.buffer is not None:
        inner = entry["x"] = len(buffers)
        short = next((part for part in reversed(node.path.split(".")) if "[" in part), node.name)
        buffers.append({"label": f"Inflated {short} ({len(node.buffer)} bytes)", "path": node.path,
                        "data": bytes(node.buffer)})
    for child in node.children:
        entry["c"].append(_flatten(child, inner, depth + 1, index, nodes, buffers))
    return index


def find_node(view: dict[str, Any], path: str) -> int:
    """Index of the first node (depth-first) whose path is ``path``; -1 when there is none."""
    for i, node in enumerate(view["nodes"]):
        if node["p"] == path:
            return i
    return -1


def node_at(view: dict[str, Any], buffer: int, offset: int) -> int:
    """Index of the deepest node of ``buffer`` covering ``offset``, never entering a node that opens another
    buffer (as :meth:`FieldNode.deepest_at` does); -1 when none covers it."""
    nodes = view["nodes"]
    if not nodes:
        return -1
    roots = [0] if buffer == 0 else next((n["c"] for n in nodes if n["x"] == buffer), [])
    best = -1
    candidates = roots
    while True:
        hit = next((i for i in candidates if nodes[i]["x"] < 0 and nodes[i]["s"] <= offset < nodes[i]["e"]), -1)
        if hit < 0:
            return best
        best, candidates = hit, nodes[hit]["c"]


def node_range(view: dict[str, Any], index: int) -> tuple[int, int, int]:
    """(buffer, start, end) of node ``index``."""
    node = view["nodes"][index]
    return node["b"], node["s"], node["e"]


# ---------------------------------------------------------------- expert info

_NUMBER = re.compile(r"\d+")
SEVERE = ("malformed", "crc", "undecodable", "gap", "lost")


def expert_info(table, known: dict[str, dict] | None = None) -> dict[str, dict]:
    """Every diagnostic of a frames table grouped like Wireshark's Expert Info: the message with its numbers
    and its parenthesised detail folded (``trailing bytes: N after the body``), how often it occurs, the
    first frames that carry it, and a severity. ``known`` (a previous result) is extended, so appended
    frames cost only themselves."""
    groups = {} if known is None else known
    if not len(table) or "diagnostics" not in table.columns:
        return groups
    for number, notes in zip(table["frame"].to_numpy(), table["diagnostics"].to_numpy()):
        if notes is None or not len(notes):
            continue
        for note in notes:
            what = _NUMBER.sub("N", str(note).split(" (")[0])
            group = groups.get(what)
            if group is None:
                severe = any(word in what.lower() for word in SEVERE)
                group = groups[what] = {"what": what, "example": str(note), "count": 0, "frames": [],
                                        "severity": "error" if severe else "warning"}
            group["count"] += 1
            if len(group["frames"]) < 5:
                group["frames"].append(int(number))
    return groups


# ---------------------------------------------------------------- live following

class Follower:
    """Polls a source every ``interval`` seconds on a daemon thread and hands new frames to ``deliver``."""

    def __init__(self, source: FrameSource, deliver: Callable[[list[Frame]], None], after: Callable[[], int],
                 interval: float = 1.0) -> None:
        self.source, self.deliver, self.after, self.interval = source, deliver, after, interval
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafkalab-explorer-follow", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> int:
        """Fetch and deliver what is new now; returns how many frames arrived."""
        try:
            frames = self.source.new_frames(self.after())
        except Exception as exc:  # a source mid-shutdown must not kill the notebook's thread silently
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return 0
        if frames:
            self.deliver(frames)
        return len(frames)

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=max(1.0, 2 * self.interval))
