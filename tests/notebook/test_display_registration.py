"""Importing kafkalab inside IPython registers static HTML for its objects (no display code in the core)."""
from __future__ import annotations

import importlib


def test_import_inside_ipython_registers_html_formatters() -> None:
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    import kafkalab
    importlib.reload(kafkalab)                   # the registration runs at import time
    from kafkalab.notebook import sample_frames

    html = shell.display_formatter.formatters["text/html"]
    html.enabled = True                          # a terminal shell disables HTML; Jupyter kernels enable it
    frame = sample_frames()[1]
    rendered = html(frame)
    assert rendered and "<style" not in rendered and "<script" not in rendered
    assert frame.summary.split(" · ")[0] in rendered
    tree_html = html(frame.tree)
    assert tree_html and "topic_data" in tree_html
    batch = frame.body["topic_data"][0]["partition_data"][0]["records"][0]
    assert "order-1" in html(batch) or "6f726465722d31" in html(batch)
