"""YAML -> typed checklist objects, validating every key with FILE:LINE errors."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist.errors import ChecklistError
from pytest_vlcheck.checklist.fields import Fields, type_name
from pytest_vlcheck.checklist.jsonl import SUFFIX as JSONL_SUFFIX
from pytest_vlcheck.checklist.jsonl import load_jsonl_examples
from pytest_vlcheck.checklist.schema import (
    GROUP_CRITERIA,
    TASKS,
    CaptionExample,
    Checklist,
    ChecklistTest,
    Example,
    GroupExample,
    ImageExample,
    MatchExample,
)
from pytest_vlcheck.checklist.yaml_lines import load_yaml
from pytest_vlcheck.images.refs import ImageRef, canonical_scene

FORMAT_VERSION = 1
TEST_ID = r"[A-Za-z0-9_.-]+"
CAPABILITY = r"[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*"
_HEADER = re.compile(rb"^vlcheck\s*:", re.MULTILINE)

_FILE_KEYS = ("vlcheck", "image_root", "description", "tests")
_TEST_KEYS = (
    "id",
    "capability",
    "task",
    "threshold",
    "description",
    "examples",
    "generate",
    "criterion",
    "cutoff",
)
_EXAMPLE_KEYS = {
    "caption": ("image", "caption", "negatives"),
    "image": ("text", "image", "distractors"),
    "group": ("images", "captions"),
    "match": ("image", "caption", "label"),
}
_OPTIONAL_EXAMPLE_KEYS = {"match": ("neg_type",)}
_IMAGE_KEYS = ("path", "url", "scene", "crop", "crop_relative", "sha256")
_LABELS = {"match": True, "no_match": False, True: True, False: False}


def is_checklist_file(path: Path) -> bool:
    """A YAML file is a checklist when a top-level ``vlcheck:`` key opens a line early on."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        with path.open("rb") as handle:
            return bool(_HEADER.search(handle.read(4096)))
    except OSError:
        return False


@dataclass(frozen=True)
class _Context:
    """Where relative image paths of one checklist resolve."""

    path: Path
    image_dir: Path


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
    context = _Context(path, image_dir)
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


def _parse_test(context: _Context, raw: Any, line: int) -> ChecklistTest:
    fields = Fields(context.path, raw, "a test", line)
    if isinstance(fields.data.get("id"), str):
        fields.where = f"test '{fields.data['id']}'"
    fields.check_keys(_TEST_KEYS, required=("id", "capability", "task", "threshold"))
    test_id = fields.text("id", pattern=TEST_ID, expected="letters, digits, '_', '.' or '-'")
    fields.where = f"test '{test_id}'"
    capability = fields.text(
        "capability",
        pattern=CAPABILITY,
        expected="lowercase segments joined by '/', e.g. attribute/color",
    )
    task = fields.choice("task", TASKS)
    threshold = fields.number("threshold", low=0.0, high=1.0)
    criterion = "group"
    if fields.has("criterion"):
        if task != "group":
            fields.fail(f"'criterion' applies to group tests only, not '{task}'", "criterion")
        criterion = fields.choice("criterion", GROUP_CRITERIA)
    cutoff = 0.5
    if fields.has("cutoff"):
        if task != "match":
            fields.fail(f"'cutoff' applies to match tests only, not '{task}'", "cutoff")
        cutoff = fields.number("cutoff")
    raw_examples, lines, source = _example_sources(fields, task)
    examples = _parse_examples(replace(context, path=source), test_id, task, raw_examples, lines)
    return ChecklistTest(
        id=test_id,
        capability=capability,
        task=task,  # type: ignore[arg-type]
        threshold=threshold,
        examples=examples,
        file=context.path,
        line=fields.line,
        description=fields.text("description", ""),
        criterion=criterion,
        cutoff=cutoff,
    )  # type: ignore[arg-type]


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
    context: _Context, test_id: str, task: str, raws: list[Any], lines: list[int]
) -> tuple[Example, ...]:
    examples: list[Example] = []
    ids: dict[str, int] = {}
    for index, (raw, line) in enumerate(zip(raws, lines, strict=True)):
        fields = Fields(context.path, raw, f"example {index + 1} of test '{test_id}'", line)
        example = _parse_example(context, task, fields)
        if example.id in ids:
            fields.fail(
                f"duplicate example id '{example.id}' in test '{test_id}' (first on "
                f"line {ids[example.id]}); example ids must be unique in a test",
                "id",
            )
        ids[example.id] = fields.line
        examples.append(example)
    return tuple(examples)


