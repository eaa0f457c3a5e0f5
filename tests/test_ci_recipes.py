"""docs/ci.md's recipes parse, and the sharded GitHub workflow bootstraps: its shard and merge
commands, run in order as written (the model swapped for precomputed scores), first without a
baseline (the shards run ungated, the merge job writes the first ``baseline.json``), then
with it (every shard gated)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
SPEC = "ckpt=open_clip:cfg.json@ckpt.safetensors"


def _blocks() -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", PAGE, re.S)]


def test_every_recipe_parses() -> None:
    blocks = _blocks()
    assert len(blocks) >= 5 and all(isinstance(b, (dict, list)) for b in blocks)


def _workflow() -> dict[str, Any]:
    return next(b for b in _blocks() if isinstance(b, dict) and "shard" in b.get("jobs", {}))


def _runs(job: dict[str, Any]) -> list[str]:
    """The job's shell commands in order; installing is the environment's business here."""
    return [s["run"] for s in job["steps"] if "run" in s and not s["run"].startswith("pip ")]


def test_the_merge_and_checklist_jobs_install_no_model() -> None:
    merge = _workflow()["jobs"]["merge"]
    assert [s["run"] for s in merge["steps"] if str(s.get("run", "")).startswith("pip ")] == [
        "pip install -e ."
    ]
    checklists = next(
        b for b in _blocks() if isinstance(b, dict) and "checklists" in b.get("jobs", {})
    )
    installs = [s["run"] for s in checklists["jobs"]["checklists"]["steps"] if "run" in s]
    assert installs[0] == "pip install -e ." and "vlcheck validate checklists" in installs


def _checklist() -> str:
    lines = ["vlcheck: 1", "tests:"]
    for k in range(4):
        lines += [
            f"  - id: t{k}",
            f"    capability: object/t{k}",
            "    task: caption",
            "    threshold: 0.5",
            "    examples:",
        ]
        lines += [
            f"      - {{id: e{i}, image: i{k}.png, caption: c{i}, negatives: [n{i}]}}"
            for i in range(6)
        ]
    return "\n".join(lines) + "\n"


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }
    env.pop("CI", None)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _round(tmp_path: Path, shard_runs: list[str], merge_runs: list[str]) -> list[str]:
    """Every shard job's commands, then the merge job's; the shards' outputs."""
    outputs = []
    for k in range(1, 5):
        for run in shard_runs:
            done = _bash(run.replace("${{ matrix.shard }}", str(k)), tmp_path)
            assert done.returncode in (0, 1), done.stdout + done.stderr
            outputs.append(done.stdout)
    for run in merge_runs:
        done = _bash(run, tmp_path)
        assert done.returncode == 0, (run, done.stdout + done.stderr)
    for k in range(1, 5):
        shutil.rmtree(tmp_path / f"shard-{k}")
        (tmp_path / f"base-{k}.json").unlink()
    return outputs


def test_the_sharded_workflow_bootstraps_then_gates(tmp_path: Path) -> None:
    jobs = _workflow()["jobs"]
    shard_runs = [r.replace(SPEC, "ckpt=scores:s.jsonl") for r in _runs(jobs["shard"])]
    assert shard_runs and all("pytest checklists" in r for r in shard_runs)
    (tmp_path / "checklists").mkdir()
    (tmp_path / "checklists" / "suite.yaml").write_text(_checklist())
    rows = [
        {"image": f"i{k}.png", "text": text, "score": score}
        for k in range(4)
        for i in range(6)
        for text, score in ((f"c{i}", 0.6), (f"n{i}", 0.4 if i else 0.7))
    ]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = _round(tmp_path, shard_runs, _runs(jobs["merge"]))
    assert not any("vlcheck gate" in out for out in first)  # no baseline yet: ungated
    entries = json.loads((tmp_path / "baseline.json").read_text())["entries"]
    assert sorted(e["test"] for e in entries) == ["t0", "t1", "t2", "t3"]
    assert json.loads((tmp_path / "report" / "matrix.json").read_text())["results"]
    second = _round(tmp_path, shard_runs, _runs(jobs["merge"]))
    assert all("vlcheck gate" in out and "unchanged" in out for out in second)
