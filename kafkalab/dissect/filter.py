"""A small display-filter language over frames, like Wireshark's ``-Y`` but over the frames table's columns.

    api_name == "Produce" and latency_ms > 5
    error != null
    "orders" in topics
    client_id matches "^rdkafka"
    not inferred and (kind == "response" or size >= 1000)
    api_key in (0, 1) and topics contains "orders"

Grammar (keywords are case-insensitive; ``&&``, ``||`` and ``!`` are accepted for ``and``, ``or``, ``not``)::

    expr       := and_expr ("or" and_expr)*
    and_expr   := unary ("and" unary)*
    unary      := "not" unary | comparison
    comparison := operand [op operand]          op: == != < <= > >= in, not in, contains, matches (or ~)
    operand    := COLUMN | STRING | NUMBER | true | false | null | "(" expr ")" | "(" literal, ... ")"

A column alone tests truthiness (``inferred``, ``error``: not null, not empty, not zero). Comparisons with
``null`` test presence; ordering comparisons involving a null are false. ``x in COLUMN`` tests membership in
a list column (``topics``, ``diagnostics``) or a substring of a string column; ``COLUMN in (a, b)`` tests
membership in a literal set; ``contains`` is ``in`` with its operands swapped; ``matches`` is a regular
expression search (on a list column: any item). Columns are those of the frames table plus ``ts``.

The expression is parsed once into a tree of closures (nothing is ever passed to ``eval``); problems
(unknown column, a string compared with a number column, a bad regular expression, a stray token) raise
:class:`FilterError` naming the position. A compiled :class:`Filter` is a predicate over anything whose
attributes are the columns: :class:`~.frame.Frame` objects or the rows of ``DataFrame.itertuples()``.

The language lives in three modules: :mod:`.filter_tokens` (tokens and :class:`FilterError`), this one
(the grammar and the :class:`Filter` users hold) and :mod:`.filter_predicates` (column values and what each
comparison tests).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from . import columns as spec
from .filter_predicates import ComparisonBuilder, Operand, getter, truthy
from .filter_tokens import KEYWORDS, FilterError, Token, tokens
from .frame import FRAME_COLUMNS

__all__ = ["COLUMN_KINDS", "Filter", "FilterError", "compile_filter", "filter_table"]

# column -> kind: "int", "float", "str", "bool", "list", "time" (from the column spec; ``ts`` is the rows' time)
COLUMN_KINDS: dict[str, str] = spec.filter_kinds("frames") | {"ts": "float"}
assert set(FRAME_COLUMNS) <= set(COLUMN_KINDS)


class _Parser(ComparisonBuilder):
    def __init__(self, text: str, columns: dict[str, str]) -> None:
        self.text = text
        self.columns = columns
        self.tokens = tokens(text)
        self.i = 0
        self.used: set[str] = set()          # the columns the expression reads

    @property
    def token(self) -> Token:
        return self.ahead(0)

    def ahead(self, k: int) -> Token:
        """The token ``k`` places on; past the end, the end token (an unfinished filter reads as ended)."""
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def error(self, message: str, token: Token | None = None) -> FilterError:
        return FilterError(message, self.text, (token or self.token).position)

    def word(self, token: Token | None = None) -> str | None:
        token = token or self.token
        return token.text.lower() if token.kind == "word" and token.text.lower() in KEYWORDS else None

    def accept(self, *texts: str) -> Token | None:
        token = self.token
        if (token.kind == "op" and token.text in texts) or (self.word() in texts):
            self.i += 1
            return token
        return None

    def parse(self) -> Callable[[Any], bool]:
        if self.token.kind == "end":
            raise self.error("empty filter")
        predicate = self.expr()
        if self.token.kind != "end":
            raise self.error(f"unexpected {self.token.text!r}")
        return predicate

    def expr(self) -> Callable[[Any], bool]:
        parts = [self.and_expr()]
        while self.accept("or", "||"):
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda row: any(p(row) for p in parts)

    def and_expr(self) -> Callable[[Any], bool]:
        parts = [self.unary()]
        while self.accept("and", "&&"):
            parts.append(self.unary())
        if len(parts) == 1:
            return parts[0]
        return lambda row: all(p(row) for p in parts)

    def unary(self) -> Callable[[Any], bool]:
        if self.accept("not", "!"):
            inner = self.unary()
            return lambda row: not inner(row)
        return self.comparison()

    def comparison(self) -> Callable[[Any], bool]:
        left = self.operand()
        token = self.token
        op = None
        if token.kind == "op" and token.text in ("==", "!=", "<", "<=", ">", ">=", "~", "="):
            op = {"=": "==", "~": "matches"}.get(token.text, token.text)
            self.i += 1
        elif self.word() in ("in", "contains", "matches"):
            op = self.word()
            self.i += 1
        elif self.word() == "not" and self.word(self.ahead(1)) == "in":
            op = "not in"
            self.i += 2
        if op is None:
            if left.kind == "predicate":
                return left.value
            if left.kind != "column":
                raise self.error("a literal alone is not a condition", Token("", "", left.position))
            get = left.get
            return lambda row: truthy(get(row))
        right = self.operand()
        return self.build(op, left, right, token)

    def operand(self) -> Operand:
        token = self.token
        if token.kind == "op" and token.text in ("(", "["):
            return self.group()
        if token.kind in ("string", "number"):
            self.i += 1
            value = token.value
            return Operand("literal", value, token.position, lambda row, v=value: v)
        if token.kind == "word":
            word = self.word()
            if word in ("true", "false", "null", "none"):
                self.i += 1
                value = {"true": True, "false": False}.get(word)
                return Operand("literal", value, token.position, lambda row, v=value: v)
            if word is not None:
                raise self.error(f"expected a column or a value, found {token.text!r}")
            self.i += 1
            if token.text not in self.columns:
                known = ", ".join(sorted(self.columns))
                raise self.error(f"unknown column {token.text!r} (columns: {known})", token)
            self.used.update(("time", "ts") if token.text in ("time", "ts") else (token.text,))
            return Operand("column", token.text, token.position, getter(token.text))
        if token.kind == "end":
            raise self.error("unexpected end of filter")
        raise self.error(f"unexpected {token.text!r}")

    def group(self) -> Operand:
        """``( expr )`` or a literal set ``(a, b, ...)`` / ``[a, b, ...]``."""
        opening = self.token
        closing = ")" if opening.text == "(" else "]"
        self.i += 1
        if opening.text == "(" and not self._set_ahead():
            inner = self.expr()
            if not self.accept(")"):
                raise self.error("expected ')'")
            return Operand("predicate", inner, opening.position, lambda row: None)
        values = []
        while not self.accept(closing):
            token = self.token
            if token.kind in ("string", "number"):
                values.append(token.value)
            elif self.word() in ("true", "false", "null", "none"):
                values.append({"true": True, "false": False}.get(self.word()))
            else:
                raise self.error("a set holds only literal values")
            self.i += 1
            if not self.accept(","):
                if not self.accept(closing):
                    raise self.error(f"expected ',' or {closing!r}")
                break
        items = tuple(values)
        return Operand("set", items, opening.position, lambda row, v=items: v)

    def _set_ahead(self) -> bool:
        """After '(': a literal followed by ',' or ')' starts a set, anything else an expression."""
        token, after = self.ahead(0), self.ahead(1)
        literal = token.kind in ("string", "number") or self.word(token) in ("true", "false", "null", "none")
        if token.kind == "op" and token.text == ")":
            return True
        return literal and after.kind == "op" and after.text in (",", ")")



class Filter:
    """A compiled filter expression: call it on a frame (or a table row) to test it."""

    def __init__(self, expression: str, columns: dict[str, str] | None = None) -> None:
        self.expression = expression
        parser = _Parser(expression, columns or COLUMN_KINDS)
        self._predicate = parser.parse()
        self.columns_used = frozenset(parser.used)

    def __call__(self, row: Any) -> bool:
        return bool(self._predicate(row))

    def __repr__(self) -> str:
        return f"Filter({self.expression!r})"

    def select(self, frames: Iterable) -> list:
        return [f for f in frames if self._predicate(f)]

    def mask(self, table):
        """A boolean Series over a frames table (rows read with ``itertuples``)."""
        import pandas as pd

        needed = [c for c in table.columns if c in self.columns_used]     # read only what the filter uses
        rows = table[needed].itertuples(index=False) if needed else table.itertuples(index=False)
        values = [bool(self._predicate(row)) for row in rows]
        return pd.Series(values, index=table.index, dtype=bool)


def compile_filter(expression: str | Filter) -> Filter:
    return expression if isinstance(expression, Filter) else Filter(expression)


def filter_table(table, expression: str | Filter):
    """The rows of a frames table that match ``expression``."""
    return table[compile_filter(expression).mask(table)]
