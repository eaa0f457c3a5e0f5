"""The fast path of ``load_yaml``: line-tracked values built straight from libyaml's events.

PyYAML's loader composes a node tree (two marks per node) and constructs it through Python
constructors: 100,000 inline examples took 10+ s and several hundred MB. A checklist uses a
small part of YAML, so ``build_plain`` makes the same ``LineMap``/``LineList`` values, with
the same lines, in one pass over the parser's event stream and keeps no tree.

Anything outside that part (anchors, aliases, explicit tags, merge keys, a collection as a
key) and anything wrong (a duplicate key, nesting deeper than ``MAX_NESTING``, a syntax
error, several documents) raises ``NotPlain``: the caller then runs the full loader, the one
place that words errors, so every message and line stays the full loader's own.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from pytest_vlcheck.nesting import MAX_NESTING
from pytest_vlcheck.parsing.line_values import LineList, LineMap

_STR = "tag:yaml.org,2002:str"
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "timestamp")
)
"""What a plain scalar may resolve to here; ``merge`` (``<<``) and ``value`` (``=``) keys
need the full loader's mapping flattening."""
_NO_KEY = object()


class NotPlain(Exception):
    """The text needs the full loader (for a feature, or to word an error)."""


def build_plain(text: str, loader: type) -> Any:
    """The document of ``text`` as ``LineMap``/``LineList``/scalars, parsed with ``loader``
    (a PyYAML safe loader class, libyaml's when available); ``NotPlain`` when it cannot."""
    parser = loader(text)
    try:
        return _build(parser)
    except (yaml.YAMLError, RecursionError):
        raise NotPlain from None
    finally:
        parser.dispose()


def _build(parser: Any) -> Any:
    """One document from ``parser``'s events; a frame is [container, pending key, its line]."""
    get = parser.get_event
    first_chars = parser.yaml_implicit_resolvers
    every_char = None in first_chars
    keys: dict[str, str] = {}  # one object per distinct key text: 100,000 'image' keys share one
    stack: list[list[Any]] = []
    get()  # the stream's start
    if type(get()) is not DocumentStartEvent:
        raise NotPlain  # an empty stream
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise NotPlain
            value = event.value
            if event.implicit[0] and (every_char or value[:1] in first_chars):
                value = _resolved(parser, event)
            line = event.start_mark.line + 1
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            stack.append([_start(event, stack), _NO_KEY, 0])
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = stack.pop()[0]
            line = value.line
        elif kind is DocumentEndEvent:
            break
        else:
            raise NotPlain  # an alias
        if not stack:
            root = value
            continue
        frame = stack[-1]
        container = frame[0]
        if type(container) is LineList:
            container.append(value)
            container.item_lines.append(line)
        elif frame[1] is _NO_KEY:
            if value in container:
                raise NotPlain  # a duplicate key
            frame[1] = keys.setdefault(value, value) if type(value) is str else value
            frame[2] = line
        else:
            container[frame[1]] = value
            container.key_lines[frame[1]] = frame[2]
            frame[1] = _NO_KEY
    if type(get()) is not StreamEndEvent:
        raise NotPlain  # a second document
    return root


def _start(event: MappingStartEvent | SequenceStartEvent, stack: list[list[Any]]) -> Any:
    """The empty container a collection's start event opens, its line set."""
    if event.anchor is not None or event.tag is not None or len(stack) >= MAX_NESTING:
        raise NotPlain
    if stack and stack[-1][1] is _NO_KEY and type(stack[-1][0]) is LineMap:
        raise NotPlain  # a collection as a mapping key
    if type(event) is MappingStartEvent:
        container: Any = LineMap()
        container.key_lines = {}
    else:
        container = LineList()
        container.item_lines = []
    if event.start_mark is None:
        raise NotPlain  # no line to give it (a parser's events always carry marks)
    container.line = event.start_mark.line + 1
    return container


def _resolved(parser: Any, event: ScalarEvent) -> Any:
    """A plain scalar that may not be a string (``12``, ``true``, ``~``), as the safe
    constructor makes it."""
    tag = parser.resolve(ScalarNode, event.value, event.implicit)
    if tag == _STR:
        return event.value
    if tag not in _PLAIN_TAGS:
        raise NotPlain
    # libyaml's events carry yaml._yaml.Mark, which the stubs' ScalarNode does not list
    node = ScalarNode(tag, event.value, event.start_mark, event.end_mark)  # type: ignore[arg-type]
    try:
        return parser.yaml_constructors[tag](parser, node)
    except ValueError:  # a date that is no date (2001-13-45): the full loader words it
        raise NotPlain from None
