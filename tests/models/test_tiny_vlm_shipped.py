"""The shipped ``tiny-vlm``: it loads through its alias offline as any ``vqa:`` folder would,
reproduces the probe accuracies its ``TRAINING.md`` states, and behaves: a verdict flips when
its images are swapped, and a baseline gate fires when its weights are damaged."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.repo_pytest import REPO, repo_pytest

from pytest_vlcheck.checklist.bundled import GENERATIVE
from pytest_vlcheck.tiny import TINY_VLM_DIR, TINY_VLM_SPEC

MAX_WEIGHTS_BYTES = 5 * 1024 * 1024
LOG = TINY_VLM_DIR / "TRAINING.md"
PROBE_TOLERANCE = 0.02
"""How far a rerun of the probes may be from TRAINING.md's table (docs/models.md)."""
COLORS = ("red", "blue", "green", "yellow", "purple", "orange", "pink", "black")


def test_alias_is_vqa_on_the_shipped_folder() -> None:
    from pytest_vlcheck.models.registry import parse_specs

    (spec,) = parse_specs(["tiny-vlm"])
    assert (spec.name, f"{spec.scheme}:{spec.body}") == ("tiny-vlm", TINY_VLM_SPEC)
    assert (TINY_VLM_DIR / "model.safetensors").stat().st_size <= MAX_WEIGHTS_BYTES


def test_loads_offline_as_stock_llava_in_fp32_eval_mode() -> None:
    import torch

    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.models.registry import load_scorer, parse_specs

    scorer = load_scorer(parse_specs(["tiny-vlm"])[0], ModelOptions(device="cpu"))
    assert type(scorer.model).__name__ == "LlavaForConditionalGeneration"
    assert not scorer.model.training
    assert all(p.dtype == torch.float32 for p in scorer.model.parameters())


def test_the_probe_accuracies_in_training_md_are_reproduced() -> None:
    """The training command's probe stage, rerun on the shipped weights, gives TRAINING.md's
    table (within ``PROBE_TOLERANCE``: another BLAS may flip a near tie)."""
    import torch
    import transformers

    from tiny_training.vlm.probes import probe_questions, run_probes
    from tiny_training.vlm.questions import KINDS
    from tiny_training.vlm.report import probe_table
    from tiny_training.vlm.train import Settings, bundled_keys

    s = Settings()
    model = transformers.AutoModelForImageTextToText.from_pretrained(
        str(TINY_VLM_DIR), dtype=torch.float32
    )
    processor = transformers.AutoProcessor.from_pretrained(str(TINY_VLM_DIR))
    pool, asked = probe_questions(s.seed + 1, s.probe_size, bundled_keys())
    measured = {r.kind: r.accuracy for r in run_probes(model, processor, pool, asked)}
    stated = probe_table(LOG)
    assert set(stated) == set(measured) == set(KINDS)
    assert all(abs(measured[k] - stated[k]) <= PROBE_TOLERANCE for k in KINDS), (measured, stated)


def test_training_md_states_the_default_settings() -> None:
    from dataclasses import asdict

    from tiny_training.vlm.train import Settings

    text = LOG.read_text(encoding="utf-8")
    for key, value in asdict(Settings()).items():
        if key != "out":
            assert f"| `{key.replace('_', '-')}` | {value} |" in text, key


def _colour_checklist(path: Path, shift: int) -> Path:
    """Eight open colour questions about lone shapes, each asked of the scene ``shift`` places
    along (0: its own scene, whose colour is the answer)."""
    scenes = [
        {"objects": [{"shape": "circle", "color": c, "size": 0.35, "position": [0.5, 0.5]}]}
        for c in COLORS
    ]
    examples = [
        {
            "image": {"scene": scenes[(i + shift) % len(scenes)]},
            "question": "What color is the circle?",
            "answers": [color],
        }
        for i, color in enumerate(COLORS)
    ]
    test = {
        "id": "lone_color",
        "capability": "attribute/color",
        "task": "answer",
        "max_new_tokens": 4,
        "threshold": 0.75,
        "examples": examples,
    }
    path.write_text(yaml.safe_dump({"vlcheck": 1, "tests": [test]}), encoding="utf-8")
    return path


