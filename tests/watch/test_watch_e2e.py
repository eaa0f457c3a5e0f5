"""``vlcheck watch`` as a training job meets it: checkpoints dropped one by one into a folder
while the watcher runs, on ``tiny``'s weights. Each is evaluated once, when whole; the third
(its text projection replaced by noise) regresses against the second; a SIGKILL in the middle
of its evaluation and a restart finish it without evaluating the first two again; and the
curves equal a glob run's over the same checkpoints."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.forked_scripts import output, start_forked

from pytest_vlcheck import evaluate
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS
from pytest_vlcheck.watch.curves import render_csv, rows_of_matrix

ROOT = Path(__file__).resolve().parents[2]
CHECKLIST = """\
vlcheck: 1
description: one shape per scene, its colour named by the caption and replaced in the negative
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.5
    generate:
      n: 24
      seed: 201
      caption: ["a {a.color} {a.shape}"]
      negatives: [replace a.color]
"""
SPEC = f"run=open_clip:{TINY_CONFIG}@ck/epoch_*.safetensors"


def _perturbed(path: Path) -> None:
    """tiny with its text projection replaced by seeded noise of the same scale: colour
    words lose their meaning (24 of 24 right -> 14)."""
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(TINY_WEIGHTS))
    projection = weights["text_projection"].float()
    noise = torch.randn(projection.shape, generator=torch.Generator().manual_seed(0))
    weights["text_projection"] = (projection.std() * noise).to(weights["text_projection"].dtype)
    save_file(weights, str(path))


def _drop(source: Path, target: Path) -> None:
    """Write a checkpoint as a training job saving into the folder does: half first."""
    data = source.read_bytes()
    with target.open("wb") as stream:
        stream.write(data[: len(data) // 2])
        stream.flush()
        time.sleep(1.0)  # the watcher looks at it meanwhile: shorter than its header says
        stream.write(data[len(data) // 2 :])


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole at once: the watcher never reads half of it."""
    path.with_suffix(".tmp").write_text(text)
    os.replace(path.with_suffix(".tmp"), path)


def _state(folder: Path) -> dict[str, Any]:
    path = folder / "w" / "watch.json"
    return json.loads(path.read_text()) if path.exists() else {"checkpoints": []}


def _settled(folder: Path) -> list[str]:
    return [c["file"] for c in _state(folder)["checkpoints"]]


def _wait(process: BaseProcess, logs: Path, ready: Any) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        assert process.is_alive(), output(logs)
        assert time.monotonic() < deadline, "the watcher did not get there in 120 s"
        time.sleep(0.02)


