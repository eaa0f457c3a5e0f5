"""Every local file a model spec names is checked before torch is imported: a missing one
is a usage error in well under 3 s (exit 4 from pytest, ``SettingsError`` from ``evaluate``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_vlcheck.models.registry import parse_specs
from pytest_vlcheck.models.spec_files import SpecFileNotFoundError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("open_clip:cfg.json@ckpt.safetensors", "open_clip model config not found: cfg.json"),
        ("open_clip:present.json@ckpt.safetensors", "weights file not found: ckpt.safetensors"),
        ("open_clip:ViT-B-32@runs/ckpt.pt", "weights file not found: runs/ckpt.pt"),
        ("open_clip:local-dir:gone", "directory not found: gone"),
        ("hf:./out/checkpoint-5", "model directory not found: ./out/checkpoint-5"),
        ("hf:present#./gone/base", "#BASE directory not found: ./gone/base"),
        ("scores:gone.jsonl", "scores file not found (looked for "),
        ("scores:present", "scores file is a directory (looked for "),
    ],
)
def test_a_missing_local_file_is_named(
    spec: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "present.json").write_text("{}")
    (tmp_path / "present").mkdir()
    (tmp_path / "present" / "config.json").write_text("{}")
    with pytest.raises(SpecFileNotFoundError) as caught:
        parse_specs([spec])
    assert str(caught.value).startswith(f"{spec}: {message}")


def test_present_files_hub_names_and_tags_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.json").write_text("{}")
    (tmp_path / "w.safetensors").write_bytes(b"")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "checkpoint-5").mkdir()
    processor_only = tmp_path / "processor"  # what a processor's save_pretrained writes
    processor_only.mkdir()
    (processor_only / "preprocessor_config.json").write_text("{}")
    specs = [
        "tiny",
        "clip",
        "open_clip:cfg.json@w.safetensors",
        "hf:openai/clip-vit-base-patch32",
        "hf:run/checkpoint-*#./processor",
        "py:module:factory",
    ]
    assert len(parse_specs(specs)) == 6


RUN = """
import json, sys, time
import pytest
start = time.process_time()  # CPU seconds: what the check costs, whatever the load
code = pytest.main(["-q", "-p", "no:cacheprovider", "checks.yaml", sys.argv[1]])
pytest_seconds = time.process_time() - start
from pytest_vlcheck import SettingsError, evaluate
try:
    evaluate(sys.argv[1].split("=", 1)[1], "checks.yaml")
    raised = None
except SettingsError as error:
    raised = str(error)
print(json.dumps({"code": int(code), "seconds": pytest_seconds, "raised": raised,
                  "torch": [m for m in ("torch", "open_clip", "transformers") if m in sys.modules]}))
"""


def test_a_missing_weights_file_stops_the_run_in_seconds_without_torch(tmp_path: Path) -> None:
    (tmp_path / "checks.yaml").write_text(
        (ROOT / "checklists" / "counting.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "cfg.json").write_text(json.dumps({"embed_dim": 8}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    spec = "open_clip:cfg.json@ckpt.safetensors"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, f"--vl-model={spec}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    wall = time.perf_counter() - started
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["code"] == pytest.ExitCode.USAGE_ERROR
    assert out["torch"] == []
    assert out["seconds"] < 3.0, out
    assert wall < 60, wall  # the whole interpreter, on a shared 2-core machine
    expected = f"{spec}: weights file not found: ckpt.safetensors; expected an existing"
    assert f"ERROR: --vl-model: {expected}" in done.stderr
    assert out["raised"].startswith(f"model: {expected}")
