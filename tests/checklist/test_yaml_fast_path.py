"""The event-built YAML fast path gives what the full loader gives: values, every line, errors.

``yaml_events.build_plain`` makes plain checklists; the full loader (``yaml_lines``) handles
every other YAML feature and words every error. Each test here loads the same text both
ways, the fast path switched off through ``force_full_loader``, and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.nesting import MAX_NESTING, TOO_DEEP
from pytest_vlcheck.parsing import yaml_lines
from pytest_vlcheck.parsing.line_values import LineList, LineMap
from pytest_vlcheck.parsing.yaml_events import NotPlain, build_plain

HEAD = "vlcheck: 1\ntests:\n"


def force_full_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``load_yaml`` from now on goes through the full loader (neither the block
    reader nor the event path)."""

    def refuse(text: str, loader: type) -> Any:
        raise NotPlain

    monkeypatch.setattr(yaml_lines, "build_block", refuse)
    monkeypatch.setattr(yaml_lines, "build_plain", refuse)


def full_load(path: Path) -> Any:
    return yaml_lines._load_full(path, yaml_lines.read_text_utf8(path))


def shape(value: Any) -> Any:
    """``value`` with its type and every line it carries, comparable with ``==``."""
    if isinstance(value, LineMap):
        items = [(shape(k), value.key_lines[k], shape(v)) for k, v in value.items()]
        return ("map", value.line, items)
    if isinstance(value, LineList):
        return ("list", value.line, value.item_lines, [shape(v) for v in value])
    return (type(value).__name__, value)


def examples_yaml(count: int, broken: dict[int, str] | None = None) -> str:
    """A caption test of ``count`` examples, each four lines (example i on line 8 + 4 i);
    ``broken`` replaces example i's caption line."""
    lines = [HEAD, "- id: big\n  capability: a/b\n  task: caption\n  threshold: 0.5\n"]
    lines.append("  examples:\n")
    for i in range(count):
        caption = (broken or {}).get(i, f"a photo number {i}")
        lines.append(
            f"  - id: e{i}\n    image: img/{i % 50}.jpg\n    caption: {caption}\n"
            f"    negatives: [a drawing number {i}]\n"
        )
    return "".join(lines)


PLAIN_TEXTS = [
    examples_yaml(3),
    HEAD + "- {id: a, capability: a/b, task: caption, threshold: .5, examples: []}\n",
    "a: 1\nb: [1, 2.5, -3, 0x1f, .inf, .nan, true, False, ~, null, '', 2001-12-14]\n",
    "x:\n  - - deep\n    - er\n  -\n    k: |\n      block\n      text\n    j: >-\n      folded\n"
    "      line\n",
    "q: 'single'\nd: \"double\"\nn: '12'\n12: twelve\ntrue: yes\n? plain key\n: value\n",
    "- just\n- a list\n- {of: [mixed, {things: here}]}\n",
    "only a scalar\n",
    "--- \nkey: value\n...\n",
    "# a comment\nkey: value # another\nempty:\nalso_empty: []\nmap: {}\n",
    "multi:\n  line plain\n  scalar\nunicode: caf\u00e9 \u2713\n",
]


@pytest.mark.parametrize("loader", [yaml_lines._BASE, yaml.SafeLoader], ids=["base", "python"])
@pytest.mark.parametrize("text", PLAIN_TEXTS)
def test_plain_text_is_built_fast_with_the_full_loaders_values_and_lines(
    tmp_path: Path, text: str, loader: type
) -> None:
    """With libyaml's parser or PyYAML's own (an install without libyaml)."""
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    fast = build_plain(yaml_lines.read_text_utf8(path), loader)
    assert shape(fast) == shape(full_load(path))


NOT_PLAIN = [
    "a: &x [1, 2]\nb: *x\n",  # anchors and aliases
    "base: &b {k: 1}\nm:\n  <<: *b\n  j: 2\n",  # merge keys
    "m:\n  <<: {k: 1}\n  j: 2\n",
    "a: !!str 12\n",  # explicit tags
    "a: !!set {x, y}\n",
    "? [a, b]\n: complex key\n",
    "a: 1\nb: 2\na: 3\n",  # a duplicate key
    "1: x\ntrue: y\n",  # the same key as YAML values (1 == True)
    "a: [1, 2\nb: 3\n",  # a syntax error
    "a: 1\n---\nb: 2\n",  # two documents
    "",  # no document
    "a: " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "\n",
    "=: value key\n",
]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_other_yaml_goes_through_the_full_loader_unchanged(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NotPlain):
        build_plain(text, yaml_lines._BASE)
    try:
        expected: Any = shape(full_load(path))
    except ChecklistError as exc:
        expected = str(exc)
    try:
        got: Any = shape(yaml_lines.load_yaml(path))
    except ChecklistError as exc:
        got = str(exc)
    assert got == expected


