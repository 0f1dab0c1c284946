"""kafkalab in Jupyter: static HTML views that survive a saved notebook, and the three-pane Explorer.

``explore(source)`` opens the Explorer (frame list, field tree, bytes) on a Frame, a list of Frames, a
Capture or a Broker; ``browse(broker)`` opens the message browser (topics, partitions, records, consumer
groups of a running broker). The HTML functions need no notebook libraries; the widget imports anywidget (a
kafkalab dependency) on first use. :mod:`kafkalab.notebook.plots` has the sequence diagrams,
latency, throughput, consumer-lag and error views (matplotlib, imported on first use).
"""
from __future__ import annotations

from .html import frame_html, frames_html, hexdump_html, tree_html

__all__ = ["Browser", "browse", "Explorer", "explore", "frame_html", "frames_html", "hexdump_html", "tree_html", "sample_frames"]


def __getattr__(name: str):
    if name in ("Explorer", "explore"):
        from . import widget
        return getattr(widget, name)
    if name in ("Browser", "browse"):
        from . import browser
        return getattr(browser, name)
    if name == "sample_frames":
        from .samples import sample_frames
        return sample_frames
    raise AttributeError(f"module 'kafkalab.notebook' has no attribute {name!r}")
