"""``vlcheck baseline prune`` on baselines saved by real runs: Python test rows and a wrong root.

Prune must never read a ``vl_model`` test module as a checklist, and must never take a root
under which nothing of the baseline exists for "every test was deleted" (it would empty the
baseline).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.gate_suite import checklist, scores

from pytest_vlcheck.cli import main
from pytest_vlcheck.gates.baseline import Baseline, make_entry

PROBE = """
def test_spatial(vl_model):
    vl_model.evaluate(
        task="caption", capability="relation/spatial", threshold=0.5, name="sp",
        examples=[{"id": str(i), "image": f"spatial{i}.png", "caption": f"c{i}",
                   "negatives": [f"n{i}"]} for i in range(60)],
    )
"""


@pytest.fixture
def saved(pytester: pytest.Pytester) -> Path:
    """A baseline saved by pytest: a checklist test and two ``vl_model`` test modules."""
    pytester.makefile(".yaml", gates=checklist({"action": 50}))
    pytester.makepyfile(test_colour_probe=PROBE, test_gone=PROBE.replace("spatial", "action"))
    scores(pytester.path / "old.jsonl", {"spatial": set(range(10)), "action": set(range(10))})
    result = pytester.runpytest("--vl-model=old=scores:old.jsonl", "--vl-save-baseline=base.json")
    result.assert_outcomes(passed=3)
    assert {e.file for e in Baseline.load(pytester.path / "base.json").entries} == {
        "gates.yaml",
        "test_colour_probe.py",
        "test_gone.py",
    }
    return pytester.path / "base.json"


def test_python_test_entries_are_kept_while_their_file_exists(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = saved.parent
    (root / "test_gone.py").unlink()
    assert main(["baseline", "prune", str(saved), "--root", str(root)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "stale: test_gone.py::test_action::sp[old]",
        f"{saved}: dropped 1 of 3 entries; kept 1 entry of Python test files unchecked (its "
        "file exists; a Python test is known only by running it)",
    ]
    assert Baseline.load(saved).keys() == [
        ("gates.yaml", "action", "old"),
        ("test_colour_probe.py", "test_spatial::sp", "old"),
    ]


def test_a_root_holding_none_of_the_files_is_refused(
    saved: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = saved.read_bytes()
    wrong = tmp_path_factory.mktemp("elsewhere")
    assert main(["baseline", "prune", str(saved), "--root", str(wrong)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"vlcheck baseline: {saved}: no file the baseline names exists under {wrong} "
        f"(looked for 3, e.g. {wrong / 'gates.yaml'}); expected --root to be the rootdir"
    )
    monkeypatch.chdir(wrong)  # the default root, ".", from the wrong folder
    assert main(["baseline", "prune", str(saved)]) == 2
    assert f"exists under {wrong} (looked for 3, e.g." in capsys.readouterr().err
    assert saved.read_bytes() == before


def _entry(file: str, test: str) -> object:
    row = {"file": file, "test": test, "model": "m", "capability": "attribute/color"}
    numbers = {"n": 2, "passed": 1, "pass_rate": 0.5, "ci_low": 0.0, "ci_high": 1.0}
    return make_entry(
        {**row, **numbers, "task": "caption", "threshold": 0.5},
        {"e0": True, "e1": False},
        spec="tiny",
        fingerprint=None,
        content_hash="h",
        conditions={},
    )


def test_bundled_names_do_not_count_as_files_under_the_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bundled:`` checklists live outside any root: a baseline of only those prunes from
    anywhere, and they do not vouch for a root under which the other files are missing."""
    path = tmp_path / "base.json"
    Baseline(
        (_entry("bundled:attribute.yaml", "color"), _entry("bundled:attribute.yaml", "x"))
    ).dump(path)
    assert main(["baseline", "prune", str(path), "--root", str(tmp_path / "none")]) == 0
    assert "dropped 1 of 2 entries" in capsys.readouterr().out
    assert Baseline.load(path).keys() == [("bundled:attribute.yaml", "color", "m")]
    Baseline((_entry("bundled:attribute.yaml", "color"), _entry("a.yaml", "t"))).dump(path)
    assert main(["baseline", "prune", str(path), "--root", str(tmp_path)]) == 2
    assert f"exists under {tmp_path} (looked for 1, e.g. {tmp_path / 'a.yaml'})" in (
        capsys.readouterr().err
    )
    assert len(Baseline.load(path).entries) == 2
