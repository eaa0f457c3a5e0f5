"""gates.baseline and results.samples: round trips, merging, matching and clear load errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_vlcheck.gates.baseline import Baseline, BaselineError, git_commit, make_entry
from pytest_vlcheck.report.loader import ReportFormatError
from pytest_vlcheck.results.samples import SampleRow, outcomes_by_key, read_samples, write_samples

CONDITIONS = {"precision": "fp32", "device": "cpu", "batch_size": 64, "torch": "2.3.0"}


def row(test: str, model: str, passed: int = 2, n: int = 3, file: str = "checklists/a.yaml"):
    return {
        "file": file,
        "test": test,
        "model": model,
        "capability": "attribute/color",
        "task": "caption",
        "n": n,
        "passed": passed,
        "pass_rate": passed / n,
        "ci_low": 0.2,
        "ci_high": 0.9,
        "threshold": 0.5,
        "status": "passed",
    }


def make(test: str, model: str, passed: int = 2, file: str = "checklists/a.yaml"):
    outcomes = {f"x{i}": i < passed for i in range(3)}
    return make_entry(
        row(test, model, passed, file=file),
        outcomes,
        spec="tiny",
        fingerprint="abc",
        content_hash="h-" + test,
        conditions=CONDITIONS,
        git_commit=None,
    )


def test_dump_load_round_trip(tmp_path: Path) -> None:
    base = Baseline((make("size", "tiny"), make("color", "tiny")))
    path = tmp_path / "sub" / "baseline.json"
    base.dump(path)
    doc = json.loads(path.read_text())
    assert doc["vlcheck_baseline"] == 1
    assert [e["test"] for e in doc["entries"]] == ["color", "size"]  # sorted by key
    assert doc["entries"][0]["conditions"]["transformers"] is None
    assert doc["entries"][0]["numbers"]["pass_rate"] == 2 / 3
    assert Baseline.load(path) == base
    assert list(tmp_path.joinpath("sub").iterdir()) == [path]  # no temp file left


def test_merge_replaces_own_entries_and_keeps_others() -> None:
    old = Baseline((make("color", "tiny", 1), make("size", "tiny", 1), make("color", "big", 1)))
    merged = old.merge([make("color", "tiny", 3)])
    assert merged.keys() == old.keys()
    by_key = {e.key: e for e in merged.entries}
    assert by_key[("checklists/a.yaml", "color", "tiny")].numbers["passed"] == 3
    assert by_key[("checklists/a.yaml", "size", "tiny")].numbers["passed"] == 1
    assert by_key[("checklists/a.yaml", "color", "big")].numbers["passed"] == 1


def test_entry_for_matching_rule() -> None:
    single = Baseline((make("color", "ckpt-1000"),))
    # one model in the baseline for the test: the reference for every model of the run
    assert single.entry_for("checklists/a.yaml", "color", "ckpt-1200").model == "ckpt-1000"
    assert single.entry_for("checklists/a.yaml", "size", "ckpt-1200") is None
    two = Baseline((make("color", "clip"), make("color", "tiny")))
    assert two.entry_for("checklists/a.yaml", "color", "tiny").model == "tiny"
    assert two.entry_for("checklists/a.yaml", "color", "other") is None
    assert two.entry_for("checklists/a.yaml", "color", "other", baseline_model="clip").model == (
        "clip"
    )
    assert single.entry_for("checklists/a.yaml", "color", "x", baseline_model="clip") is None


def test_stale_and_prune() -> None:
    base = Baseline(
        (make("color", "tiny"), make("gone", "tiny"), make("old", "tiny", file="b.yaml"))
    )
    existing = [("checklists/a.yaml", "color")]
    assert [e.test for e in base.stale(existing)] == ["old", "gone"]  # b.yaml sorts first
    assert base.prune(existing).keys() == [("checklists/a.yaml", "color", "tiny")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"vlcheck_baseline": 2, "entries": []}',
            "baseline format 2 was written by a newer pytest-vlcheck; this one reads format 1",
        ),
        ('{"vlcheck_baseline": 0, "entries": []}', "unsupported baseline format version 0;"),
        (
            '{"entries": []}',
            'not a vlcheck baseline: expected a JSON object with "vlcheck_baseline"',
        ),
        ('{"vlcheck_baseline": 1, "entries": {}}', "entries: expected a list, got dict"),
        ('{"vlcheck_baseline": 1,\n "entries": [}', "b.json:2: invalid JSON"),
    ],
)
def test_load_rejects_bad_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(BaselineError, match="^" + str(path)) as info:
        Baseline.load(path)
    assert message in str(info.value)


def test_load_names_the_bad_field(tmp_path: Path) -> None:
    doc = json.loads(Baseline((make("color", "tiny"),)).to_json())
    doc["entries"][0]["numbers"]["n"] = -3
    doc["entries"][0]["outcomes"]["x1"] = "yes"
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError) as info:
        Baseline.load(path)
    assert str(info.value) == (
        f"{path}: entries[0] (checklists/a.yaml::color [tiny]).numbers.n: expected a "
        "non-negative integer, got -3"
    )
    assert isinstance(info.value, ReportFormatError)
    with pytest.raises(BaselineError, match="no such file"):
        Baseline.load(tmp_path / "missing.json")


def test_git_commit(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None
    here = git_commit(Path(__file__).parent)
    assert here is None or len(here) == 40


def sample(example: str, correct: bool, model: str = "tiny") -> SampleRow:
    return SampleRow("checklists/a.yaml", "color", model, example, correct, False, ((0.3, 0.2),))


def test_samples_round_trip(tmp_path: Path) -> None:
    rows = [sample("a", True), sample("b", False), sample("a", False, "clip")]
    rows.append(SampleRow("c.yaml", "t", "tiny", "z", False, True, ((float("nan"), 0.1),)))
    path = tmp_path / "samples.jsonl"
    write_samples(path, rows)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {
        "file": "checklists/a.yaml",
        "test": "color",
        "model": "tiny",
        "example": "a",
        "correct": True,
        "tie": False,
        "scores": [[0.3, 0.2]],
        "texts": [],
        "images": [],
    }
    back = read_samples(path)
    assert back[:3] == rows[:3]
    assert back[3].scores == ((None, 0.1),) and back[3].tie
    assert outcomes_by_key(back)[("checklists/a.yaml", "color", "tiny")] == {"a": True, "b": False}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"file": "a", "test": "t", "model": "m", "example": "e", "correct": 1, "tie": false}',
            "'correct' must be true or false, got 1",
        ),
        ("[1]", "expected a JSON object, got list"),
        ("{", "invalid JSON"),
        (
            '{"file": "a", "test": "t", "model": "m", "example": "e", "correct": true, '
            '"tie": false, "scores": [["x"]]}',
            "'scores' must be a list of lists",
        ),
    ],
)
def test_read_samples_errors_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(sample("a", True).to_json() + "\n\n" + line + "\n")
    with pytest.raises(ReportFormatError) as info:
        read_samples(path)
    assert str(info.value).startswith(f"{path}:3: ")
    assert message in str(info.value)


def test_read_samples_rejects_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_samples(path, [sample("a", True), sample("a", False)])
    with pytest.raises(ReportFormatError, match=r"samples.jsonl:2: duplicate example 'a'"):
        read_samples(path)
