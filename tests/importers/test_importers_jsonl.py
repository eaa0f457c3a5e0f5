"""``vlcheck import`` writes a large test's examples as JSON Lines beside the YAML.

Above ``JSONL_ABOVE`` examples (or with ``--jsonl always``) the YAML says
``examples: OUT.TEST.jsonl``; the loader gives the same examples either way, every file is
checked before the first is written, and a failed import writes none of them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from test_importers import FIXTURES, run

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.checklist.jsonl_writer import JSONL_ABOVE, split_examples
from pytest_vlcheck.cli.import_command import CHANCE_THRESHOLDS
from pytest_vlcheck.importers.common import SourceError, check_loads


def sugarcrepe_source(folder: Path, count: int) -> Path:
    """A SugarCrepe ``swap_obj.json`` of ``count`` records."""
    records = {
        str(i): {
            "filename": f"{i % 997:012d}.jpg",
            "caption": f"a dog left of cat number {i}",
            "negative_caption": f"a cat left of dog number {i}",
        }
        for i in range(count)
    }
    source = folder / "swap_obj.json"
    source.write_text(json.dumps(records), encoding="utf-8")
    return source


def test_a_test_above_the_threshold_is_written_as_jsonl_with_the_same_examples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = sugarcrepe_source(tmp_path, JSONL_ABOVE + 1)
    auto, inline = tmp_path / "sc.yaml", tmp_path / "sc_inline.yaml"
    assert run(["sugarcrepe", str(source), "-o", str(auto)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {tmp_path / 'sc.swap_obj.jsonl'}: {JSONL_ABOVE + 1} examples of test 'swap_obj'",
        f"wrote {auto}: 1 test, {JSONL_ABOVE + 1} examples",
        CHANCE_THRESHOLDS,
    ]
    (test,) = yaml.safe_load(auto.read_text(encoding="utf-8"))["tests"]
    assert test["examples"] == "sc.swap_obj.jsonl"
    assert run(["sugarcrepe", str(source), "-o", str(inline), "--jsonl", "never"]) == 0
    assert not list(tmp_path.glob("sc_inline*.jsonl"))
    (jsonl_test,), (inline_test,) = load_checklist(auto).tests, load_checklist(inline).tests
    assert jsonl_test.examples_file == tmp_path / "sc.swap_obj.jsonl"
    assert [e.line for e in jsonl_test.examples[:2]] == [1, 2]
    assert [replace(e, line=0) for e in jsonl_test.examples] == [
        replace(e, line=0) for e in inline_test.examples
    ]


def test_at_the_threshold_examples_stay_inline_and_always_moves_any(tmp_path: Path) -> None:
    source = sugarcrepe_source(tmp_path, JSONL_ABOVE)
    out = tmp_path / "sc.yaml"
    assert run(["sugarcrepe", str(source), "-o", str(out)]) == 0
    assert not list(tmp_path.glob("*.jsonl"))
    small = FIXTURES / "sugarcrepe"
    assert run(["sugarcrepe", str(small), "-o", str(out), "--jsonl", "always"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "sc.replace_att.jsonl",
        "sc.swap_obj.jsonl",
    ]
    tests = yaml.safe_load(out.read_text(encoding="utf-8"))["tests"]
    assert [t["examples"] for t in tests] == ["sc.replace_att.jsonl", "sc.swap_obj.jsonl"]
    assert [len(t.examples) for t in load_checklist(out).tests] == [3, 2]


def test_file_names_are_safe_and_distinct_on_any_file_system() -> None:
    example = {"image": "a.jpg", "caption": "a", "negatives": ["b"]}
    tests = [{"id": name, "examples": [example]} for name in ("Color", "color", "../up", "x")]
    doc, files = split_examples({"vlcheck": 1, "tests": tests}, "out", "always")
    assert [f.name for f in files] == [
        "out.Color.jsonl",
        "out.color-2.jsonl",
        "out.3.jsonl",
        "out.x.jsonl",
    ]
    assert [t["examples"] for t in doc["tests"]] == [f.name for f in files]
    assert split_examples({"vlcheck": 1}, "out", "always") == ({"vlcheck": 1}, [])


def test_a_bad_jsonl_output_is_located_at_its_own_line_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    yaml_path, jsonl_path = tmp_path / "out.yaml", tmp_path / "out.t.jsonl"
    test = (
        "vlcheck: 1\ntests:\n  - id: t\n    capability: a/b\n    task: caption\n"
        "    threshold: 0.5\n    examples: out.t.jsonl\n"
    )
    good = json.dumps({"id": "e", "image": "i.png", "caption": "c", "negatives": ["n"]})
    bad = json.dumps({"id": "f", "image": "i.png", "caption": "", "negatives": ["n"]})
    with pytest.raises(SourceError) as caught:
        check_loads([(jsonl_path, f"{good}\n{bad}\n"), (yaml_path, test)])
    assert str(caught.value).startswith(f"{jsonl_path}:2: the checklist built does not load (")
    assert not yaml_path.exists() and not jsonl_path.exists()


def test_the_summary_says_when_thresholds_are_chance(tmp_path: Path, capsys) -> None:
    source = sugarcrepe_source(tmp_path, 3)
    assert run(["sugarcrepe", str(source), "-o", str(tmp_path / "a.yaml")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == CHANCE_THRESHOLDS
    assert (
        run(["sugarcrepe", str(source), "-o", str(tmp_path / "b.yaml"), "--threshold", "0.8"]) == 0
    )
    assert CHANCE_THRESHOLDS not in capsys.readouterr().out
