"""The JSON Schema of checklist files, with its task kinds taken from the task registry.

The shipped ``checklist.schema.json`` describes what every checklist shares (the file, a
test's common keys, images, boxes, perturbations); the task kinds fill in the rest: the
``task`` enum, each kind's example schema (``Task.example_schema``), which examples a test of
each kind holds, and which kinds take each test-level setting (``Task.setting_keys``). Adding
a kind is its module and one registry line (or an installed package's entry point); the
schema follows.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

from pytest_vlcheck.images.scenes import scene_schema
from pytest_vlcheck.registry import PluginError
from pytest_vlcheck.tasks import TASKS, Task

BASE = ("pytest_vlcheck.checklist", "checklist.schema.json")


def schema_kinds() -> tuple[dict[str, Task], list[str]]:
    """Every task kind that imports (the built-in ones, then installed packages'), and one
    line for each installed package's kind that does not (left out of the schema: a broken
    plug-in must not cost every user the schema)."""
    kinds: dict[str, Task] = {}
    broken: list[str] = []
    for name in TASKS:
        try:
            kinds[name] = TASKS[name]
        except PluginError as exc:
            if TASKS.is_builtin(name):
                raise
            broken.append(f"{exc}; the schema leaves '{name}' out")
    return kinds, broken


def checklist_schema(kinds: Mapping[str, Task] | None = None) -> dict[str, Any]:
    """The whole schema (draft 2020-12), as ``vlcheck schema`` prints it, of ``kinds``
    (default: every kind that imports, ``schema_kinds``)."""
    if kinds is None:
        kinds = schema_kinds()[0]
    package, name = BASE
    schema: dict[str, Any] = json.loads(files(package).joinpath(name).read_text(encoding="utf-8"))
    schema["$defs"]["scene"] = scene_schema()
    test = schema["$defs"]["test"]
    test["properties"]["task"]["enum"] = list(kinds)
    rules = []
    for kind, task in kinds.items():
        schema["$defs"][f"{kind}_example"] = copy.deepcopy(dict(task.example_schema))
        examples = {"type": "array", "minItems": 1, "items": {"$ref": f"#/$defs/{kind}_example"}}
        rules.append(
            {
                "if": {"properties": {"task": {"const": kind}}, "required": ["task"]},
                "then": {
                    "properties": {"examples": {"oneOf": [examples, {"$ref": "#/$defs/jsonl"}]}}
                },
            }
        )
    for key, owners in _setting_owners(kinds).items():
        if key not in test["properties"] and all(TASKS.is_builtin(kind) for kind in owners):
            raise ValueError(f"the schema describes no test key {key!r} that a task kind takes")
        test["properties"].setdefault(key, {"description": f"a setting of {', '.join(owners)}"})
        allowed = {"const": owners[0]} if len(owners) == 1 else {"enum": owners}
        rules.append({"if": {"required": [key]}, "then": {"properties": {"task": allowed}}})
    test["allOf"] = rules
    return schema


def _setting_owners(kinds: Mapping[str, Task]) -> dict[str, list[str]]:
    """Each test-level setting key and the kinds that take it, in registry order."""
    owners: dict[str, list[str]] = {}
    for kind, task in kinds.items():
        for key in task.setting_keys:
            owners.setdefault(key, []).append(kind)
    return owners
