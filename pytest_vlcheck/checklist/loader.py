"""YAML -> typed checklist objects, validating every key with FILE:LINE errors."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from pytest_vlcheck.checklist.jsonl import SUFFIX as JSONL_SUFFIX
from pytest_vlcheck.checklist.jsonl import load_jsonl_examples
from pytest_vlcheck.checklist.schema import Checklist, ChecklistTest, MacroSpec
from pytest_vlcheck.parsing.errors import ChecklistError, ErrorCollector
from pytest_vlcheck.parsing.example_fields import ParseContext, example_id, parse_tags
from pytest_vlcheck.parsing.fields import Fields, type_name
from pytest_vlcheck.parsing.gc_pause import gc_paused
from pytest_vlcheck.parsing.yaml_lines import checklist_header_problem, load_yaml
from pytest_vlcheck.registry import PluginError
from pytest_vlcheck.tasks import TASKS, Example, Task, builtin_tasks, get_task

T = TypeVar("T")
FORMAT_VERSION = 1
TEST_ID = r"[A-Za-z0-9_.-]+"
CAPABILITY = r"[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*"

_FILE_KEYS = ("vlcheck", "image_root", "description", "tests")
_TEST_KEYS = (
    "id",
    "capability",
    "task",
    "threshold",
    "hard_threshold",
    "known_failures",
    "description",
    "examples",
    "generate",
    "macro",
    "all_of",
    "cluster",
)
"""Keys every test takes; a task kind adds its own (``Task.setting_keys``)."""


def _setting_keys(named: Task | None) -> dict[str, tuple[Task, ...]]:
    """Each test-level key a task kind takes, and the kinds that take it: the built-in kinds
    and ``named``, the test's own kind (an installed package's kind is imported only when a
    test names it, so a broken one breaks no other checklist)."""
    owners: dict[str, tuple[Task, ...]] = {}
    kinds = builtin_tasks()
    for task in [*kinds, *([named] if named is not None and named not in kinds else [])]:
        for key in task.setting_keys:
            owners[key] = (*owners.get(key, ()), task)
    return owners


def is_checklist_file(path: Path) -> bool:
    """A YAML file is a checklist when a top-level ``vlcheck:`` key opens a line early on
    (after a UTF-8 byte-order mark, if any); ``checklist_header_problem`` says why not."""
    return checklist_header_problem(path) is None


def load_checklist(path: Path | str, *, image_root: Path | str | None = None) -> Checklist:
    """Load and validate a checklist file.

    ``image_root`` (the ``--vl-image-root`` option) overrides the file's own ``image_root``.
    Raises one ``ChecklistError`` carrying every problem found (``FILE:LINE: message`` each):
    a broken test or example does not hide the next one's problems.
    """
    with gc_paused():  # a large file's objects made the collector most of the load's time
        return _load(Path(path), image_root)


def _load(path: Path, image_root: Path | str | None) -> Checklist:
    top = Fields(path, load_yaml(path), "the checklist file", 1)
    errors = ErrorCollector()
    with errors.guard():
        top.check_keys(_FILE_KEYS, required=("vlcheck", "tests"))
    if top.has("vlcheck") and top.raw("vlcheck") != FORMAT_VERSION:
        errors.add(
            ChecklistError(
                path,
                top.line_of("vlcheck"),
                f"'vlcheck' is {top.raw('vlcheck')!r}; this version of pytest-vlcheck reads "
                f"format {FORMAT_VERSION}",
            )
        )
    if image_root is not None:
        image_dir = Path(image_root)
    else:
        image_dir = path.parent / (errors.attempt(top.text, "image_root", ".") or ".")
    context = ParseContext(path, image_dir)
    tests_raw = (errors.attempt(top.items, "tests") if top.has("tests") else None) or []
    tests: list[ChecklistTest] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(tests_raw):
        with errors.guard():
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
    errors.raise_any()
    return Checklist(path=path, tests=tuple(tests))


def _parse_test(context: ParseContext, raw: Any, line: int) -> ChecklistTest:
    """One test; every problem of its keys and examples is reported, not only the first."""
    fields = Fields(context.path, raw, "a test", line)
    if isinstance(fields.data.get("id"), str):
        fields.where = f"test '{fields.data['id']}'"
    errors = ErrorCollector()
    named = errors.attempt(_named_kind, fields)
    with errors.guard():
        fields.check_keys(
            (*_TEST_KEYS, *_setting_keys(named)), required=("id", "capability", "task", "threshold")
        )

    def given(parse: Callable[..., T], key: str, *args: Any, **kwargs: Any) -> T | None:
        """A key's value; a missing key was reported by ``check_keys`` already."""
        return errors.attempt(parse, key, *args, **kwargs) if fields.has(key) else None

    test_id = given(fields.text, "id", pattern=TEST_ID, expected="letters, digits, '_', '.' or '-'")
    if test_id is not None:
        fields.where = f"test '{test_id}'"
    capability = given(
        fields.text,
        "capability",
        pattern=CAPABILITY,
        expected="lowercase segments joined by '/', e.g. attribute/color",
    )
    task_name = given(fields.choice, "task", TASKS)
    threshold = given(fields.number, "threshold", low=0.0, high=1.0)
    hard_threshold = given(fields.number, "hard_threshold", low=0.0, high=1.0)
    description = given(fields.text, "description") or ""
    macro = errors.attempt(_parse_macro, context, fields) if fields.has("macro") else None
    all_of = errors.attempt(_parse_all_of, fields) if fields.has("all_of") else ()
    cluster = given(fields.text, "cluster") or ""
    known = given(_parse_known_failures, "known_failures", context, fields) or {}
    if task_name is None or named is None:
        errors.raise_any()
    assert named is not None  # its absence or mistake (or its kind's import) was recorded
    task = named
    settings = errors.attempt(_parse_settings, fields, task, named)
    name = test_id or str(fields.data.get("id", "?"))
    found = errors.attempt(_examples, context, fields, name, task, settings)
    examples, source = found or ((), None)
    if examples:
        wanted = [("macro", macro.tag)] if macro is not None else []
        wanted += [("all_of", tag) for tag in all_of or ()]
        wanted += [("cluster", cluster)] if cluster else []
        errors.attempt(_tags_on_examples, fields, wanted, examples)
    errors.raise_any()
    # each of these is None only where its absence or mistake was recorded, and raised
    assert test_id is not None and capability is not None and threshold is not None
    assert settings is not None
    return ChecklistTest(
        id=test_id,
        capability=capability,
        task=task.name,
        threshold=threshold,
        hard_threshold=hard_threshold,
        examples=examples,
        file=context.path,
        line=fields.line,
        description=description,
        settings=settings,
        macro=macro,
        all_of=all_of or (),
        cluster=cluster,
        known_failures=known,
        content_hash=_content_hash(raw, source if source != context.path else None),
        examples_file=source if source != context.path else None,
    )


