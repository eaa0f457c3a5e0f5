"""YAML -> typed checklist objects, validating every key with FILE:LINE errors."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist.errors import ChecklistError
from pytest_vlcheck.checklist.example_fields import ParseContext, example_id, parse_tags
from pytest_vlcheck.checklist.fields import Fields, type_name
from pytest_vlcheck.checklist.jsonl import SUFFIX as JSONL_SUFFIX
from pytest_vlcheck.checklist.jsonl import fast_examples, load_jsonl_examples
from pytest_vlcheck.checklist.schema import Checklist, ChecklistTest, MacroSpec
from pytest_vlcheck.checklist.yaml_lines import checklist_header_problem, load_yaml
from pytest_vlcheck.tasks import TASKS, Task, get_task

FORMAT_VERSION = 1
TEST_ID = r"[A-Za-z0-9_.-]+"
CAPABILITY = r"[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*"

_FILE_KEYS = ("vlcheck", "image_root", "description", "tests")
_TEST_KEYS = (
    "id",
    "capability",
    "task",
    "threshold",
    "description",
    "examples",
    "generate",
    "macro",
)
"""Keys every test takes; a task kind adds its own (``Task.setting_keys``)."""
_SETTING_KEYS = {key: task for task in TASKS.values() for key in task.setting_keys}


def is_checklist_file(path: Path) -> bool:
    """A YAML file is a checklist when a top-level ``vlcheck:`` key opens a line early on
    (after a UTF-8 byte-order mark, if any); ``checklist_header_problem`` says why not."""
    return checklist_header_problem(path) is None


def load_checklist(path: Path | str, *, image_root: Path | str | None = None) -> Checklist:
    """Load and validate a checklist file.

    ``image_root`` (the ``--vl-image-root`` option) overrides the file's own ``image_root``.
    Raises ``ChecklistError`` (``FILE:LINE: message``) on the first problem found.
    """
    path = Path(path)
    top = Fields(path, load_yaml(path), "the checklist file", 1)
    top.check_keys(_FILE_KEYS, required=("vlcheck", "tests"))
    version = top.raw("vlcheck")
    if version != FORMAT_VERSION:
        top.fail(
            f"'vlcheck' is {version!r}; this version of pytest-vlcheck reads format "
            f"{FORMAT_VERSION}",
            "vlcheck",
        )
    if image_root is not None:
        image_dir = Path(image_root)
    else:
        image_dir = path.parent / top.text("image_root", ".")
    context = ParseContext(path, image_dir)
    tests_raw = top.items("tests")
    tests: list[ChecklistTest] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(tests_raw):
        test = _parse_test(context, raw, top.item_line("tests", index))
        if test.id in seen:
            raise ChecklistError(
                path,
                test.line,
                f"duplicate test id '{test.id}' (first used "
                f"on line {seen[test.id]}); test ids must be unique in a file",
            )
        seen[test.id] = test.line
        tests.append(test)
    return Checklist(path=path, tests=tuple(tests))


def _parse_test(context: ParseContext, raw: Any, line: int) -> ChecklistTest:
    fields = Fields(context.path, raw, "a test", line)
    if isinstance(fields.data.get("id"), str):
        fields.where = f"test '{fields.data['id']}'"
    fields.check_keys(
        (*_TEST_KEYS, *_SETTING_KEYS), required=("id", "capability", "task", "threshold")
    )
    test_id = fields.text("id", pattern=TEST_ID, expected="letters, digits, '_', '.' or '-'")
    fields.where = f"test '{test_id}'"
    capability = fields.text(
        "capability",
        pattern=CAPABILITY,
        expected="lowercase segments joined by '/', e.g. attribute/color",
    )
    task = get_task(fields.choice("task", TASKS))
    threshold = fields.number("threshold", low=0.0, high=1.0)
    for key, owner in _SETTING_KEYS.items():
        if fields.has(key) and owner is not task:
            fields.fail(f"'{key}' applies to {owner.name} tests only, not '{task.name}'", key)
    settings = task.parse_settings(fields)
    raw_examples, lines, source = _example_sources(fields, task.name)
    source_context = replace(context, path=source)
    examples = fast_examples(source_context, test_id, task, raw_examples, lines) or (
        _parse_examples(source_context, test_id, task, raw_examples, lines)
    )
    return ChecklistTest(
        id=test_id,
        capability=capability,
        task=task.name,
        threshold=threshold,
        examples=examples,
        file=context.path,
        line=fields.line,
        description=fields.text("description", ""),
        settings=settings,
        macro=_parse_macro(context, fields) if fields.has("macro") else None,
        content_hash=_content_hash(raw),
    )


def _content_hash(raw: Any) -> str:
    """A hash of the test as written (a baseline entry warns when its test has changed)."""
    text = json.dumps(raw, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _parse_macro(context: ParseContext, test: Fields) -> MacroSpec:
    """``macro: {tag, min_count, exclude, judge}``: which tag's values are averaged."""
    fields = Fields(context.path, test.raw("macro"), "'macro'", test.line_of("macro"))
    fields.check_keys(("tag", "min_count", "exclude", "judge"), required=("tag",))
    min_count = fields.number("min_count", 1, low=1)
    if min_count != int(min_count):
        fields.fail(f"'min_count' is {min_count:g}; expected a whole number", "min_count")
    exclude = fields.strings("exclude", min_items=0) if fields.has("exclude") else ()
    judge = fields.raw("judge") if fields.has("judge") else False
    if not isinstance(judge, bool):
        fields.fail(f"'judge' must be true or false, got {type_name(judge)}", "judge")
    return MacroSpec(fields.text("tag"), int(min_count), exclude, judge)