def _parse_example(context: _Context, task: str, fields: Fields) -> Example:
    required = _EXAMPLE_KEYS[task]
    fields.check_keys((*required, *_OPTIONAL_EXAMPLE_KEYS.get(task, ()), "id", "tags"), required)
    tags = _parse_tags(fields)
    line = fields.line
    example_id = _example_id(fields)
    if task == "caption":
        return CaptionExample(
            example_id,
            _image(context, fields, "image"),
            fields.text("caption"),
            fields.strings("negatives"),
            tags,
            line,
        )
    if task == "image":
        texts = (
            fields.strings("text")
            if isinstance(fields.raw("text"), list)
            else (fields.text("text"),)
        )
        distractors = tuple(
            _image_item(context, fields, "distractors", i, raw)
            for i, raw in enumerate(fields.items("distractors"))
        )
        return ImageExample(
            example_id, texts, _image(context, fields, "image"), distractors, tags, line
        )
    if task == "group":
        images = fields.items("images", exact=2)
        pair = tuple(_image_item(context, fields, "images", i, raw) for i, raw in enumerate(images))
        return GroupExample(
            example_id,
            pair,
            fields.strings("captions", exact=2),  # type: ignore[arg-type]
            tags,
            line,
        )
    label = fields.raw("label")
    if not isinstance(label, (str, bool)) or label not in _LABELS:
        fields.fail(f"'label' is {label!r}; expected match or no_match", "label")
    neg_type = fields.text("neg_type") if fields.has("neg_type") else None
    return MatchExample(
        example_id,
        _image(context, fields, "image"),
        fields.text("caption"),
        _LABELS[label],
        neg_type,
        tags,
        line,
    )


def _parse_tags(fields: Fields) -> dict[str, str]:
    if not fields.has("tags"):
        return {}
    raw = fields.raw("tags")
    if not isinstance(raw, Mapping):
        fields.fail(f"'tags' must be a mapping of names to values, got {type_name(raw)}", "tags")
    tags = {}
    for key, value in raw.items():
        if isinstance(value, (list, Mapping)) or value is None:
            fields.fail(
                f"tag '{key}' must be a single value (text or number), got {type_name(value)}",
                "tags",
            )
        tags[str(key)] = _tag_text(value)
    return tags


def _tag_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _example_id(fields: Fields) -> str:
    """The example's own id, or one derived from its content (stable under reordering)."""
    if fields.has("id"):
        raw = fields.raw("id")
        if isinstance(raw, bool) or not isinstance(raw, (str, int)) or str(raw) == "":
            fields.fail(f"'id' must be a string or an integer, got {type_name(raw)}", "id")
        return str(raw)
    content = json.dumps(fields.data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(content.encode("utf-8")).hexdigest()[:12]


def _image(context: _Context, fields: Fields, key: str) -> ImageRef:
    if not fields.has(key):
        fields.fail(f"{fields.where} is missing the required key '{key}'")
    return parse_image(context, fields.raw(key), fields.line_of(key), f"'{key}'")


def _image_item(context: _Context, fields: Fields, key: str, index: int, raw: Any) -> ImageRef:
    return parse_image(context, raw, fields.item_line(key, index), f"'{key}' item {index + 1}")


def parse_image(context: _Context, raw: Any, line: int, what: str) -> ImageRef:
    """An image reference: a path, or a mapping with exactly one of path / url / scene."""
    if isinstance(raw, str):
        return _file_ref(context, raw, line, what, None, False)
    fields = Fields(context.path, raw, f"image {what}", line)
    fields.check_keys(_IMAGE_KEYS)
    sources = [key for key in ("path", "url", "scene") if fields.has(key)]
    if len(sources) != 1:
        fields.fail(f"image {what} needs exactly one of 'path', 'url' or 'scene'")
    crop, relative = _crop(fields)
    if sources == ["path"]:
        return _file_ref(context, fields.text("path"), fields.line_of("path"), what, crop, relative)
    if sources == ["url"]:
        url = fields.text("url", pattern=r"https?://\S+", expected="an http(s) URL")
        sha = fields.text("sha256", "") or None
        if sha is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha):
            fields.fail("'sha256' must be 64 hexadecimal digits", "sha256")
        return ImageRef("url", url, url, crop, relative, sha.lower() if sha else None)
    scene = fields.raw("scene")
    from pytest_vlcheck.images.scenes import validate_scene

    try:
        validate_scene(scene)
    except ValueError as exc:
        fields.fail(f"scene: {exc}", "scene")
    text = canonical_scene(scene)
    return ImageRef("scene", text, text, crop, relative)


def _file_ref(
    context: _Context,
    written: str,
    line: int,
    what: str,
    crop: tuple[float, float, float, float] | None,
    relative: bool,
) -> ImageRef:
    if not written.strip():
        raise ChecklistError(context.path, line, f"image {what} is an empty path")
    location = (context.image_dir / written).resolve()
    return ImageRef("file", written, str(location), crop, relative)


def _crop(fields: Fields) -> tuple[tuple[float, float, float, float] | None, bool]:
    if fields.has("crop") and fields.has("crop_relative"):
        fields.fail("give 'crop' (pixels) or 'crop_relative' (fractions), not both")
    key = "crop" if fields.has("crop") else "crop_relative" if fields.has("crop_relative") else ""
    if not key:
        return None, False
    values = fields.raw(key)
    if (
        not isinstance(values, list)
        or len(values) != 4
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)
    ):
        fields.fail(f"'{key}' must be four numbers [x, y, width, height]", key)
    x, y, w, h = (float(v) for v in values)
    if x < 0 or y < 0 or w <= 0 or h <= 0:
        fields.fail(f"'{key}' is {list(values)}; expected x, y >= 0 and width, height > 0", key)
    relative = key == "crop_relative"
    if relative and (x + w > 1 + 1e-6 or y + h > 1 + 1e-6):
        fields.fail(f"'crop_relative' is {list(values)}; the box must lie within [0, 1]", key)
    return (x, y, w, h), relative
