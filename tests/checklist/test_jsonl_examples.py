"""``examples: FILE.jsonl``: examples kept one per line, with errors at ``FILE.jsonl:LINE``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.parsing.errors import ChecklistError
from pytest_vlcheck.tasks.caption.example import CaptionExample
from pytest_vlcheck.tasks.group import GroupExample

HEADER = """\
vlcheck: 1
image_root: images
tests:
  - id: color
    capability: attribute/color
    task: {task}
    threshold: 0.5
    examples: {examples}
"""

GOOD = [
    {"id": "r", "image": "red.png", "caption": "a red square", "negatives": ["a blue square"]},
    {"image": {"path": "blue.png", "crop": [0, 0, 8, 8]}, "caption": "blue", "negatives": ["red"]},
]


def _write(folder: Path, lines: list[str], *, task: str = "caption", name: str = "ex") -> Path:
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = folder / "checks.yaml"
    path.write_text(HEADER.format(task=task, examples=f"data/{name}.jsonl"), encoding="utf-8")
    return path


def _error(path: Path) -> ChecklistError:
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    return info.value


def test_examples_load_from_jsonl_like_inline_ones(tmp_path: Path) -> None:
    lines = [json.dumps(GOOD[0]), "", "   ", json.dumps(GOOD[1])]
    test = load_checklist(_write(tmp_path, lines)).tests[0]
    first, second = test.examples
    assert isinstance(first, CaptionExample)
    assert (first.id, first.captions, first.negatives, first.line) == (
        "r",
        ("a red square",),
        ("a blue square",),
        1,
    )
    assert first.image.location == str((tmp_path / "images" / "red.png").resolve())
    assert second.line == 4
    assert second.image.crop == (0.0, 0.0, 8.0, 8.0)
    assert test.file == tmp_path / "checks.yaml"


def test_jsonl_and_inline_examples_are_equal(tmp_path: Path) -> None:
    from_jsonl = load_checklist(_write(tmp_path, [json.dumps(e) for e in GOOD])).tests[0]
    inline = tmp_path / "inline.yaml"
    inline.write_text(HEADER.format(task="caption", examples=json.dumps(GOOD)), encoding="utf-8")
    from_yaml = load_checklist(inline).tests[0]
    strip = [(e.id, e.image, e.captions, e.negatives, e.tags) for e in from_jsonl.examples]
    assert strip == [(e.id, e.image, e.captions, e.negatives, e.tags) for e in from_yaml.examples]


def test_the_content_hash_follows_the_jsonl_file(tmp_path: Path) -> None:
    """A baseline warns when a test changed: editing its examples file is such a change."""
    lines = [json.dumps(e) for e in GOOD]
    first = load_checklist(_write(tmp_path, lines)).tests[0].content_hash
    assert load_checklist(_write(tmp_path, lines)).tests[0].content_hash == first
    edited = [lines[0].replace("a blue square", "a green square"), lines[1]]
    assert load_checklist(_write(tmp_path, edited)).tests[0].content_hash != first


def test_group_examples_from_jsonl(tmp_path: Path) -> None:
    line = json.dumps({"images": ["a.png", "b.png"], "captions": ["a", "b"]})
    (example,) = load_checklist(_write(tmp_path, [line], task="group")).tests[0].examples
    assert isinstance(example, GroupExample)
    assert [ref.written for ref in example.images] == ["a.png", "b.png"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"image": "x.png", "caption": "a", ', "invalid JSON at column"),
        ('["a", "b"]', "each line must be one example (a JSON object), got a list"),
        (
            '{"image": "x.png", "caption": "a", "caption": "b", "negatives": ["c"]}',
            "duplicate key 'caption'",
        ),
        ('{"image": "x.png", "caption": "a", "negative": ["b"]}', "unknown key 'negative'"),
        ('{"image": "x.png", "caption": "a", "negatives": []}', "'negatives'"),
        (
            '{"image": {"path": "x.png", "crop": [0, 0, -1, 2]}, "caption": "a", "negatives": ["b"]}',
            "'crop' is",
        ),
        (
            '{"image": "x.png", "caption": 3, "negatives": ["b"]}',
            "'caption' must be a non-empty string",
        ),
        (
            '{"id": "r", "image": "x.png", "caption": "a", "negatives": ["b"]}',
            "duplicate example id 'r'",
        ),
    ],
)
def test_errors_name_the_jsonl_line(tmp_path: Path, bad: str, message: str) -> None:
    path = _write(tmp_path, [json.dumps(GOOD[0]), "", bad])
    error = _error(path)
    assert error.path == tmp_path / "data" / "ex.jsonl"
    assert error.line == 3
    assert message in error.message
    assert str(error).startswith(f"{tmp_path / 'data' / 'ex.jsonl'}:3: ")


def test_a_position_outside_ties_order_is_refused_at_its_jsonl_line(tmp_path: Path) -> None:
    """As for an example written in the checklist: ``position`` under the test's default
    rule (``ties: fail``) would be ignored, so it is one error at the line that has it."""
    placed = {**GOOD[0], "id": "p", "position": 1}
    path = _write(tmp_path, [json.dumps(GOOD[1]), json.dumps(placed)])
    error = _error(path)
    assert str(error).startswith(f"{tmp_path / 'data' / 'ex.jsonl'}:2: 'position' places")
    assert "judged under 'ties: fail'" in str(error)
    path.write_text(path.read_text().replace("    examples:", "    ties: order\n    examples:"))
    assert load_checklist(path).tests[0].examples[1].position == 1


def test_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path, [json.dumps(GOOD[0])])
    with (tmp_path / "data" / "ex.jsonl").open("ab") as handle:
        handle.write(b'{"caption": "\xff"}\n')
    error = _error(path)
    assert (error.line, error.message.startswith("not UTF-8")) == (2, True)


def test_an_empty_file_and_a_missing_file_and_a_wrong_suffix(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, ["", ""]))
    assert (error.path.name, error.line) == ("ex.jsonl", 1)
    assert "no examples" in error.message
    path = tmp_path / "checks.yaml"
    path.write_text(HEADER.format(task="caption", examples="nope.jsonl"), encoding="utf-8")
    error = _error(path)
    assert (error.path, error.line) == (path, 8)
    assert "examples file 'nope.jsonl' not found" in error.message
    path.write_text(HEADER.format(task="caption", examples="data/ex.csv"), encoding="utf-8")
    assert "expected a list of examples or the path of a .jsonl file" in _error(path).message


def test_pytest_reports_the_bad_jsonl_line(pytester: pytest.Pytester) -> None:
    images = pytester.mkdir("images")
    for name, rgb in {"red": (220, 20, 20), "blue": (20, 20, 220)}.items():
        Image.new("RGB", (16, 16), rgb).save(images / f"{name}.png")
    _write(pytester.path, [json.dumps(GOOD[0]), json.dumps(GOOD[1])], name="good")
    (pytester.path / "checks.yaml").rename(pytester.path / "good.yaml")
    _write(pytester.path, [json.dumps(GOOD[0]), "{oops}"], name="bad")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.syspathinsert()
    result = pytester.runpytest("--vl-model=py:colour_model:make", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["collected 1 item / 1 error", "*data/bad.jsonl:2: invalid JSON at column 2*"]
    )
    assert "Traceback" not in result.stdout.str()
    result.assert_outcomes(errors=1)


def test_fast_path_builds_what_full_validation_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain caption lines skip the per-key validation; the examples are the same, and a line
    the fast path doubts (a bool tag, a float id, a repeated key) goes through full
    validation and its FILE.jsonl:LINE error."""
    from pytest_vlcheck.tasks.caption.kind import CAPTION

    rows = [
        {"image": "red.png", "caption": "a red square", "negatives": ["b", "c"]},
        {"id": 7, "image": "red.png", "caption": "red", "negatives": ["x"], "tags": {"k": 1.5}},
        {"id": "s", "image": "sub/blue.png", "caption": 'say "hi": ok', "negatives": ["y"]},
    ]
    path = _write(tmp_path, [json.dumps(row) for row in rows])
    built: list[object] = []
    real = CAPTION.parse_plain_examples
    # record what the fast path builds, then let full validation build the same test
    monkeypatch.setattr(CAPTION, "parse_plain_examples", lambda *a: built.append(real(*a)))
    fast = load_checklist(path).tests[0].examples
    assert built == [fast]
    assert [e.id for e in fast][1:] == ["7", "s"] and fast[1].tags == {"k": "1.5"}
    monkeypatch.undo()
    for bad, message in (
        ('{"id": 1.5, "image": "a.png", "caption": "c", "negatives": ["n"]}', "'id' must be"),
        ('{"image": "a.png", "caption": "c", "caption": "d", "negatives": ["n"]}', "duplicate key"),
        ('{"image": "a.png", "caption": "c", "negatives": ["n"], "tags": {"t": [1]}}', "tag 't'"),
    ):
        error = _error(_write(tmp_path, [json.dumps(rows[0]), bad]))
        assert str(error).startswith(f"{tmp_path / 'data' / 'ex.jsonl'}:2: ") and message in str(
            error
        )


