"""Checkpoint globs say what they do with steps and names: no step is one warning naming the
files (refused with a logger: a curve needs steps), one step twice or one column name twice is
refused naming both files (exit 4, nothing written), and a processor's own save_pretrained
folder serves as ``#BASE``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.model_builders import write_colour_squares

from pytest_vlcheck import evaluate
from pytest_vlcheck.run.arguments import CheckpointStepWarning
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS

COMMON = ("--vl-no-cache", "-p", "no:cacheprovider")


def _project(pytester: pytest.Pytester, *names: str) -> None:
    write_colour_squares(pytester.path)
    for name in names:
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(TINY_WEIGHTS, pytester.path / name)


def _spec(weights: str) -> str:
    return f"--vl-model=run=open_clip:{TINY_CONFIG}@{weights}"


def _refused(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    (pytester.path / "rep").mkdir(exist_ok=True)
    (pytester.path / "rep" / "matrix.json").write_text("earlier")
    result = pytester.runpytest(*args, "--vl-report=rep", *COMMON)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert message in output, output
    assert "Traceback" not in output
    assert (pytester.path / "rep" / "matrix.json").read_text() == "earlier"
    assert not (pytester.path / "log.jsonl").exists()


def test_checkpoints_without_a_step_are_one_warning_and_refused_with_a_logger(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, "ck/best.safetensors", "ck/last.safetensors")
    result = pytester.runpytest(_spec("ck/*.safetensors"), *COMMON)
    result.assert_outcomes(passed=2)
    warning = (
        "checkpoint glob: ck/best.safetensors, ck/last.safetensors hold no step in their names "
        "(no number); expected names like epoch_3 or checkpoint-500 for a curve over steps"
    )
    assert result.stdout.lines.count(warning) == 1
    _refused(
        pytester,
        [_spec("ck/*.safetensors"), "--vl-log=jsonl:log.jsonl"],
        f"--vl-log: {warning}; a logger's curve needs them",
    )
    with pytest.warns(CheckpointStepWarning, match="ck/best.safetensors, ck/last.safetensors"):
        evaluate(f"run=open_clip:{TINY_CONFIG}@ck/*.safetensors", "checks.yaml", no_cache=True)


def test_two_checkpoints_at_one_step_are_refused_naming_both(pytester: pytest.Pytester) -> None:
    _project(pytester, "ck/epoch_1.safetensors", "ck/run_1.safetensors")
    _refused(
        pytester,
        [_spec("ck/*.safetensors")],
        "checkpoints ck/epoch_1.safetensors and ck/run_1.safetensors both have step 1",
    )


def test_colliding_names_are_refused_with_a_fix_that_works(pytester: pytest.Pytester) -> None:
    _project(pytester, "ck/a/model_1.safetensors", "ck/b/model_1.safetensors")
    _refused(
        pytester,
        [_spec("ck/*/model_1.safetensors")],
        "checkpoints ck/a/model_1.safetensors and ck/b/model_1.safetensors would both be the "
        "column 'run@model_1'; expected file names that differ in letters, digits or '_.+-' "
        "(rename one)",
    )
    (pytester.path / "ck/b/model_1.safetensors").rename(pytester.path / "ck/b/model_2.safetensors")
    fixed = pytester.runpytest(_spec("ck/*/model_*.safetensors"), "--vl-report=rep", *COMMON)
    fixed.assert_outcomes(passed=2)
    matrix = json.loads((pytester.path / "rep" / "matrix.json").read_text())
    assert [(m["name"], m["step"]) for m in matrix["models"]] == [
        ("run@model_1", 1),
        ("run@model_2", 2),
    ]


def test_a_processor_only_base_folder_is_accepted(pytester: pytest.Pytester) -> None:
    """``CLIPProcessor.save_pretrained`` writes no config.json: it is still a base."""
    from helpers.model_builders import build_hf_clip

    write_colour_squares(pytester.path)
    built = build_hf_clip(pytester.path / "built")
    checkpoint = pytester.path / "out" / "checkpoint-7"
    checkpoint.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.move(built / name, checkpoint / name)
    assert not (built / "config.json").exists() and (built / "tokenizer_config.json").exists()
    result = pytester.runpytest(
        f"--vl-model=run=hf:out/checkpoint-*#{built}", "--vl-device=cpu", "--vl-report=rep", *COMMON
    )
    result.assert_outcomes(passed=1)
    assert "Traceback" not in result.stdout.str()
    matrix = json.loads(Path(pytester.path / "rep" / "matrix.json").read_text())
    assert [(m["name"], m["step"]) for m in matrix["models"]] == [("run@checkpoint-7", 7)]
