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
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from . import columns as spec
from .frame import FRAME_COLUMNS

# column -> kind: "int", "float", "str", "bool", "list", "time" (from the column spec; ``ts`` is the rows' time)
COLUMN_KINDS: dict[str, str] = spec.filter_kinds("frames") | {"ts": "float"}
assert set(FRAME_COLUMNS) <= set(COLUMN_KINDS)

_KEYWORDS = {"and", "or", "not", "in", "contains", "matches", "true", "false", "null", "none"}
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>()!~,=\[\]])
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


class FilterError(ValueError):
    """A filter expression that cannot be used; ``position`` is the 0-based offset of the problem."""

    def __init__(self, message: str, expression: str, position: int) -> None:
        self.message, self.expression, self.position = message, expression, position
        super().__init__(f"{message} at position {position + 1}\n  {expression}\n  {' ' * position}^")


@dataclass(frozen=True)
class _Token:
    kind: str            # string, number, op, word, end
    text: str
    position: int
    value: Any = None


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            quote = text[pos] in "\"'"
            raise FilterError("unterminated string" if quote else f"unexpected character {text[pos]!r}", text, pos)
        kind = match.lastgroup
        token_text = match.group()
        if kind == "string":
            out.append(_Token("string", token_text, pos, _unquote(token_text, text, pos)))
        elif kind == "number":
            value = float(token_text) if any(c in token_text for c in ".eE") else int(token_text)
            out.append(_Token("number", token_text, pos, value))
        elif kind in ("op", "word"):
            out.append(_Token(kind, token_text, pos))
        pos = match.end()
    out.append(_Token("end", "", len(text)))
    return out


def _unquote(token: str, text: str, pos: int) -> str:
    body = token[1:-1]
    out = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise FilterError(f"unknown escape \\{nxt} in a string", text, pos + 1 + i)
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------- values

def _plain(value: Any) -> Any:
    """Table cells to Python values: pandas NA / NaN / NaT to None, numpy scalars to Python ones, timestamps
    to epoch seconds."""
    if value is None:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, (str, bool, int, list)):
        return value
    name = type(value).__name__
    if name in ("NAType", "NaTType"):
        return None
    if hasattr(value, "timestamp") and callable(value.timestamp):
        return value.timestamp()
    if hasattr(value, "tolist"):                  # numpy scalars and arrays
        return _plain(value.tolist())
    return value


def _getter(column: str) -> Callable[[Any], Any]:
    if column in ("time", "ts"):                # epoch seconds: Frame.ts, or a table row's time
        def get_time(row):
            value = getattr(row, "ts", None)
            if value is None:
                value = getattr(row, "time", None)
            return _plain(value)
        return get_time

    def get(row):
        return _plain(getattr(row, column, None))
    return get


@dataclass(frozen=True)
class _Operand:
    kind: str            # column, literal, set, predicate
    value: Any           # column name, literal value, tuple of literals, or a predicate
    position: int
    get: Callable[[Any], Any]


def _literal_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "str"


