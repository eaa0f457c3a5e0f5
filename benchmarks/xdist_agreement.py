"""How far ``pytest -n N`` scores of a torch model are from a serial run's, and which verdicts
that can flip.

    python benchmarks/xdist_agreement.py                      # ~2 min on 2 CPUs
    python benchmarks/xdist_agreement.py --workers 4 --examples 4000 --images 800

Under xdist each worker scores only the items it runs, in its own batches, so an input meets
other batch neighbours than in a serial run; torch's CPU kernels may then round differently
in the last bits. This runs the same checklist (``--tests`` caption tests over one pool of
synthetic SugarCrepe-shaped examples, sharing images) serially and with ``-n N``, with the
embedding cache off, and compares the per-example scores of the two ``samples.jsonl`` files:
the largest score difference, the verdicts that differ, and how many examples have a margin
(true caption's score minus the best negative's, serial run) below the tolerance, i.e. could
flip at all. The model is the random ``small`` open_clip model of ``scoring_throughput``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from scoring_throughput import write_data, write_model

TOLERANCE = 1e-6


def write_suite(folder: Path, examples: int, images: int, tests: int, seed: int) -> Path:
    """``tests`` caption tests, each with its share of the examples in its own JSONL file."""
    write_data(folder, examples, images, seed)
    lines = (folder / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    entries = []
    for index in range(tests):
        name = f"part{index}.jsonl"
        (folder / name).write_text("\n".join(lines[index::tests]) + "\n", encoding="utf-8")
        entries.append(
            f"  - {{id: part{index}, capability: order/binding, task: caption,"
            f" threshold: 0.0, examples: {name}}}"
        )
    checklist = folder / "agreement.yaml"
    checklist.write_text("vlcheck: 1\ntests:\n" + "\n".join(entries) + "\n", encoding="utf-8")
    return checklist


def run(folder: Path, checklist: Path, spec: str, report: str, workers: int) -> dict:
    """One pytest run; its samples keyed by (test, example)."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        checklist.name,
        f"--vl-model=m={spec}",
        "--vl-no-cache",
        f"--vl-report={report}",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    if workers > 1:
        command += ["-n", str(workers)]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    samples = (folder / report / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    rows = (json.loads(line) for line in samples)
    return {(row["test"], row["example"]): row for row in rows}


def margin(scores: list[list[float]]) -> float:
    """The true caption's score minus the best negative's (one image per caption example)."""
    true, *negatives = scores[0]
    return true - max(negatives)


def compare(serial: dict, parallel: dict) -> None:
    """Print the largest difference, the differing verdicts and the near-tie count."""
    if serial.keys() != parallel.keys():
        raise SystemExit("the two runs scored different examples")
    largest = 0.0
    flipped = near = flipped_near = 0
    for key, row in serial.items():
        other = parallel[key]
        for mine, theirs in zip(row["scores"][0], other["scores"][0], strict=True):
            largest = max(largest, abs(mine - theirs))
        close = abs(margin(row["scores"])) < TOLERANCE
        near += close
        if row["correct"] != other["correct"]:
            flipped += 1
            flipped_near += close
    print(f"{len(serial)} examples; largest |score difference| {largest:.3g}")
    print(f"examples with |margin| < {TOLERANCE:g} in the serial run: {near}")
    print(
        f"verdicts that differ: {flipped} (of them with |margin| < {TOLERANCE:g}: {flipped_near})"
    )
    if largest > TOLERANCE or flipped != flipped_near:
        raise SystemExit("the -n run is outside the tolerance")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1200)
    parser.add_argument("--images", type=int, default=240)
    parser.add_argument("--tests", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vlcheck-xdist-") as tmp:
        folder = Path(tmp)
        checklist = write_suite(folder, args.examples, args.images, args.tests, args.seed)
        spec = write_model(folder, "small", args.seed)
        serial = run(folder, checklist, spec, "serial", 1)
        parallel = run(folder, checklist, spec, "parallel", args.workers)
        print(f"serial vs -n {args.workers}, {args.tests} tests, model small on cpu (fp32)")
        compare(serial, parallel)


if __name__ == "__main__":
    main()
