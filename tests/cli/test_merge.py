"""``vlcheck merge``: CI shards' report folders and baselines merge into the serial run's files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.colour_project import CHECKLIST, COLOURS
from helpers.colour_scorer import SOURCE
from helpers.merge_runs import MODELS, SECOND
from PIL import Image

from pytest_vlcheck.cli import main


@pytest.fixture
def runs(pytester: pytest.Pytester) -> Path:
    """A serial run and its two shards, each with a report folder and a fresh baseline."""
    images = pytester.mkdir("images")
    for name, rgb in COLOURS.items():
        Image.new("RGB", (16, 16), rgb).save(images / f"{name}.png")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", checks=CHECKLIST, second=SECOND)
    pytester.syspathinsert()
    for name, extra in (("serial", ()), ("s1", ("--vl-shard=1/2",)), ("s2", ("--vl-shard=2/2",))):
        pytester.runpytest(
            *MODELS, f"--vl-report={name}", f"--vl-save-baseline={name}.json", *extra
        )
    return pytester.path


def test_merged_shards_equal_the_serial_run(runs: Path) -> None:
    shard_tests = [
        {r["test"] for r in json.loads((runs / s / "matrix.json").read_text())["results"]}
        for s in ("s1", "s2")
    ]
    assert shard_tests[0] and shard_tests[1] and not shard_tests[0] & shard_tests[1]
    assert main(["merge", "s1", "s2", "-o", "merged"]) == 0
    for name in ("matrix.json", "samples.jsonl", "matrix.md", "matrix.csv", "report.html"):
        assert (runs / "merged" / name).read_bytes() == (runs / "serial" / name).read_bytes(), name
    # the fields of issue 34 survive the merge (the merged file equals the serial one)
    rows = json.loads((runs / "merged" / "matrix.json").read_text())["results"]
    green = next(r for r in rows if r["test"] == "green")
    assert (green["passed"], green["clusters"], green["design_effect"]) == (2, 2, 2.0)
    assert green["ci_low_clustered"] < green["ci_low"] and green["reordered_share"] == 0.5
    assert green["all_of_slices"] == {
        "pair": {
            "shade": {
                "light": {"groups": 1, "passed": 1, "rate": 1.0},
                "mixed": {"groups": 1, "passed": 0, "rate": 0.0},
            }
        }
    }
    markdown = (runs / "merged" / "matrix.md").read_text()
    assert "Slice by shade, pair all right:" in markdown
    assert "50.0% of examples have a negative made of the true text's words" in markdown
    assert "(clustered " in markdown
    assert main(["merge", "s2.json", "s1.json", "-o", "merged.json"]) == 0
    assert (runs / "merged.json").read_bytes() == (runs / "serial.json").read_bytes()


def test_overlapping_inputs_name_both(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "s1", "serial", "-o", "merged"]) == 2
    assert "serial is a whole run (no --vl-shard) but s1 is shard 1/2" in capsys.readouterr().err
    shutil.copytree(runs / "s1", runs / "again")
    _edit(runs / "again" / "matrix.json", lambda doc: doc["run"]["shard"].__setitem__("index", 2))
    assert main(["merge", "s1", "again", "-o", "merged"]) == 2
    error = capsys.readouterr().err
    assert "is in both s1 and again" in error and "disjoint shards" in error
    assert not (runs / "merged").exists()
    assert main(["merge", "serial.json", "s2.json", "-o", "merged.json"]) == 2
    assert "is in both serial.json and s2.json" in capsys.readouterr().err


def test_thumbnails_are_copied(runs: Path) -> None:
    def listing(folder: str) -> dict[str, bytes]:
        found = (runs / folder / "thumbnails").glob("*.jpg")
        return {p.name: p.read_bytes() for p in found}

    shards = {**listing("s1"), **listing("s2")}
    assert shards and listing("serial") == shards
    assert main(["merge", "s1", "s2", "-o", "merged"]) == 0
    assert listing("merged") == shards
    assert "data:image/jpeg;base64," in (runs / "merged" / "report.html").read_text()


def test_bad_inputs_are_one_message(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "s1", "s1.json", "-o", "out"]) == 2
    assert "mix report folders and files" in capsys.readouterr().err
    (runs / "empty").mkdir()
    assert main(["merge", "s1", "empty", "-o", "out"]) == 2
    assert "empty: no matrix.json; expected a folder written by --vl-report" in (
        capsys.readouterr().err
    )
    (runs / "s2" / "samples.jsonl").unlink()
    assert main(["merge", "s1", "s2", "-o", "out"]) == 2
    assert "s2: no samples.jsonl, but s1 has one" in capsys.readouterr().err


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change a report file by hand, its folder's manifest dropped (else the folder is refused
    as a mix of runs: tests/report/test_report_folder_sets.py)."""
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    (path.parent / "manifest.json").unlink(missing_ok=True)


