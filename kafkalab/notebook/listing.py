"""The explorer's frame list as data: a frames table, a display filter and a sort order, read a page at a time.

What it owns: which table rows the list shows and in what order (``order``, positions into the table), the
lookup from a frame number to its row (a dict, O(1)), and turning a slice of that order into the JSON-able
rows the browser draws. The browser never holds the whole list: it asks for the rows it is about to show,
so 100,000 frames cost the same to scroll as 100.

The filter is the display-filter language of ``cap.filter()`` and ``kafkalab decode -Y``
(:mod:`kafkalab.dissect.filter`); one bare word that is not a column (``metadata``, ``orders``) searches the
text columns instead, as a search box would. Appended frames (live following) are filtered on their own and
joined to the order, so a poll costs what arrived, not the whole table.
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterable

from kafkalab.dissect.filter import COLUMN_KINDS, FilterError, compile_filter

SEARCH_COLUMNS = ("summary", "api_name", "error", "client_id", "src", "dst")
_BARE_WORD = re.compile(r"^\s*[^\s\"'()=!<>~&|,\[\]]+\s*$")


class Listing:
    """``Listing(table)``; ``apply(filter_text, sort)``; ``page(start, count, columns)``; ``append(rows)``."""

    def __init__(self, table) -> None:
        import numpy as np

        self.table = table
        self.filter_text = ""
        self.sort = ""
        self._predicate = None                       # a callable over a table -> boolean mask, or None
        self.order = np.arange(len(table))
        self._row_of = _row_index(table, 0)

    def __len__(self) -> int:
        return len(self.order)

    # ------------------------------------------------------------ filter and sort

    def apply(self, filter_text: str, sort: str = "") -> None:
        """Show the rows matching ``filter_text`` ordered by ``sort`` (a column, ``-column`` for descending,
        ``""`` for frame order). A bad filter raises :class:`FilterError` and leaves the list as it was."""
        predicate = _predicate(filter_text)
        column = sort.lstrip("-")
        if column and column not in self.table.columns:
            raise KeyError(f"no column {column!r} to sort by")
        self._predicate, self.filter_text, self.sort = predicate, filter_text, sort
        self.order = self._ordered(self._matching(self.table, 0))

    def _matching(self, table, base: int):
        import numpy as np

        positions = np.arange(base, base + len(table))
        if self._predicate is None or not len(table):
            return positions
        return positions[np.asarray(self._predicate(table), dtype=bool)]

    def _ordered(self, positions):
        if not self.sort or not len(positions):
            return positions
        values = self.table[self.sort.lstrip("-")].iloc[positions].reset_index(drop=True)
        if values.dtype == object:
            values = values.map(lambda v: "" if v is None else ", ".join(map(str, v))
                                if isinstance(v, (list, tuple)) else str(v))
        ranks = values.sort_values(ascending=not self.sort.startswith("-"), kind="stable",
                                   na_position="last").index.to_numpy()
        return positions[ranks]

    # ------------------------------------------------------------ growing

    def append(self, addition) -> None:
        """Add rows at the end of the table (live following): only the new rows are filtered."""
        import numpy as np
        import pandas as pd

        base = len(self.table)
        self.table = addition if not base else pd.concat([self.table, addition], ignore_index=True)
        self._row_of.update(_row_index(addition, base))
        new = self._matching(addition.reset_index(drop=True), base)
        self.order = self._ordered(np.concatenate([self.order, new])) if self.sort else \
            np.concatenate([self.order, new])

    # ------------------------------------------------------------ reading

    def row_of(self, frame: int) -> int:
        """The table row of frame number ``frame``; -1 when the table has none."""
        return self._row_of.get(int(frame), -1)

    def index_of(self, frame: int) -> int:
        """Where frame ``frame`` is in the shown order; -1 when the filter hides it (or it is unknown)."""
        import numpy as np

        row = self.row_of(frame)
        if row < 0:
            return -1
        hits = np.flatnonzero(self.order == row)
        return int(hits[0]) if len(hits) else -1

    def frame_at(self, index: int) -> int:
        return int(self.table["frame"].iat[int(self.order[index])])

    def page(self, start: int, count: int, columns: Iterable[str]) -> list[dict[str, Any]]:
        """Rows ``start .. start+count`` of the shown order as JSON-able dicts (plus ``_i``, their index)."""
        start = max(0, start)
        positions = self.order[start:start + max(0, count)]
        columns = [c for c in dict.fromkeys(["frame", "kind", "error", *columns]) if c in self.table.columns]
        records = self.table.iloc[positions][columns].to_dict("records")
        return [dict(row_dict(r, columns), _i=start + k) for k, r in enumerate(records)]


def _row_index(table, base: int) -> dict[int, int]:
    if not len(table):
        return {}
    return {int(n): base + i for i, n in enumerate(table["frame"].to_numpy())}


def _predicate(text: str):
    """A function table -> mask for ``text``: the display filter, or a text search for one bare word."""
    text = text.strip()
    if not text:
        return None
    try:
        compiled = compile_filter(text)
    except FilterError:
        if _BARE_WORD.match(text) and text not in COLUMN_KINDS:
            return lambda table: search_mask(table, text)
        raise
    return compiled.mask


def search_mask(table, text: str):
    """Rows whose summary, API, error, client id or endpoints contain ``text`` (case-insensitive); a number
    also matches the frame number."""
    mask = None
    for name in SEARCH_COLUMNS:
        if name in table.columns:
            hit = table[name].astype("string").str.contains(text, case=False, regex=False).fillna(False)
            mask = hit if mask is None else (mask | hit)
    if text.isdigit() and "frame" in table.columns:
        mask = mask | (table["frame"] == int(text))
    return mask.astype(bool).to_numpy()


def row_dict(row: dict[str, Any], columns: Iterable[str]) -> dict[str, Any]:
    """One frames-table row as JSON-able values (times as HH:MM:SS.ffffff, missing values as None)."""
    out: dict[str, Any] = {}
    for name in columns:
        value = row.get(name)
        if hasattr(value, "strftime"):
            value = value.strftime("%H:%M:%S.%f")
        elif isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
            value = ", ".join(map(str, value))
        elif value is None or (isinstance(value, float) and math.isnan(value)) or _is_na(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        out[name] = value
    return out


def _is_na(value: Any) -> bool:
    try:
        import pandas as pd
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