def test_a_colour_verdict_flips_when_the_images_are_swapped(tmp_path: Path) -> None:
    own = _colour_checklist(tmp_path / "own.yaml", 0)
    swapped = _colour_checklist(tmp_path / "swapped.yaml", 1)
    done = repo_pytest(
        "--vl-device=cpu", str(own), str(swapped), "--vl-model=tiny-vlm", f"--vl-report={tmp_path}"
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 passed, 1 failed" in out, out
    assert "FAILED" in out and "swapped.yaml::lone_color[tiny-vlm]" in out, out


def _damaged(folder: Path) -> Path:
    """A copy of the shipped folder with the projector's output zeroed: the image is gone."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(TINY_VLM_DIR, folder)
    weights = load_file(str(folder / "model.safetensors"))
    for name in weights:
        if "multi_modal_projector.linear_2" in name:
            weights[name].zero_()
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def test_a_baseline_gate_fires_after_the_weights_are_damaged(tmp_path: Path) -> None:
    from pytest_vlcheck import evaluate

    suite = REPO / GENERATIVE / "attribute.yaml"
    baseline = tmp_path / "baseline.json"
    kept = evaluate("ckpt=tiny-vlm", suite, select=["color"], save_baseline=str(baseline))
    assert kept.passed and not kept.regressions
    damaged = f"ckpt=vqa:{_damaged(tmp_path / 'damaged')}"
    gated = evaluate(damaged, suite, select=["color"], baseline=baseline)
    (regressed,) = gated.regressions
    assert (regressed.test, regressed.capability) == ("color", "attribute/color")
    assert regressed.pass_rate is not None and regressed.pass_rate <= 0.25


def test_vqascore_is_above_chance_on_a_clip_caption_test(tmp_path: Path) -> None:
    """The CLIP suite's existence captions ("a star" against a shape the scene lacks; the
    first 120 examples, chance 50%), scored by VQAScore through the alias. (Its colour and
    counting captions are at chance: docs/models.md.)"""
    from pytest_vlcheck import evaluate

    suite = yaml.safe_load((REPO / "checklists" / "object.yaml").read_text(encoding="utf-8"))
    (test,) = [t for t in suite["tests"] if t["id"] == "existence"]
    test["generate"]["n"] = 120
    path = tmp_path / "subset.yaml"
    path.write_text(yaml.safe_dump({"vlcheck": 1, "tests": [test]}), encoding="utf-8")
    (result,) = evaluate("tiny-vlm", path, device="cpu").results
    assert result.ci_low > 0.5, (result.passed, result.n)


@pytest.mark.parametrize("trained", [True, False])
def test_live_vlm_in_train_mode_scores_as_the_alias(trained: bool, tmp_path: Path) -> None:
    """``live_vlm()`` through ``evaluate`` gives the alias's pass rate; its untrained twin
    answers no colour."""
    from pytest_vlcheck import evaluate
    from pytest_vlcheck.tiny import live_vlm

    model, processor = live_vlm(trained=trained)
    assert model.training
    checklist = _colour_checklist(tmp_path / "own.yaml", 0)
    live = evaluate(model, checklist, preprocess=processor, name="live", device="cpu")
    assert model.training  # given back as it came
    if trained:
        spec = evaluate("tiny-vlm", checklist, device="cpu")
        assert live.results[0].pass_rate == spec.results[0].pass_rate >= 0.75
    else:
        assert live.results[0].pass_rate <= 0.25


def _readme_block(heading: str) -> tuple[str, str]:
    """(command, output): the first two fenced blocks under README's ``heading``."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    command, output = re.findall(r"```\n(.*?)\n```", section, re.S)[:2]
    return command, output


def _matrix(text: str) -> str:
    """The capability matrix and its summary lines, as pytest prints them."""
    start = text.index("=== vlcheck capability matrix ===")
    start = text.rfind("\n", 0, start) + 1
    end = text.index("\n", text.index("marks: ", start))
    return text[start:end]


def test_readme_shows_the_matrix_its_tiny_vlm_command_prints(tmp_path: Path) -> None:
    command, output = _readme_block("What the generative suite says about `tiny-vlm`")
    args = command.split()
    assert args[:2] == ["pytest", GENERATIVE] and "--vl-model=tiny-vlm" in args, args
    args = [a if not a.startswith("--vl-report=") else f"--vl-report={tmp_path}" for a in args]
    done = repo_pytest("--vl-device=cpu", *args[1:])
    assert done.returncode == 1, done.stdout + done.stderr
    assert _matrix(done.stdout) == _matrix(output)