def _watch(folder: Path, logs: Path, *extra: str) -> BaseProcess:
    """``python -m pytest_vlcheck.cli watch ...`` in ``folder``, in a process of its own
    (forked from the preloaded server: helpers/forked_scripts.py), its output in ``logs``."""
    options = ["--out", "w", "--poll", "0.05", "--device", "cpu", "--no-cache"]
    options += ["--log", "jsonl:log.jsonl", *extra]
    return start_forked(
        "-m pytest_vlcheck.cli",
        ["watch", SPEC, "checks.yaml", *options],
        folder,
        logs,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_checkpoints_dropped_while_watching_are_gated_once_and_resume_after_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    (tmp_path / "ck").mkdir()
    _perturbed(tmp_path / "perturbed.safetensors")
    logs = tmp_path / "logs"
    watcher = _watch(tmp_path, logs / "first")
    try:
        _drop(TINY_WEIGHTS, tmp_path / "ck" / "epoch_1.safetensors")
        _wait(watcher, logs / "first", lambda: len(_settled(tmp_path)) == 1)
        shutil.copy(TINY_WEIGHTS, tmp_path / "ck" / "epoch_2.tmp")
        os.replace(tmp_path / "ck" / "epoch_2.tmp", tmp_path / "ck" / "epoch_2.safetensors")
        _wait(watcher, logs / "first", lambda: len(_settled(tmp_path)) == 2)
        # epoch_3's evaluation reads a checklist of 2,400 scenes: it lasts far longer than any
        # pause of this process on a loaded machine, so the kill below lands inside it (the
        # restart reads the 24 again)
        _replace(tmp_path / "checks.yaml", CHECKLIST.replace("n: 24", "n: 2400"))
        _drop(tmp_path / "perturbed.safetensors", tmp_path / "ck" / "epoch_3.safetensors")
        _wait(
            watcher,
            logs / "first",
            lambda: _state(tmp_path).get("evaluating") == "ck/epoch_3.safetensors",
        )
        watcher.kill()  # SIGKILL
        watcher.join(60)
        first, _ = output(logs / "first")
    finally:
        if watcher.is_alive():
            watcher.kill()
    assert watcher.exitcode == -signal.SIGKILL
    assert _settled(tmp_path) == ["ck/epoch_1.safetensors", "ck/epoch_2.safetensors"]
    assert first.splitlines() == [
        "epoch_1.safetensors passed (no reference)",
        "epoch_2.safetensors passed against epoch_1.safetensors",
    ]

    _replace(tmp_path / "checks.yaml", CHECKLIST)
    restarted = _watch(tmp_path, logs / "second", "--idle-exit", "0.5")
    restarted.join(300)
    if restarted.is_alive():
        restarted.kill()
        restarted.join()
    second, errors = output(logs / "second")
    assert restarted.exitcode == 1, second + errors
    (line,) = second.splitlines()  # the first two are not evaluated again
    assert line.startswith(
        "epoch_3.safetensors regressed against epoch_2.safetensors: attribute/color (color) "
    ), line
    assert "ck/epoch_3.safetensors: its evaluation was interrupted" in errors
    assert _settled(tmp_path) == [f"ck/epoch_{i}.safetensors" for i in (1, 2, 3)]
    assert [c["outcome"] for c in _state(tmp_path)["checkpoints"]] == [
        "no reference",
        "passed",
        "regressed",
    ]

    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    rate = "vlcheck/attribute/color/color/pass_rate"
    points = {(point["step"], point["scalars"][rate]) for point in logged}
    assert points == {(1, 1.0), (2, 1.0), (3, 14 / 24)}  # each checkpoint's scalars at its step
    assert [point["step"] for point in logged][:2] == [1, 2]  # logged once each before the kill

    glob_run = evaluate(SPEC, "checks.yaml", report_dir="glob", no_cache=True, device="cpu")
    assert [r.pass_rate for r in glob_run.results][-1] == pytest.approx(14 / 24)
    matrix = json.loads((tmp_path / "glob" / "matrix.json").read_text())
    assert (tmp_path / "w" / "curves.csv").read_text() == render_csv(rows_of_matrix(matrix))
    checkpoint_report = json.loads((tmp_path / "w/checkpoints/run@epoch_3/matrix.json").read_text())
    (regressed,) = checkpoint_report["results"]
    assert regressed["gate"]["regressed"] and regressed["model"] == "run@epoch_3"


def test_a_checkpoint_that_does_not_load_is_one_warning_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole safetensors file that is not tiny's architecture: the watcher goes on."""
    from safetensors.numpy import save_file

    from pytest_vlcheck.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    (tmp_path / "ck").mkdir()
    save_file({"a": np.arange(4, dtype=np.float32)}, tmp_path / "ck" / "epoch_1.safetensors")
    args = ["watch", SPEC, "checks.yaml", "--out", "w", "--idle-exit", "0", "--device", "cpu"]
    assert main(args) == 0
    assert main(args) == 0  # restarted: not tried again
    captured = capsys.readouterr()
    assert captured.out == ""
    (warning,) = captured.err.splitlines()
    assert warning.startswith(
        "vlcheck watch: warning: ck/epoch_1.safetensors: cannot be read (cannot load model "
    )
    assert warning.endswith("expected weights saved from the same architecture); skipped")
    state = json.loads((tmp_path / "w" / "watch.json").read_text())
    assert [c["outcome"] for c in state["checkpoints"]] == ["corrupt"]