def _example_sources(fields: Fields, task: str) -> tuple[list[Any], list[int], Path]:
    """The raw example mappings (written out, in a JSON Lines file, or expanded from
    ``generate``), their lines, and the file those lines are in."""
    if fields.has("examples") == fields.has("generate"):
        fields.fail(f"{fields.where} needs exactly one of 'examples' or 'generate'")
    if fields.has("examples") and isinstance(fields.raw("examples"), str):
        written = fields.text("examples")
        if not written.endswith(JSONL_SUFFIX):
            fields.fail(
                f"'examples' is '{written}'; expected a list of examples or the path of a "
                f"{JSONL_SUFFIX} file",
                "examples",
            )
        source = fields.path.parent / written
        if not source.is_file():
            fields.fail(f"examples file '{written}' not found (looked for {source})", "examples")
        return (*load_jsonl_examples(source), source)
    if fields.has("examples"):
        raw = fields.items("examples")
        return raw, [fields.item_line("examples", i) for i in range(len(raw))], fields.path
    spec = fields.raw("generate")
    if not isinstance(spec, Mapping):
        fields.fail(f"'generate' must be a mapping, got {type_name(spec)}", "generate")
    from pytest_vlcheck.checklist.generators import expand

    try:
        raw = expand(spec, task)
    except ValueError as exc:
        fields.fail(f"generate: {exc}", "generate")
    if not raw:
        fields.fail("'generate' produced no examples; expected at least 1", "generate")
    return raw, [fields.line_of("generate")] * len(raw), fields.path


def _parse_examples(
    context: ParseContext, test_id: str, task: Task, raws: list[Any], lines: list[int]
) -> tuple[Any, ...]:
    examples: list[Any] = []
    ids: dict[str, int] = {}
    keys = (*task.example_keys, *task.optional_example_keys, "id", "tags")
    for index, (raw, line) in enumerate(zip(raws, lines, strict=True)):
        fields = Fields(context.path, raw, f"example {index + 1} of test '{test_id}'", line)
        fields.check_keys(keys, task.example_keys)
        tags = parse_tags(fields)
        example = task.parse_example(context, fields, example_id(fields), tags, fields.line)
        if example.id in ids:
            fields.fail(
                f"duplicate example id '{example.id}' in test '{test_id}' (first on "
                f"line {ids[example.id]}); example ids must be unique in a test",
                "id",
            )
        ids[example.id] = fields.line
        examples.append(example)
    return tuple(examples)