def _tags_on_examples(
    fields: Fields, wanted: list[tuple[str, str]], examples: tuple[Example, ...]
) -> None:
    """A ``macro``, ``all_of`` or ``cluster`` tag no example carries would measure nothing:
    say so at the key, with the tags the examples have."""
    present = {tag for example in examples for tag in example.tags}
    for key, tag in wanted:
        if tag not in present:
            have = ", ".join(sorted(present)) or "none"
            fields.fail(
                f"'{key}' names the tag '{tag}', which no example of the test has; the "
                f"examples' tags: {have}",
                key,
            )


def _positions_need_order(
    source: Path, raws: list[Any], lines: list[int], settings: Mapping[str, Any]
) -> None:
    """An example's ``position`` places its true candidate under ``ties: order`` only: under
    another rule (the test's, or the example's own ``ties``) it would be ignored. Checked on
    the examples as written (in the checklist or a JSON Lines file), at the example's line."""
    test_rule = settings.get("ties", "fail")
    for example, line in zip(raws, lines, strict=True):
        if "position" in example and isinstance(example, Mapping):  # cheapest test first
            rule = example.get("ties", test_rule)
            if rule != "order":
                raise ChecklistError(
                    source,
                    line,
                    f"'position' places the true candidate under 'ties: order' only; this "
                    f"example is judged under 'ties: {rule}'; expected 'ties: order' (on the "
                    "test, or on the example where it takes one) or no 'position'",
                )


