"""Checkpoints as training writes them: a glob in a spec's weights part is one model per file,
in natural order, named after the file, logged at the step its name carries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.model_builders import write_colour_squares

from pytest_vlcheck.errors import ModelSpecError
from pytest_vlcheck.models.checkpoints import natural_key, step_of
from pytest_vlcheck.models.registry import parse_specs
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS


def _checkpoints(folder: Path, steps: tuple[int, ...] = (10, 2, 1)) -> Path:
    folder.mkdir()
    for step in steps:
        shutil.copy(TINY_WEIGHTS, folder / f"epoch_{step}.safetensors")
    return folder


def test_natural_order_and_steps_from_names() -> None:
    names = ["epoch_10", "epoch_2", "epoch_1"]
    assert sorted(names, key=natural_key) == ["epoch_1", "epoch_2", "epoch_10"]
    assert step_of("out/checkpoint-500/") == 500
    assert step_of("ckpt/epoch_12.safetensors") == 12
    assert step_of("ckpt/last.safetensors") is None


def test_a_glob_is_one_spec_per_checkpoint(tmp_path: Path) -> None:
    folder = _checkpoints(tmp_path / "ck")
    specs = parse_specs([f"run=open_clip:{TINY_CONFIG}@{folder}/epoch_*.safetensors"])
    assert [(s.name, s.group, s.step) for s in specs] == [
        ("run@epoch_1", "run", 1),
        ("run@epoch_2", "run", 2),
        ("run@epoch_10", "run", 10),
    ]
    assert specs[0].text == f"open_clip:{TINY_CONFIG}@{folder}/epoch_1.safetensors"
    unnamed = parse_specs([f"open_clip:{TINY_CONFIG}@{folder}/epoch_*.safetensors"])
    assert [s.name for s in unnamed] == ["tiny@epoch_1", "tiny@epoch_2", "tiny@epoch_10"]


def test_a_glob_that_matches_nothing_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match=r"the checkpoint glob '.*nope_\*' matches nothing"):
        parse_specs([f"open_clip:{TINY_CONFIG}@{tmp_path}/nope_*"])


def test_pytest_gives_a_column_per_checkpoint_logged_at_its_step(
    pytester: pytest.Pytester,
) -> None:
    write_colour_squares(pytester.path)
    _checkpoints(pytester.path / "ck")
    spec = f"--vl-model=run=open_clip:{TINY_CONFIG}@ck/epoch_*.safetensors"
    result = pytester.runpytest(
        spec,
        "--vl-log=jsonl:log.jsonl",
        "--vl-report=rep",
        "--vl-no-cache",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3)
    matrix = json.loads((pytester.path / "rep" / "matrix.json").read_text())
    assert [m["name"] for m in matrix["models"]] == ["run@epoch_1", "run@epoch_2", "run@epoch_10"]
    assert [(m["group"], m["step"]) for m in matrix["models"]] == [
        ("run", 1),
        ("run", 2),
        ("run", 10),
    ]
    html = (pytester.path / "rep" / "report.html").read_text()
    curves = html.split("<h2>Capability curves: run</h2>", 1)[1]
    assert 'class="chart line-chart"' in curves.split("</figure>", 1)[0]
    lines = [json.loads(line) for line in (pytester.path / "log.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2, 10]
    assert all("run/vlcheck/attribute/color/color/pass_rate" in line["scalars"] for line in lines)
    refused = pytester.runpytest(spec, "--vl-step=5", "-p", "no:cacheprovider")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--vl-step: a checkpoint glob reads each checkpoint's step*"])


def test_trainer_checkpoint_folders_take_their_processor_from_a_base(
    pytester: pytest.Pytester,
) -> None:
    """An HF Trainer's ``checkpoint-N/`` holds the model only: ``#BASE`` names where the
    tokenizer and image processor come from; without it, one line says so."""
    from helpers.model_builders import build_hf_clip

    write_colour_squares(pytester.path)
    base = build_hf_clip(pytester.path / "base")
    for step in (500, 1500):
        folder = pytester.path / "out" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        for name in ("config.json", "model.safetensors"):
            shutil.copy(base / name, folder / name)
    common = ("--vl-report=rep", "--vl-no-cache", "--vl-device=cpu", "-p", "no:cacheprovider")
    result = pytester.runpytest(f"--vl-model=run=hf:out/checkpoint-*#{base}", *common)
    result.assert_outcomes(passed=2)
    matrix = json.loads((pytester.path / "rep" / "matrix.json").read_text())
    assert [(m["name"], m["step"]) for m in matrix["models"]] == [
        ("run@checkpoint-500", 500),
        ("run@checkpoint-1500", 1500),
    ]
    reference = pytester.runpytest(f"--vl-model=run=hf:{base}", "--vl-report=ref", *common[1:])
    reference.assert_outcomes(passed=1)
    same = json.loads((pytester.path / "ref" / "matrix.json").read_text())["results"][0]
    assert matrix["results"][0]["passed"] == same["passed"]

    processor_only = pytester.path / "processor"  # a processor's save_pretrained: no config
    processor_only.mkdir()
    for path in base.iterdir():
        if path.name not in ("config.json", "model.safetensors"):
            shutil.copy(path, processor_only / path.name)
    spec = "--vl-model=run=hf:out/checkpoint-*#./processor"
    pytester.runpytest(spec, "--vl-report=proc", *common[1:]).assert_outcomes(passed=2)
    scored = json.loads((pytester.path / "proc" / "matrix.json").read_text())["results"]
    assert [r["passed"] for r in scored] == [r["passed"] for r in matrix["results"]]

    bare = pytester.runpytest("--vl-model=hf:out/checkpoint-500", "-p", "no:cacheprovider")
    assert bare.ret != 0
    expected = "*checkpoint-500 has no tokenizer or image processor*e.g. hf:out/checkpoint-500#*"
    bare.stdout.fnmatch_lines([expected])
    assert "Traceback" not in bare.stdout.str() + bare.stderr.str()
