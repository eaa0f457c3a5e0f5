"""``vlcheck merge``: CI shards' report folders and baselines merge into the serial run's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from colour_scorer import SOURCE
from PIL import Image
from test_plugin import CHECKLIST, COLOURS

from pytest_vlcheck.cli import main

MODELS = ("--vl-model=py:colour_model:make", "--vl-model=second=py:colour_model:make")
SECOND = """\
vlcheck: 1
tests:
  - id: green
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {image: images/green.png, caption: green, negatives: [red]}
      - {image: images/blue.png, caption: blue, negatives: [green]}
"""


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
    assert main(["merge", "s2.json", "s1.json", "-o", "merged.json"]) == 0
    assert (runs / "merged.json").read_bytes() == (runs / "serial.json").read_bytes()


def test_overlapping_inputs_name_both(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "s1", "serial", "-o", "merged"]) == 2
    error = capsys.readouterr().err
    assert "is in both s1 and serial" in error and "disjoint shards" in error
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
