"""What a parsed filter compares: column values read from rows, and the predicates comparisons become.

Owns: reading a column from a :class:`~.frame.Frame` or a table row as a plain Python value (NaN, NA and
NaT are null, timestamps epoch seconds), the operand of a comparison, and turning ``left op right`` into a
closure after checking the two sides' kinds: a string against a number column, a list column compared with
``==`` or a bad regular expression raise :class:`~.filter_tokens.FilterError` at parse time, never while
matching. The grammar that finds the operands and operators is :mod:`.filter`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from .filter_tokens import FilterError, Token


def plain(value: Any) -> Any:
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
        return plain(value.tolist())
    return value


def getter(column: str) -> Callable[[Any], Any]:
    if column in ("time", "ts"):                # epoch seconds: Frame.ts, or a table row's time
        def get_time(row):
            value = getattr(row, "ts", None)
            if value is None:
                value = getattr(row, "time", None)
            return plain(value)
        return get_time

    def get(row):
        return plain(getattr(row, column, None))
    return get


@dataclass(frozen=True)
class Operand:
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


class ComparisonBuilder:
    """Builds the predicate of one comparison. Mixed into the parser, whose ``text``, ``columns`` and
    ``error`` it uses to name the position of a problem."""

    text: str
    columns: dict[str, str]
    error: Callable[..., FilterError]

    def build(self, op: str, left: Operand, right: Operand, at: Token) -> Callable[[Any], bool]:
        for side in (left, right):
            if side.kind == "predicate":
                raise self.error("a condition cannot be compared", Token("", "", side.position))
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

    def kind_of(self, operand: Operand) -> str:
        if operand.kind == "column":
            kind = self.columns[operand.value]
            return {"int": "number", "float": "number", "time": "number"}.get(kind, kind)
        if operand.kind == "set":
            return "set"
        return _literal_kind(operand.value)

    def check_types(self, op: str, left: Operand, right: Operand) -> None:
        kinds = (self.kind_of(left), self.kind_of(right))
        if "null" in kinds:
            if op not in ("==", "!="):
                raise self.error(f"null can only be compared with == or !=, not {op}",
                                 Token("", "", right.position if kinds[1] == "null" else left.position))
            return
        if "set" in kinds:
            raise self.error("a set can only follow 'in'", Token("", "", right.position))
        if "list" in kinds:
            other = left if kinds[0] != "list" else right
            raise self.error("a list column is tested with 'in' or 'contains'", Token("", "", other.position))
        if kinds[0] != kinds[1]:
            column = left if left.kind == "column" else right
            literal = right if column is left else left
            raise self.error(f"{column.value} holds {_describe(kinds[column is right])}, not "
                             f"{_describe(kinds[column is left])}", Token("", "", literal.position))

    def membership(self, item: Operand, container: Operand, at: Token) -> Callable[[Any], bool]:
        iget, cget = item.get, container.get
        if container.kind == "set":
            values = container.value
            if item.kind == "column" and self.kind_of(item) == "list":
                return lambda row: any(v in values for v in (iget(row) or ()))
            return lambda row: iget(row) in values
        if container.kind == "literal":
            if not isinstance(container.value, str):
                raise self.error("'in' needs a list column, a string or a set on its right",
                                 Token("", "", container.position))

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

    def matches(self, subject: Operand, pattern: Operand) -> Callable[[Any], bool]:
        if pattern.kind != "literal" or not isinstance(pattern.value, str):
            raise self.error("'matches' needs a string pattern on its right", Token("", "", pattern.position))
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


def truthy(value: Any) -> bool:
    return value is not None and value is not False and value != 0 and value != "" and value != []