EDGE_LINES = [
    '{"image": "a.png", "caption": "c", "negatives": ["n"]}',
    '{"image": "a.png", "caption": "time: 12:30", "negatives": ["n"]}',  # colons in text
    '{"image": "a.png", "caption": "c", "negatives": ["n"], "tags": {"k": "v"}}',
    '{"image": {"path": "a.png", "crop": [0, 0, 4, 4]}, "caption": "c", "negatives": ["n"]}',
    '{"image": "a.png", "caption": "c", "negatives": ["n"]}   \r',  # trailing JSON space
    '   {"image": "a.png", "caption": "c", "negatives": ["n"]}',  # leading space
    '{"image": "a.png", "caption": "{[", "negatives": ["]}"], "id": 3}',
    '{"image": "a.png", "caption": NaN, "negatives": []}',
    '{"e": {}, "f": [[], [{}]], "g": null}',
]
BAD_LINES = [
    ('{"image": "a.png", "c\\u0061ption": "c", "caption": "d"}', "duplicate key 'caption'"),
    ('{"tags": {"k": 1, "k": 2}, "image": "a.png"}', "duplicate key 'k'"),
    ('{"a": 1} {"b": 2}', "invalid JSON at column 10: Extra data"),
    ('{"a": 1,', "Expecting property name"),
    ('{"a": ' + "[" * 70 + "]" * 70 + "}", "nested too deep"),
    ("[1, 2]", "got a list"),
]


