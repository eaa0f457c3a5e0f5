"""The vlcheck command: validate and report (import and render have their own test modules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_vlcheck.cli import main
from pytest_vlcheck.results.run_meta import ModelMeta

GOOD = """\
vlcheck: 1
tests:
  - id: t
    capability: object/existence
    task: caption
    threshold: 0.5
    examples:
      - {image: a.png, caption: a cat, negatives: [a dog]}
"""


def test_validate_reports_counts_and_file_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(GOOD.replace("threshold: 0.5", "threshold: 2"))
    (tmp_path / "other.yaml").write_text("not: a checklist\n")
    assert main(["validate", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert f"{tmp_path / 'good.yaml'}: 1 test, 1 example" in out
    assert f"{tmp_path / 'bad.yaml'}:6: 'threshold' is 2" in err
    assert "other.yaml" not in out + err
    assert main(["validate", str(tmp_path / "good.yaml")]) == 0


def test_validate_without_checklists_is_an_error(tmp_path: Path) -> None:
    assert main(["validate", str(tmp_path)]) == 2


def test_validate_of_a_missing_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "good.yaml").write_text("vlcheck: 1\ntests: []\n")
    assert main(["validate", str(tmp_path / "good.yaml"), str(tmp_path / "gone.yaml")]) == 2
    assert capsys.readouterr().err == (
        f"vlcheck validate: {tmp_path / 'gone.yaml'}: no such file or folder; expected "
        "checklist files or folders holding them\n"
    )


def test_report_re_renders_from_matrix_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "vlcheck_report": 1,
        "models": [{"name": "m", "spec": "py:x:y", "fingerprint": "f"}],
        "results": [
            {
                "file": "c.yaml",
                "test": "t",
                "capability": "object/existence",
                "task": "caption",
                "model": "m",
                "n": 400,
                "passed": 245,
                "pass_rate": 0.6125,
                "ci_low": 0.5639,
                "ci_high": 0.659,
                "threshold": 0.75,
                "chance": 0.5,
                "status": "failed",
                "metrics": {},
                "slices": {},
            }
        ],
    }
    source = tmp_path / "matrix.json"
    source.write_text(json.dumps(doc))
    assert main(["report", str(source), "-o", str(tmp_path / "out")]) == 0
    assert "61.3%" in (tmp_path / "out" / "matrix.md").read_text()
    assert (tmp_path / "out" / "report.html").exists()
    source.write_text("{}")
    assert main(["report", str(source)]) == 2
    assert "vlcheck report:" in capsys.readouterr().err


def test_every_subcommand_help_ends_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    """``vlcheck CMD --help`` shows runnable examples, one per line, as written."""
    from pytest_vlcheck.cli import main

    for command in (
        ["audit"], ["baseline", "prune"], ["compare"], ["import"], ["merge"], ["render"],
        ["report"], ["schema"], ["validate"],
    ):  # fmt: skip
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        examples = text.split("examples:\n", 1)[1].splitlines()
        assert examples and all(line.startswith(f"  vlcheck {command[0]} ") for line in examples)


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``vlcheck validate ... | head -1``: no traceback when the reader goes away."""
    import subprocess
    import sys

    checklists = Path(__file__).resolve().parents[2] / "checklists"
    command = [sys.executable, "-m", "pytest_vlcheck.cli", "validate", *[str(checklists)] * 20]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        status = proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert status == 141


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "{matrix}", "-o", "{file}"], "-o {file} is a file; expected a folder"),
        (["compare", "{matrix}", "{matrix}", "-o", "{file}"], "-o {file} is a file"),
        (["render", "{checklist}", "-o", "{file}"], "-o {file} is a file"),
        (["report", "{matrix}", "-o", "{missing}/out"], "the folder {missing} does not exist"),
        (["merge", "{run}", "{missing}", "-o", "{tmp}/m"], "{missing}: no such file or folder"),
        (
            ["import", "sugarcrepe", "{checklist}", "-o", "{missing}/x.yaml"],
            "-o {missing}/x.yaml: the folder {missing} does not exist",
        ),
        (["merge", "{base}", "{base}", "-o", "{tmp}"], "-o {tmp} is a folder; expected the file"),
    ],
)
def test_output_paths_are_checked_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """One line, exit status 2, nothing written, whatever the command."""
    from pytest_vlcheck.cli import main
    from pytest_vlcheck.report import write_report

    run = tmp_path / "run"
    write_report(run, [ModelMeta("m", "x", None)], [])
    (tmp_path / "a-file").write_text("keep")
    base = tmp_path / "base.json"
    base.write_text('{"vlcheck_baseline": 1, "entries": []}')
    names = {
        "matrix": str(run / "matrix.json"),
        "run": str(run),
        "base": str(base),
        "file": str(tmp_path / "a-file"),
        "missing": str(tmp_path / "missing"),
        "tmp": str(tmp_path),
        "checklist": str(Path(__file__).resolve().parents[2] / "checklists" / "attribute.yaml"),
    }
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main([a.format(**names) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message.format(**names) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "a-file").read_text() == "keep"
