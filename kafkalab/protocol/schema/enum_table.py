"""The type every body enum is: a named, read-only table from wire value to upper-case name.

Owns: :class:`EnumTable` and how a wire value finds its name (ints never match bools; string enums the
broker parses without regard to case match whatever the case). The tables themselves are data in
:mod:`.enums`; which message fields carry which table is :mod:`.enum_fields`.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Iterator, Mapping, Union

EnumValue = Union[int, str]


class EnumTable(Mapping[EnumValue, str]):
    """A named, immutable ``value -> NAME`` table.

    It behaves like a read-only dict (``table[2]``, ``2 in table``, ``table.get(9)``, iteration over the
    values in definition order). ``case_insensitive`` tables (string enums the broker parses without
    regard to case, such as group states) also match wire strings whatever their case in :meth:`label`.
    """

    __slots__ = ("name", "about", "case_insensitive", "_values", "_folded")

    def __init__(self, name: str, about: str, values: Mapping[EnumValue, str], *,
                 case_insensitive: bool = False) -> None:
        self.name = name
        self.about = about
        self.case_insensitive = case_insensitive
        self._values: Mapping[EnumValue, str] = MappingProxyType(dict(values))
        self._folded: Mapping[str, str] = MappingProxyType(
            {k.casefold(): v for k, v in values.items() if isinstance(k, str)} if case_insensitive else {}
        )

    def __getitem__(self, value: EnumValue) -> str:
        return self._values[value]

    def __iter__(self) -> Iterator[EnumValue]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"EnumTable({self.name!r}, {len(self)} values)"

    def label(self, value: object) -> str | None:
        """The name for ``value``, or ``None`` when the table does not define it."""
        if isinstance(value, bool):  # bool is an int subclass; True is not the value 1 of an enum
            return None
        if isinstance(value, (int, str)):
            found = self._values.get(value)
            if found is None and self.case_insensitive and isinstance(value, str):
                found = self._folded.get(value.casefold())
            return found
        return None

    @property
    def by_name(self) -> Mapping[str, EnumValue]:
        """The reverse table: ``NAME -> value``."""
        return MappingProxyType({v: k for k, v in self._values.items()})