def test_jsonl_lines_are_the_exact_decoders_objects(tmp_path: Path) -> None:
    """The scanner's fast objects are the ones the exact decoder (the one that words
    errors) makes, line by line."""
    from pytest_vlcheck.checklist.jsonl import _example, _no_duplicates, load_jsonl_examples

    path = tmp_path / "edge.jsonl"
    path.write_text("\n".join(EDGE_LINES) + "\n\n", encoding="utf-8")
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates)
    exact = [_example(path, n, line + "\n", decoder) for n, line in enumerate(EDGE_LINES, 1)]
    examples, lines = load_jsonl_examples(path)
    assert lines == list(range(1, len(EDGE_LINES) + 1))
    assert json.dumps(examples) == json.dumps(exact)  # NaN == NaN as text
    assert all(type(example) is dict for example in examples)


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_a_doubtful_jsonl_line_gets_the_exact_decoders_error(
    tmp_path: Path, bad: str, message: str
) -> None:
    from pytest_vlcheck.checklist.jsonl import load_jsonl_examples

    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([EDGE_LINES[0], bad, "{oops}"]), encoding="utf-8")
    with pytest.raises(ChecklistError) as info:
        load_jsonl_examples(path)
    assert (info.value.line, message in info.value.message) == (2, True), str(info.value)


def test_a_bad_byte_after_a_bad_line_is_reported_after_it(tmp_path: Path) -> None:
    """The first problem in file order, as when the file was read line by line."""
    from pytest_vlcheck.checklist.jsonl import load_jsonl_examples

    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"a": 1}\n{oops}\n{"b": "\xff"}\n')
    with pytest.raises(ChecklistError) as info:
        load_jsonl_examples(path)
    assert (info.value.line, info.value.message.startswith("invalid JSON")) == (2, True)
    path.write_bytes(b'{"a": 1}\n\n{"b": "\xe2\x82"}\n{oops}\n')
    with pytest.raises(ChecklistError) as info:
        load_jsonl_examples(path)
    assert str(info.value) == f"{path}:3: not UTF-8 text: invalid continuation byte"


def test_the_fast_caption_example_equals_the_dataclasss_own() -> None:
    from dataclasses import fields

    from pytest_vlcheck.images.refs import ImageRef
    from pytest_vlcheck.tasks.caption.example import plain_caption_example

    ref = ImageRef("file", "a.png", "/x/a.png", None, False)
    args = ("e1", ref, ("a cat",), ("a dog",), {"set": "x"}, 12)
    fast = plain_caption_example(*args)
    assert fast == CaptionExample(*args) and repr(fast) == repr(CaptionExample(*args))
    assert list(vars(fast)) == [f.name for f in fields(CaptionExample)]


def test_an_example_that_is_not_a_mapping_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "checks.yaml"
    path.write_text(HEADER.format(task="caption", examples="[just text]"), encoding="utf-8")
    assert "must be a mapping" in _error(path).message
