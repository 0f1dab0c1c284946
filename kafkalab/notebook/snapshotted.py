"""What every kafkalab widget does to survive a saved notebook: a static HTML snapshot beside the live view.

A widget mixes in :class:`Snapshotted` (before ``anywidget.AnyWidget``) and defines ``snapshot_html()`` and
``live_note``. The static stand-in goes into the widget's own bundle (nbconvert and nbviewer show it) and, in
a live kernel, into an output of its own next to the live view (see ``_ipython_display_``).
"""
from __future__ import annotations

from typing import Any

from .html import LIVE_NOTE, snapshot_switch


class Snapshotted:
    live_note = LIVE_NOTE        # the live view's text/html: what a reader sees where the widget cannot be drawn

    def snapshot_html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return dict(data, **{"text/html": self.snapshot_html()}), metadata

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Two outputs: the static snapshot, then the live view. JupyterLab renders a trusted notebook's widget
        output with the widget renderer even when its model is gone (after a restart: "model not found"), so
        the snapshot is an output of its own; its style rules hide the live view's error when the model is
        gone and hide the snapshot itself while the live view is drawn (see ``snapshot_switch``)."""
        from IPython.display import publish_display_data

        bundle = self._repr_mimebundle_(**kwargs)
        if bundle is None:
            return
        data, metadata = bundle
        publish_display_data({"text/plain": repr(self), "text/html": snapshot_switch(data["text/html"])})
        publish_display_data(dict(data, **{"text/html": self.live_note}), metadata)
