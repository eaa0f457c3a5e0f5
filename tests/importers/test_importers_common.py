"""The importers' shared readers and the check that every output loads before any is
written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_importers import fails, imported, run

from pytest_vlcheck.importers.common import SourceError, check_loads, read_json_records

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"


def _json(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "records.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_json_records_keep_their_lines_keys_and_values(tmp_path: Path) -> None:
    path = _json(tmp_path, '{\n  "a": {"x": [1, {"y": "}"}]},\n\n  "b": 2\n}\n')
    assert read_json_records(path) == [(2, "a", {"x": [1, {"y": "}"}]}), (4, "b", 2)]
    path = _json(tmp_path, '[\n  {"x": 1},\n  "two"\n]')
    assert read_json_records(path) == [(2, 0, {"x": 1}), (3, 1, "two")]
    assert read_json_records(_json(tmp_path, " [ ] ")) == []


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{\n "a": 1,\n "a": 2\n}', 3, "id 'a' repeats line 2"),
        ('{\n "a": 1\n "b": 2\n}', 3, "invalid JSON: expected ','"),
        ("[\n 1,\n tru\n]", 3, "invalid JSON: Expecting value"),
        ("[1]\n[2]", 2, "invalid JSON: extra data"),
        ('"text"', 1, "expected a JSON object of records or a list of records"),
        ("{\n 1: 2}", 2, "invalid JSON: expected a string key"),
    ],
)
def test_json_records_errors_give_the_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = _json(tmp_path, text)
    with pytest.raises(SourceError) as caught:
        read_json_records(path)
    assert str(caught.value).startswith(f"{path}:{line}: {message}")


def test_json_lines_split_on_newline_only(tmp_path: Path) -> None:
    record = json.loads((FIXTURES / "winoground" / "examples.jsonl").read_text().split("\n")[0])
    record["caption_0"] = "a line\u2028separator and a form\x0cfeed stay text"
    path = tmp_path / "examples.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    doc = imported(tmp_path, "winoground", path)
    (example,) = doc["tests"][0]["examples"]
    assert example["captions"][0] == record["caption_0"]


def test_an_output_that_would_not_load_is_located_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.yaml"
    bad = tmp_path / "bad.yaml"
    test = "vlcheck: 1\ntests:\n  - id: t\n    capability: a/b\n    task: caption\n    threshold: 0.5\n"
    example = "    examples:\n      - {id: e, image: i.png, caption: c, negatives: [n]}\n"
    with pytest.raises(SourceError) as caught:
        check_loads([(good, test + example), (bad, test)])
    assert str(caught.value).startswith(f"{bad}:3: the checklist built does not load (")
    assert str(caught.value).endswith("); nothing was written")
    assert not good.exists() and not bad.exists()


def test_image_root_twice_for_a_format_with_one_root(tmp_path: Path, capsys) -> None:
    source = FIXTURES / "winoground" / "examples.jsonl"
    err = fails(
        capsys, tmp_path, "winoground", source, extra=("--image-root", "a", "--image-root", "b")
    )
    assert err == "vlcheck import: --image-root given 2 times; winoground takes one DIR"
    # NAME=DIR means nothing to a format with one image source: it is a folder's name
    out = tmp_path / "w.yaml"
    assert run(["winoground", str(source), "-o", str(out), "--image-root", "x=y"]) == 0
    assert yaml.safe_load(out.read_text())["image_root"].endswith("/x=y")
