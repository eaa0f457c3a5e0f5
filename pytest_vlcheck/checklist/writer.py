"""Checklist documents -> YAML text that reads well, diffs well and loads back unchanged.

Files, tests and examples are block mappings (one key per line); the small things inside
an example (image references, crops, negatives, tags) are written inline when short, so
an example stays a few lines long even in files with tens of thousands of them. Repeated
objects are written out each time (no YAML anchors), keys keep the document's order, and
lines are never folded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

# libyaml's emitter when present: the representers below are the same, the output is the
# same, and big imports (tens of thousands of examples) are written several times faster.
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_INLINE_WIDTH = 120
_SCALARS = (str, int, float, bool, type(None))


class _Inline(list[Any]):
    """A list to be written in flow style: ``[a, b]``."""


class _InlineMap(dict[str, Any]):
    """A mapping to be written in flow style: ``{path: x.jpg, crop: [1, 2, 3, 4]}``."""


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """SafeDumper without aliases, with flow style for the marked containers."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_inline(dumper: yaml.SafeDumper, data: _Inline) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


def _represent_inline_map(dumper: yaml.SafeDumper, data: _InlineMap) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True)


def _represent_dict(dumper: yaml.SafeDumper, data: dict[Any, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


_Dumper.add_representer(_Inline, _represent_inline)
_Dumper.add_representer(_InlineMap, _represent_inline_map)
_Dumper.add_representer(dict, _represent_dict)


def dump_checklist(doc: Mapping[str, Any]) -> str:
    """The YAML text of a checklist document (``{"vlcheck": 1, ..., "tests": [...]}``).

    ``yaml.safe_load(dump_checklist(doc)) == doc`` for any document of plain dicts, lists,
    strings, numbers, booleans and None.
    """
    prepared = dict(doc)
    if isinstance(doc.get("tests"), list):
        prepared["tests"] = [_prepare_test(t) for t in doc["tests"]]
    return yaml.dump(
        prepared,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1 << 16,
        default_flow_style=False,
    )


def _prepare_test(test: Any) -> Any:
    if not isinstance(test, Mapping):
        return test
    out = dict(test)
    if isinstance(test.get("examples"), list):
        out["examples"] = [_prepare_example(e) for e in test["examples"]]
    return out


def _prepare_example(example: Any) -> Any:
    if not isinstance(example, Mapping):
        return example
    return {key: _inline(value) for key, value in example.items()}


def _inline(value: Any) -> Any:
    """Mark a value of an example for flow style when it is small and flat enough."""
    if isinstance(value, Mapping):
        items = {k: _inline(v) for k, v in value.items()}
        if all(_is_flat(v) for v in items.values()) and _short(items):
            return _InlineMap(items)
        return dict(items)
    if isinstance(value, list):
        elements = [_inline(v) for v in value]
        if all(_is_flat(v) for v in elements) and _short(elements):
            return _Inline(elements)
        return elements
    return value


def _is_flat(value: Any) -> bool:
    return isinstance(value, (*_SCALARS, _Inline, _InlineMap))


def _short(value: Any) -> bool:
    """Whether the flow form fits the inline width (JSON length is a close estimate)."""
    return len(json.dumps(value, ensure_ascii=False, default=str)) <= _INLINE_WIDTH