def _named_kind(fields: Fields) -> Task | None:
    """The kind the test's ``task:`` names, when it names one; a plug-in kind that cannot be
    imported is one error at the ``task:`` line."""
    name = fields.data.get("task")
    if not isinstance(name, str) or name not in TASKS:
        return None  # reported by the ``task`` key's own check
    try:
        return get_task(name)
    except PluginError as exc:
        fields.fail(str(exc), "task")


def _parse_settings(fields: Fields, task: Task, named: Task | None) -> dict[str, Any]:
    """The test-level keys of ``task``'s kind; another kind's keys are errors."""
    for key, owners in _setting_keys(named).items():
        if fields.has(key) and task not in owners:
            kinds = ", ".join(owner.name for owner in owners)
            fields.fail(f"'{key}' applies to {kinds} tests only, not '{task.name}'", key)
    return task.parse_settings(fields)


def _examples(
    context: ParseContext,
    fields: Fields,
    test_id: str,
    task: Task,
    settings: Mapping[str, Any] | None,
) -> tuple[tuple[Any, ...], Path]:
    """The test's examples, from wherever they are written, and the file they are in."""
    raw_examples, lines, source = _example_sources(fields, task.name)
    source_context = replace(context, path=source)
    plain = task.parse_plain_examples(source_context, test_id, raw_examples, lines)
    parsed = plain or _parse_examples(source_context, test_id, task, raw_examples, lines)
    if settings is not None and "position" in task.optional_example_keys:
        _positions_need_order(source, raw_examples, lines, settings)
    return parsed, source


def _content_hash(raw: Any, examples_file: Path | None = None) -> str:
    """A hash of the test as written, its JSON Lines examples file included (a baseline
    entry warns when its test has changed)."""
    text = json.dumps(raw, sort_keys=True, default=str, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8"))
    if examples_file is not None:
        digest.update(hashlib.sha256(examples_file.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _parse_macro(context: ParseContext, test: Fields) -> MacroSpec:
    """``macro: {tag, min_count, exclude, judge}``: which tag's values are averaged."""
    fields = Fields(context.path, test.raw("macro"), "'macro'", test.line_of("macro"))
    fields.check_keys(("tag", "min_count", "exclude", "judge"), required=("tag",))
    min_count = fields.number("min_count", 1, low=1)
    if min_count != int(min_count):
        fields.fail(f"'min_count' is {min_count:g}; expected a whole number", "min_count")
    exclude = fields.strings("exclude", min_items=0) if fields.has("exclude") else ()
    return MacroSpec(fields.text("tag"), int(min_count), exclude, fields.flag("judge", False))


def _parse_all_of(fields: Fields) -> tuple[str, ...]:
    """``all_of: pair`` or ``all_of: [pair, set]``: the tags whose groups are counted."""
    raw = fields.raw("all_of")
    if not isinstance(raw, (str, list)):
        fields.fail(
            f"'all_of' is {type_name(raw)}; expected a tag name or a list of tag names", "all_of"
        )
    tags = fields.strings("all_of") if isinstance(raw, list) else (fields.text("all_of"),)
    repeated = sorted({tag for tag in tags if tags.count(tag) > 1})
    if repeated:
        fields.fail(f"'all_of' names '{repeated[0]}' twice; expected each tag once", "all_of")
    return tags


def _parse_known_failures(_key: str, context: ParseContext, test: Fields) -> dict[str, str]:
    """``known_failures: {MODEL: reason}``: models the test is expected to fail on."""
    raw = test.raw("known_failures")
    fields = Fields(context.path, raw, "'known_failures'", test.line_of("known_failures"))
    if not fields.data:
        fields.fail("'known_failures' is empty; expected a mapping of model name to reason")
    return {str(model): fields.text(str(model)) for model in fields.data}


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
        return raw, fields.item_lines("examples"), fields.path
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
    """Every example, each one's problems reported (the first problem of each)."""
    examples: list[Any] = []
    ids: dict[str, int] = {}
    keys = (*task.example_keys, *task.optional_example_keys, "id", "tags")
    errors = ErrorCollector()
    for index, (raw, line) in enumerate(zip(raws, lines, strict=True)):
        with errors.guard():
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
    errors.raise_any()
    return tuple(examples)
