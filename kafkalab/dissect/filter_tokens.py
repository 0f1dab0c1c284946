"""Reading a display filter into tokens: strings with their escapes, numbers, operators, words.

Owns: the lexical layer of the ``-Y`` language (see :mod:`.filter` for the grammar) and :class:`FilterError`,
the one error every layer raises, so a caller catches one type that points at the offending character.
Kept apart from the grammar so the parser reads tokens and never characters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

KEYWORDS = {"and", "or", "not", "in", "contains", "matches", "true", "false", "null", "none"}
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
class Token:
    kind: str            # string, number, op, word, end
    text: str
    position: int
    value: Any = None


def tokens(text: str) -> list[Token]:
    out: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            quote = text[pos] in "\"'"
            raise FilterError("unterminated string" if quote else f"unexpected character {text[pos]!r}", text, pos)
        kind = match.lastgroup
        token_text = match.group()
        if kind == "string":
            out.append(Token("string", token_text, pos, unquote(token_text, text, pos)))
        elif kind == "number":
            value = float(token_text) if any(c in token_text for c in ".eE") else int(token_text)
            out.append(Token("number", token_text, pos, value))
        elif kind in ("op", "word"):
            out.append(Token(kind, token_text, pos))
        pos = match.end()
    out.append(Token("end", "", len(text)))
    return out


def unquote(token: str, text: str, pos: int) -> str:
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