class _Parser:
    def __init__(self, text: str, columns: dict[str, str]) -> None:
        self.text = text
        self.columns = columns
        self.tokens = _tokens(text)
        self.i = 0
        self.used: set[str] = set()          # the columns the expression reads

    @property
    def token(self) -> _Token:
        return self.ahead(0)

    def ahead(self, k: int) -> _Token:
        """The token ``k`` places on; past the end, the end token (an unfinished filter reads as ended)."""
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def error(self, message: str, token: _Token | None = None) -> FilterError:
        return FilterError(message, self.text, (token or self.token).position)

    def word(self, token: _Token | None = None) -> str | None:
        token = token or self.token
        return token.text.lower() if token.kind == "word" and token.text.lower() in _KEYWORDS else None

    def accept(self, *texts: str) -> _Token | None:
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
                raise self.error("a literal alone is not a condition", _Token("", "", left.position))
            get = left.get
            return lambda row: _truthy(get(row))
        right = self.operand()
        return self.build(op, left, right, token)

    def operand(self) -> _Operand:
        token = self.token
        if token.kind == "op" and token.text in ("(", "["):
            return self.group()
        if token.kind in ("string", "number"):
            self.i += 1
            value = token.value
            return _Operand("literal", value, token.position, lambda row, v=value: v)
        if token.kind == "word":
            word = self.word()
            if word in ("true", "false", "null", "none"):
                self.i += 1
                value = {"true": True, "false": False}.get(word)
                return _Operand("literal", value, token.position, lambda row, v=value: v)
            if word is not None:
                raise self.error(f"expected a column or a value, found {token.text!r}")
            self.i += 1
            if token.text not in self.columns:
                known = ", ".join(sorted(self.columns))
                raise self.error(f"unknown column {token.text!r} (columns: {known})", token)
            self.used.update(("time", "ts") if token.text in ("time", "ts") else (token.text,))
            return _Operand("column", token.text, token.position, _getter(token.text))
        if token.kind == "end":
            raise self.error("unexpected end of filter")
        raise self.error(f"unexpected {token.text!r}")

    def group(self) -> _Operand:
        """``( expr )`` or a literal set ``(a, b, ...)`` / ``[a, b, ...]``."""
        opening = self.token
        closing = ")" if opening.text == "(" else "]"
        self.i += 1
        if opening.text == "(" and not self._set_ahead():
            inner = self.expr()
            if not self.accept(")"):
                raise self.error("expected ')'")
            return _Operand("predicate", inner, opening.position, lambda row: None)
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
        return _Operand("set", items, opening.position, lambda row, v=items: v)

    def _set_ahead(self) -> bool:
        """After '(': a literal followed by ',' or ')' starts a set, anything else an expression."""
        token, after = self.ahead(0), self.ahead(1)
        literal = token.kind in ("string", "number") or self.word(token) in ("true", "false", "null", "none")
        if token.kind == "op" and token.text == ")":
            return True
        return literal and after.kind == "op" and after.text in (",", ")")

    # ------------------------------------------------------------ building comparisons

    def build(self, op: str, left: _Operand, right: _Operand, at: _Token) -> Callable[[Any], bool]:
        for side in (left, right):
            if side.kind == "predicate":
                raise self.error("a condition cannot be compared", _Token("", "", side.position))
        if op in ("in", "not in", "contains"):
            if op == "contains":
                left, right = right, left
            test = self.membership(left, right, at)
            return test if op != "not in" else (lambda row: not test(row))
        if op == "matches":
            return self.matches(left, right)
        self.check_types(op, left, right)
        lget, rget = left.get, right.get
        if op in ("==", "!="):
            equal = op == "=="
            return lambda row: (lget(row) == rget(row)) is equal
        compare = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                   ">=": lambda a, b: a >= b}[op]

        def ordered(row):
            a, b = lget(row), rget(row)
            if a is None or b is None:
                return False
            try:
                return compare(a, b)
            except TypeError:
                return False
        return ordered

    def kind_of(self, operand: _Operand) -> str:
        if operand.kind == "column":
            kind = self.columns[operand.value]
            return {"int": "number", "float": "number", "time": "number"}.get(kind, kind)
        if operand.kind == "set":
            return "set"
        return _literal_kind(operand.value)

    def check_types(self, op: str, left: _Operand, right: _Operand) -> None:
        kinds = (self.kind_of(left), self.kind_of(right))
        if "null" in kinds:
            if op not in ("==", "!="):
                raise self.error(f"null can only be compared with == or !=, not {op}",
                                 _Token("", "", right.position if kinds[1] == "null" else left.position))
            return
        if "set" in kinds:
            raise self.error("a set can only follow 'in'", _Token("", "", right.position))
        if "list" in kinds:
            other = left if kinds[0] != "list" else right
            raise self.error("a list column is tested with 'in' or 'contains'", _Token("", "", other.position))
        if kinds[0] != kinds[1]:
            column = left if left.kind == "column" else right
            literal = right if column is left else left
            raise self.error(f"{column.value} holds {_describe(kinds[column is right])}, not "
                             f"{_describe(kinds[column is left])}", _Token("", "", literal.position))

    def membership(self, item: _Operand, container: _Operand, at: _Token) -> Callable[[Any], bool]:
        iget, cget = item.get, container.get
        if container.kind == "set":
            values = container.value
            if item.kind == "column" and self.kind_of(item) == "list":
                return lambda row: any(v in values for v in (iget(row) or ()))
            return lambda row: iget(row) in values
        if container.kind == "literal":
            if not isinstance(container.value, str):
                raise self.error("'in' needs a list column, a string or a set on its right",
                                 _Token("", "", container.position))

        def contained(row):
            needle, haystack = iget(row), cget(row)
            if needle is None or haystack is None:
                return False
            if isinstance(haystack, str):
                return isinstance(needle, str) and needle in haystack
            try:
                return needle in haystack
            except TypeError:
                return False
        return contained

    def matches(self, subject: _Operand, pattern: _Operand) -> Callable[[Any], bool]:
        if pattern.kind != "literal" or not isinstance(pattern.value, str):
            raise self.error("'matches' needs a string pattern on its right", _Token("", "", pattern.position))
        try:
            regex = re.compile(pattern.value)
        except re.error as exc:
            raise FilterError(f"bad regular expression: {exc.msg}", self.text,
                              pattern.position + 1 + (exc.pos or 0)) from None
        get = subject.get

        def match(row):
            value = get(row)
            if isinstance(value, str):
                return regex.search(value) is not None
            if isinstance(value, list):
                return any(isinstance(v, str) and regex.search(v) is not None for v in value)
            return False
        return match


def _describe(kind: str) -> str:
    return {"number": "numbers", "str": "strings", "bool": "true/false", "list": "lists"}.get(kind, kind)


def _truthy(value: Any) -> bool:
    return value is not None and value is not False and value != 0 and value != "" and value != []


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