def load_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """``load_checklist(path)`` (or its error text) on the fast path, then on the full one."""
    results = []
    for _ in range(2):
        try:
            checklist = load_checklist(path)
            results.append([(t.id, t.line, t.content_hash, t.examples) for t in checklist.tests])
        except ChecklistError as exc:
            results.append(str(exc))
        force_full_loader(monkeypatch)
    return results[0], results[1]


def test_a_large_file_loads_the_same_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(examples_yaml(2000), encoding="utf-8")
    fast, full = load_both(path, monkeypatch)
    assert fast == full
    (test,) = fast
    assert test[1] == 3 and [e.line for e in test[3][:3]] == [8, 12, 16]
    assert test[3][-1].line == 8 + 4 * 1999


def test_errors_in_a_large_file_are_at_the_same_lines_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.yaml"
    text = examples_yaml(2000, broken={700: "''", 1500: "[not, text]"})
    path.write_text(text.replace("  - id: e1999\n", "  - id: e0\n"), encoding="utf-8")
    fast, full = load_both(path, monkeypatch)
    assert fast == full
    assert fast == (
        f"{path}:{8 + 4 * 700 + 2}: 'caption' must be a non-empty string, got a blank string\n"
        f"{path}:{8 + 4 * 1500 + 2}: 'caption' must be a non-empty string, got a list\n"
        f"{path}:{8 + 4 * 1999}: duplicate example id 'e0' in test 'big' (first on line 8); "
        "example ids must be unique in a test"
    )


def test_a_duplicate_key_deep_in_a_large_file_is_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    text = examples_yaml(2000, broken={1234: "one\n    caption: two"})
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert str(info.value) == f"{path}:{8 + 4 * 1234 + 3}: duplicate key 'caption'"


@pytest.mark.parametrize(
    ("caption", "value"), [("2001-13-45", "2001-13-45"), ("[2001-02-30]", "2001-02-30")]
)
def test_a_date_that_is_no_date_is_one_error_at_its_line(
    tmp_path: Path, caption: str, value: str
) -> None:
    """``2001-13-45`` resolves to a timestamp and PyYAML's constructor raises ValueError: the
    fast paths step aside and the full loader gives one line at the value, no traceback."""
    path = tmp_path / "dated.yaml"
    path.write_text(examples_yaml(3, broken={1: caption}), encoding="utf-8")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{8 + 4 * 1 + 2}: '{value}' is not a date (")
    assert message.endswith("); quote it to keep it as text")


def test_nesting_too_deep_in_a_large_file_is_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    deep = "[" * MAX_NESTING + "]" * MAX_NESTING
    path.write_text(examples_yaml(2000, broken={1999: deep}), encoding="utf-8")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert str(info.value) == f"{path}:{8 + 4 * 1999 + 2}: {TOO_DEEP}"


MATRIX_CHECKLIST = """\
vlcheck: 1
image_root: images
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {id: r, image: red.png, caption: a red square, negatives: [a green square]}

      - id: b
        image: blue.png
        caption: a blue square
        negatives: [a red square]


  - {id: pick, capability: attribute/color, task: image, threshold: 0.5,
     examples: [{text: red, image: red.png, distractors: [green.png]}]}
"""


def test_matrix_json_lines_are_the_same_both_ways(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.colour_project import colour_project

    project = colour_project(pytester, MATRIX_CHECKLIST)
    lines = []
    for report in ("fast", "full"):
        project.runpytest("--vl-model=py:colour_model:make", f"--vl-report={report}")
        doc = json.loads((project.path / report / "matrix.json").read_text())
        lines.append([(r["test"], r["line"]) for r in doc["results"]])
        force_full_loader(monkeypatch)
    assert lines[0] == lines[1] == [("color", 4), ("pick", 17)]
