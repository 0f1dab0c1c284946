"""Field-by-field comparison of two frames (what changed when a client setting changed)."""
from __future__ import annotations

import functools
from typing import Any


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
    table = _comparison_type()(rows, columns=COMPARE_COLUMNS)
    return table.astype({"a": "string", "b": "string", "a_bytes": "Int64", "b_bytes": "Int64", "same": bool})


@functools.cache
def _comparison_type():
    """A DataFrame that shows whole paths (pandas cuts cells at 50 characters, and field paths run longer:
    ``topic_data[0].partition_data[0].records[0].records[0].headers[0].key``)."""
    import pandas as pd

    class FrameComparison(pd.DataFrame):
        @property
        def _constructor(self):
            return FrameComparison

        def _repr_html_(self):
            with pd.option_context("display.max_colwidth", None):
                return super()._repr_html_()

        def __repr__(self) -> str:
            with pd.option_context("display.max_colwidth", None):
                return super().__repr__()

    return FrameComparison


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
