"""The fastest path of ``load_yaml``: the block YAML that checklists are written in, read
line by line.

Even libyaml's event stream costs a Python object per event (and two marks): 100,000 inline
examples are over a million events. Checklists (the writer's, the importers' and most
written by hand) use a small, line-shaped part of YAML: block mappings and sequences, one
``key: value`` per line, plain or quoted scalars, and one-line flow lists and mappings.
``build_block`` reads that part straight from the lines, and gives the same
``LineMap``/``LineList``/scalar values, with the same lines, as ``yaml_events.build_plain``.

It is strict: anything outside that part, or anything it is not sure of (a comment after a
value, a scalar that continues on the next line, a tab, a document marker, a duplicate key,
nesting deeper than ``MAX_NESTING``, any syntax error), raises ``NotPlain``, and the caller
reads the text with the event path, then the full loader, which words every error.
Scalars are resolved (``12``, ``true``, ``~``, dates) by PyYAML's own resolver and
constructors, once per distinct text.
"""

from __future__ import annotations

import re
from typing import Any

from yaml.nodes import ScalarNode

from pytest_vlcheck.nesting import MAX_NESTING
from pytest_vlcheck.parsing.line_values import LineList, LineMap
from pytest_vlcheck.parsing.yaml_events import NotPlain

_UNSURE_CHAR = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
"""A character left to the event path: a tab, a carriage return, a control character, a
YAML 1.1 line break (``\x85``, ``\u2028``, ``\u2029``) or a byte-order mark in the text."""
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\n"
_MARKERS = ("---", "...", "%")
"""Lines left to the event path: document markers and directives."""
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
_DOUBLE = re.compile(r'"([^"\\]*)"')
_FLOW_PLAIN = re.compile(r"""[^\s,\[\]{}:#'"!&*|>%@`?-][^,\[\]{}:#'"]*""")
"""A plain scalar inside ``[...]``/``{...}``: no flow indicator, ``:``, ``#`` or quote."""
_NOT_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@`")
"""Characters a plain scalar may not start with (``-`` may, before a non-space: ``-3``)."""
_STR = "tag:yaml.org,2002:str"


def build_block(text: str, loader: type) -> Any:
    """The mapping document of ``text`` as ``LineMap``/``LineList``/scalars, scalars
    resolved with ``loader`` (a PyYAML safe loader class); ``NotPlain`` when unsure."""
    if _unsure(text):
        raise NotPlain
    resolver = loader("")
    try:
        return _Block(text, resolver).document()
    finally:
        resolver.dispose()


class _Block:
    """One text's content lines (indent, text without indent or trailing spaces, line
    number), read from the first on; ``at`` is the next line to read."""

    def __init__(self, text: str, resolver: Any) -> None:
        self.lines = [
            (len(line) - len(body), body.rstrip(" "), number)
            for number, line in enumerate(text.split("\n"), start=1)
            if (body := line.lstrip(" ")) and body[0] != "#"
        ]
        self.at = 0
        self.resolver = resolver
        self.first_chars = resolver.yaml_implicit_resolvers
        self.every_char = None in self.first_chars
        self.resolved: dict[str, Any] = {}
        self.keys: dict[str, Any] = {}

    def document(self) -> LineMap:
        """The root: a block mapping at column 0, and nothing after it."""
        if not self.lines or self.lines[0][0] != 0:
            raise NotPlain
        _, body, number = self.lines[0]
        root = self.mapping(0, body, number, 1)
        if self.at != len(self.lines):
            raise NotPlain
        return root

    def mapping(self, indent: int, body: str, number: int, depth: int) -> LineMap:
        """The block mapping whose first key line is ``body`` (the current line, possibly
        after a sequence item's ``- ``); its keys are all at column ``indent``."""
        if depth > MAX_NESTING:
            raise NotPlain
        result = LineMap()
        result.line = number
        key_lines: dict[Any, int] = {}
        result.key_lines = key_lines
        lines = self.lines
        while True:
            key, rest = self.key(body)
            if key is None or key in result:
                raise NotPlain
            self.at += 1
            result[key] = self.value(rest, number, depth) if rest else self.nested(indent, depth)
            key_lines[key] = number
            if self.at == len(lines):
                return result
            next_indent, body, number = lines[self.at]
            if next_indent < indent:
                return result
            if next_indent > indent:
                raise NotPlain  # a scalar's continuation, or a misplaced line
            if body[:1] == "-" and (len(body) == 1 or body[1] == " "):
                raise NotPlain  # a sequence item among keys

    def key(self, body: str) -> tuple[Any, str]:
        """(key, the value's text) of a ``key: value`` line; (None, "") for another line."""
        written, colon, rest = body.partition(":")
        if not colon or (rest and rest[0] != " "):
            return None, ""
        key = self.keys.get(written)
        if key is None:
            if not _KEY.fullmatch(written):
                return None, ""
            key = self.keys[written] = self.plain(written)
        return key, rest.lstrip(" ")

    def nested(self, indent: int, depth: int) -> Any:
        """The value of ``key:`` with nothing after it: the block collection on the lines
        below (a sequence may stand at the key's own column), else null."""
        if self.at == len(self.lines):
            return None
        next_indent, body, number = self.lines[self.at]
        item = body[:1] == "-" and (len(body) == 1 or body[1] == " ")
        if item and next_indent >= indent:
            return self.sequence(next_indent, depth + 1)
        if next_indent > indent:
            return self.mapping(next_indent, body, number, depth + 1)
        return None

    def sequence(self, indent: int, depth: int) -> LineList:
        """The block sequence whose ``- `` items are at column ``indent``."""
        if depth > MAX_NESTING:
            raise NotPlain
        result = LineList()
        item_lines: list[int] = []
        result.item_lines = item_lines
        lines = self.lines
        result.line = lines[self.at][2]
        while self.at < len(lines):
            next_indent, body, number = lines[self.at]
            if next_indent > indent:
                raise NotPlain  # a scalar item's continuation, or a misplaced line
            if next_indent < indent or body[:1] != "-":
                break  # the end (a key at the sequence's column is its parent's next key)
            if body[:2] != "- ":
                raise NotPlain  # ``-`` alone (the item on the lines below), or ``-x: y``
            rest = body[2:]
            if rest[:1] in (" ", "-"):
                raise NotPlain  # an item indented further, or a sequence in an item
            if self.key(rest)[0] is not None:
                item: Any = self.mapping(indent + 2, rest, number, depth + 1)
                line = item.line
            else:
                self.at += 1
                item = self.value(rest, number, depth)
                line = number
            result.append(item)
            item_lines.append(line)
        return result

    def value(self, text: str, number: int, depth: int) -> Any:
        """The value written on a line after ``key: `` or ``- ``."""
        first = text[0]
        if first == "[" or first == "{":
            value, end = self.flow(text, 0, number, depth + 1)
            if end != len(text):
                raise NotPlain
            return value
        if first == "'":
            return self.single(text)
        if first == '"':
            return self.double(text)
        if (
            (first in _NOT_FIRST and (first != "-" or text[1:2] in ("", " ")))
            or ": " in text
            or " #" in text
            or text[-1] == ":"
        ):
            raise NotPlain
        return self.plain(text)

    def plain(self, text: str) -> Any:
        """A plain scalar's value, as the safe constructor makes it."""
        if not (self.every_char or text[0] in self.first_chars):
            return text
        if text in self.resolved:
            return self.resolved[text]
        tag = self.resolver.resolve(ScalarNode, text, (True, False))
        if tag == _STR:
            value: Any = text
        elif tag in _PLAIN_TAGS:
            try:
                value = self.resolver.yaml_constructors[tag](self.resolver, ScalarNode(tag, text))
            except ValueError:  # a date that is no date: the full loader's error
                raise NotPlain from None
        else:
            raise NotPlain  # ``<<`` or ``=``: the full loader's mapping rules
        self.resolved[text] = value
        return value

    @staticmethod
    def single(text: str) -> str:
        """A whole ``'single-quoted'`` scalar (``''`` is a quote)."""
        match = _SINGLE.fullmatch(text)
        if match is None:
            raise NotPlain
        return match.group(1).replace("''", "'")

    @staticmethod
    def double(text: str) -> str:
        """A whole ``"double-quoted"`` scalar without escapes."""
        match = _DOUBLE.fullmatch(text)
        if match is None:
            raise NotPlain
        return match.group(1)

    def flow(self, text: str, at: int, number: int, depth: int) -> tuple[Any, int]:
        """The flow value starting at ``text[at]`` (after any spaces) and where it ends."""
        at = _skip(text, at)
        first = text[at : at + 1]
        if first == "[" or first == "{":
            if depth > MAX_NESTING:
                raise NotPlain
            return self.flow_collection(text, at, number, depth)
        for pattern, build in ((_SINGLE, self.single), (_DOUBLE, self.double)):
            match = pattern.match(text, at)
            if match is not None:
                return build(match.group()), match.end()
        match = _FLOW_PLAIN.match(text, at)
        if match is None:
            raise NotPlain
        return self.plain(match.group().rstrip(" ")), match.end()

    def flow_collection(self, text: str, at: int, number: int, depth: int) -> tuple[Any, int]:
        """``[a, b]`` or ``{k: v, j: w}`` on one line, starting at ``text[at]``."""
        is_map = text[at] == "{"
        close = "}" if is_map else "]"
        result: Any = LineMap() if is_map else LineList()
        result.line = number
        at = _skip(text, at + 1)
        while text[at : at + 1] != close:
            if is_map:
                key, at = self.flow(text, at, number, depth)
                if (
                    isinstance(key, (LineMap, LineList))
                    or key in result
                    or text[at : at + 2] != ": "
                ):
                    raise NotPlain
                result[key], at = self.flow(text, at + 2, number, depth + 1)
            else:
                value, at = self.flow(text, at, number, depth + 1)
                result.append(value)
            at = _skip(text, at)
            if text[at : at + 1] == ",":
                at = _skip(text, at + 1)
                if text[at : at + 1] in (close, ",", ""):
                    raise NotPlain  # an empty entry
            elif text[at : at + 1] != close:
                raise NotPlain
        if is_map:
            result.key_lines = dict.fromkeys(result, number)
        else:
            result.item_lines = [number] * len(result)
        return result, at + 1


def _unsure(text: str) -> bool:
    """Whether ``text`` has a character or a line ``build_block`` leaves to the event path
    (an ASCII text, most checklists, is checked at C speed)."""
    if text.isascii():
        if text.encode("ascii").translate(None, _PRINTABLE_ASCII):
            return True
    elif _UNSURE_CHAR.search(text):
        return True
    return text.startswith(_MARKERS) or any(f"\n{marker}" in text for marker in _MARKERS)


def _skip(text: str, at: int) -> int:
    """The first index from ``at`` on that is not a space."""
    while text[at : at + 1] == " ":
        at += 1
    return at


_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null", "timestamp")
)