def _refused(runs: Path, capsys: pytest.CaptureFixture[str], *inputs: str) -> str:
    """Merge ``inputs`` expecting a refusal: exit 2, one line, nothing written."""
    before = (runs / "merged" / "matrix.json").read_bytes()
    output = "merged.json" if inputs[0].endswith(".json") else "merged"
    assert main(["merge", *inputs, "-o", output]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error, error
    assert (runs / "merged" / "matrix.json").read_bytes() == before
    return error


@pytest.fixture
def merged(runs: Path) -> Path:
    """An earlier merge's output, which a refused merge must leave as it was."""
    assert main(["merge", "s1", "s2", "-o", "merged"]) == 0
    return runs


def _set_run(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["run"].__setitem__(key, value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda doc: doc["models"][0].__setitem__("fingerprint", "0123abcd"),
            "model 'make' fingerprint is '",
        ),
        (
            lambda doc: doc["models"][1].__setitem__("spec", "py:colour_model:other"),
            "model 'second' spec is 'py:colour_model:make' in s1 but 'py:colour_model:other' in s2",
        ),
        (_set_run("precision", "bf16"), "the run's precision is 'fp32' in s1 but 'bf16' in s2"),
        (
            _set_run("tool_version", "9.0"),
            "the run's tool_version is '0.1.0' in s1 but '9.0' in s2",
        ),
        (_set_run("torch", "1.0"), "the run's torch is"),
        (_set_run("decode", "gpu"), "the run's decode is 'cpu' in s1 but 'gpu' in s2"),
        (
            lambda doc: doc["run"]["shard"].__setitem__("count", 3),
            "the shard count (--vl-shard K/N's N) is 2 in s1 but 3 in s2",
        ),
        (
            lambda doc: doc["run"]["shard"].__setitem__("index", 1),
            "shard 1/2 is both s1 and s2; expected each shard once",
        ),
        (lambda doc: doc.__setitem__("run", {**doc["run"], "shard": None}), "s2 is a whole run"),
    ],
)
def test_inputs_of_different_runs_are_refused(
    merged: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], None],
    expected: str,
) -> None:
    _edit(merged / "s2" / "matrix.json", change)
    assert expected in _refused(merged, capsys, "s1", "s2")


def test_shards_of_another_selection_or_a_missing_shard_are_refused(
    merged: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shard whose job selected other tests (here ``-k``) belongs to another split, even
    when its count agrees; one shard alone is incomplete."""
    pytester.runpytest(*MODELS, "--vl-report=other", "--vl-shard=2/2", "-k", "not green")
    error = _refused(merged, capsys, "s1", "other")
    assert "the sharded selection (its tests and sizes) is '" in error and "in other" in error
    error = _refused(merged, capsys, "s1")
    assert "shard 2/2 is missing (2 of 2 shards ran tests)" in error


def test_a_test_with_other_content_is_refused(
    merged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two whole runs, one per model, of checklists that differ in one test."""
    for name, model in (("a", "make"), ("b", "second")):
        folder = merged / name
        folder.mkdir()
        (folder / "matrix.json").write_text((merged / "serial" / "matrix.json").read_text())

        def keep(doc: dict[str, Any], model: str = model, name: str = name) -> None:
            doc["results"] = [r for r in doc["results"] if r["model"] == model]
            if name == "b":
                doc["results"][0]["content_hash"] = "edited"

        _edit(folder / "matrix.json", keep)
    error = _refused(merged, capsys, "a", "b")
    assert "checks.yaml::color content hash is '" in error and "but 'edited' in b" in error


def test_samples_must_match_their_results(merged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    samples = merged / "s2" / "samples.jsonl"
    (samples.parent / "manifest.json").unlink()  # edited by hand below
    lines = samples.read_text().splitlines(keepends=True)
    samples.write_text("".join(lines[1:]))
    error = _refused(merged, capsys, "s1", "s2")
    assert "s2/samples.jsonl: " in error and "but its result has n=" in error
    samples.write_text("".join([lines[0], *lines]))
    assert "s2/samples.jsonl:2: duplicate example '" in _refused(merged, capsys, "s1", "s2")


def test_folders_from_before_the_run_block_merge_with_a_warning(
    merged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def older(doc: dict[str, Any]) -> None:
        del doc["run"]
        for result in doc["results"]:
            del result["content_hash"]

    for shard in ("s1", "s2"):
        _edit(merged / shard / "matrix.json", older)
    capsys.readouterr()
    assert main(["merge", "s1", "s2", "-o", "old"]) == 0
    error = capsys.readouterr().err
    assert error.count("vlcheck merge: warning:") == 2
    assert (
        "s1 was written by an earlier pytest-vlcheck: its precision, device, versions and "
        "shard plan and test contents could not be checked" in error
    )
    assert "run" not in json.loads((merged / "old" / "matrix.json").read_text())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda doc: doc["entries"][0].__setitem__("fingerprint", "0123abcd"),
            "fingerprint is '",
        ),
        (
            lambda doc: doc["entries"][0]["conditions"].__setitem__("precision", "bf16"),
            "the run's precision is 'fp32' in s1.json but 'bf16' in s2.json",
        ),
    ],
)
def test_baselines_of_different_runs_are_refused(
    merged: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], None],
    expected: str,
) -> None:
    _edit(merged / "s2.json", change)
    assert expected in _refused(merged, capsys, "s1.json", "s2.json")
    assert not (merged / "merged.json").exists()
