"""Request/response sequence diagrams per connection, as SVG (with text and PNG forms)."""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from html import escape
from typing import Any, Iterable

from .common import ERROR_COLOR, INFERRED_COLOR, PALETTE, _isna, _items, _shorten, frames_of


ROW = 24            # px between messages


FONT = 11           # px


CHAR = 6.6          # px per character of the monospace font at FONT px (an estimate, for layout)


TOP = 64            # px above the first message (lifeline headers)


LEFT = 150          # px for the time and frame columns


MIN_GAP, MAX_GAP = 260, 560   # px between lifelines: room for the longest label, within these bounds


LABEL_CHARS = 72    # labels are shortened to this many characters


HIT_WIDTH = 14      # px: the invisible stroke over each arrow that a click hits (rows are ROW px apart)


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
        """SVG and text only: every notebook front end draws the SVG, and a saved notebook keeps one copy of
        each diagram (``to_png()`` or ``save("x.png")`` when a picture file is wanted)."""
        return {"text/plain": self.text, "image/svg+xml": self.svg}

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
        drawn = (f'<line{cls} x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                 f'stroke-width="{width}"{dash}/>')
        if len(shape) <= 8:
            return drawn
        # an arrow is 1.6 px thick: an invisible 14 px stroke over it is what the pointer hits
        return drawn + (f'<line class="arrow-hit" data-frame="{shape[9]}" x1="{x1:.1f}" y1="{y1:.1f}" '
                        f'x2="{x2:.1f}" y2="{y2:.1f}" stroke="#000" stroke-opacity="0" stroke-width="{HIT_WIDTH}" '
                        f'pointer-events="stroke"/>')
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
