"""The scripts beside the package still run: every benchmark and the tiny model's training
entry points, each at a few examples or steps, as a user would start them from the repository
root (each in a fresh process, forked from a server that has imported torch and open_clip
once: helpers/forked_scripts.py). They import the package's internals, so a move inside the
package that forgets them fails here rather than on the next person who measures something."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.forked_scripts import run_forked

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_ATTRIBUTE = ROOT / "checklists" / "attribute.yaml"
TINY_CONFIG = ROOT / "pytest_vlcheck" / "tiny" / "tiny.json"


def _run(target: str, args: list[str], logs: Path) -> str:
    return run_forked(target, args, cwd=ROOT, logs=logs / "logs", timeout=300)


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("engine_throughput.py", ["--examples", "12", "--batch-size", "8"], "examples/s"),
        ("large_suite_collection.py", ["--examples", "40", "--repeats", "1"], "jsonl"),
        (
            "scoring_throughput.py",
            [
                *("--examples", "12", "--images", "4", "--arch", "micro", "--repeats", "1"),
                *("--profile", "5"),
            ],
            "ordered by: cumulative",
        ),
        (
            "live_fingerprint.py",
            ["--repeat", "1", "--arch", str(TINY_CONFIG)],
            "sha256 of every byte",
        ),
        (
            "fixed_costs.py",
            ["--examples", "14", "--images", "4", "--arch", "micro", "--repeats", "1"],
            "rerun/empty",
        ),
        ("in_loop.py", ["--select", "color_image", "--repeats", "1"], "after update"),
        (
            "image_workers.py",
            ["--workers", "2", "--limit", "60", "--repeats", "1"],
            "2 worker processes",
        ),
        ("vqa_throughput.py", ["--pairs", "8", "--images", "2", "--repeats", "1"], "pairs/s"),
        ("text_only_baseline.py", [str(BUNDLED_ATTRIBUTE)], "attribute.yaml::"),
        (
            "xdist_agreement.py",
            ["--examples", "24", "--images", "6", "--tests", "2", "--workers", "2"],
            "verdict",
        ),
    ],
)
def test_each_benchmark_runs_at_a_small_size(
    script: str, args: list[str], expected: str, tmp_path: Path
) -> None:
    out = _run(str(ROOT / "benchmarks" / script), args, tmp_path)
    assert expected in out.lower()


def test_the_training_command_runs_a_few_steps(tmp_path: Path) -> None:
    _run(
        "-m tiny_training.train",
        [
            *("--steps", "2", "--batch-size", "4", "--eval-size", "1", "--bn-batches", "1"),
            *("--out", str(tmp_path)),
        ],
        tmp_path,
    )
    assert (tmp_path / "tiny.safetensors").stat().st_size > 0
    assert "| `steps` | 2 |" in (tmp_path / "TRAINING.md").read_text(encoding="utf-8")


def test_the_random_twin_command_writes_weights(tmp_path: Path) -> None:
    _run("-m tiny_training.random_twin", [str(tmp_path / "random.safetensors")], tmp_path)
    assert (tmp_path / "random.safetensors").stat().st_size > 1_000_000
