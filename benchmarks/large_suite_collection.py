"""Time ``pytest --collect-only`` of one 100,000-example caption test, JSONL vs inline YAML.

    python benchmarks/large_suite_collection.py --examples 100000 --repeats 3

Writes the same SugarCrepe-shaped examples twice (``examples: big.jsonl`` beside a small
YAML, and all examples inline in the YAML), then runs ``pytest --collect-only -q`` on each in
a fresh subprocess, alternating, and prints the median wall time and the peak RSS of the
collecting process (``getrusage(RUSAGE_CHILDREN)``, measured in a wrapper process per run so
that runs do not mask each other) and its CPU time (user + system: on a shared machine, the
figure that load inflates least). With ``PYTHONDONTWRITEBYTECODE`` set, every run compiles
this package from source (and pytest rewrites the plugin's asserts): ``--bytecode`` lets the
runs write and reuse ``.pyc`` files, as an installed package has them.

Goals (issue 25, on a 2-core CPU machine): inline YAML under 5 s and 400 MB, JSONL under 2 s
and 250 MB. Before that work the same command measured 13-18 s and 670-720 MB for inline
YAML and 2.4-2.9 s and 226-242 MB for JSONL (``REFERENCE``); the output gives each median as
a ratio of those.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_vlcheck.checklist.writer import dump_checklist

WORDS = [
    "man",
    "woman",
    "dog",
    "cat",
    "red",
    "blue",
    "green",
    "small",
    "large",
    "wooden",
    "table",
    "chair",
    "street",
    "car",
]
REFERENCE = {"jsonl": (2.5, 233.0), "inline yaml": (14.7, 670.0)}
"""(median wall s, peak RSS MB) of 100,000 examples before issue 25's collection work."""
GOALS = {"jsonl": (2.0, 250.0), "inline yaml": (5.0, 400.0)}
HEADER = {"id": "big", "capability": "attribute/color", "task": "caption", "threshold": 0.5}

# Runs pytest in a child of this wrapper, so RUSAGE_CHILDREN is that one pytest's peak.
_WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(code, wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
"""


def examples(count: int, seed: int) -> list[dict[str, object]]:
    """SugarCrepe-shaped rows: a COCO-named image, a caption and one hard negative."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        words = rng.sample(WORDS, 6)
        caption = "a " + " ".join(words)
        negative = "a " + " ".join([*words[:4], words[5], words[4]])
        image = f"val2017/{rng.randrange(5000):012d}.jpg"
        rows.append({"id": str(index), "image": image, "caption": caption, "negatives": [negative]})
    return rows


def write_suites(folder: Path, rows: list[dict[str, object]]) -> tuple[Path, Path]:
    """``jsonl/checks.yaml`` + ``jsonl/big.jsonl``, and ``inline/checks.yaml``."""
    (folder / "jsonl").mkdir()
    (folder / "inline").mkdir()
    with (folder / "jsonl" / "big.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, separators=(",", ":")) + "\n")
    small = {"vlcheck": 1, "tests": [{**HEADER, "examples": "big.jsonl"}]}
    (folder / "jsonl" / "checks.yaml").write_text(dump_checklist(small), encoding="utf-8")
    inline = {"vlcheck": 1, "tests": [{**HEADER, "examples": rows}]}
    (folder / "inline" / "checks.yaml").write_text(dump_checklist(inline), encoding="utf-8")
    return folder / "jsonl" / "checks.yaml", folder / "inline" / "checks.yaml"


def collect_once(checklist: Path, bytecode: bool = False) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds) of one ``pytest --collect-only``."""
    command = [
        sys.executable,
        "-c",
        _WRAPPER,
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "--vl-model=tiny",
        str(checklist),
    ]
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run(
        command, cwd=checklist.parent, capture_output=True, text=True, check=True, env=env
    ).stdout
    code, wall, peak_kb, cpu = out.split()
    if code != "0":
        raise SystemExit(f"pytest --collect-only {checklist} exited with {code}")
    return float(wall), int(peak_kb) / 1024, float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-inline", action="store_true", help="time the JSONL form only")
    parser.add_argument("--bytecode", action="store_true", help="write and use .pyc files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, inline = write_suites(Path(tmp), examples(args.examples, args.seed))
        forms = {"jsonl": jsonl} if args.skip_inline else {"jsonl": jsonl, "inline yaml": inline}
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in forms}
        if args.bytecode:  # the .pyc files are written once, outside the timed runs
            collect_once(jsonl, bytecode=True)
        for _ in range(args.repeats):
            for name, path in forms.items():
                runs[name].append(collect_once(path, args.bytecode))
    load = os.getloadavg()[0]
    print(
        f"pytest --collect-only, {args.examples} caption examples, {args.repeats} runs each, "
        f"{'with' if args.bytecode else 'without'} .pyc files, load average {load:.2f} after"
    )
    header = f"{'form':<12} {'median wall':>12} {'CPU':>8} {'peak RSS':>10}"
    print(f"{header}   goal             vs before")
    for name, results in runs.items():
        wall = statistics.median(w for w, _, _ in results)
        cpu = statistics.median(c for _, _, c in results)
        peak = max(p for _, p, _ in results)
        goal_wall, goal_peak = GOALS[name]
        before_wall, before_peak = REFERENCE[name]
        print(
            f"{name:<12} {wall:>10.2f} s {cpu:>6.2f} s {peak:>7.0f} MB   "
            f"<{goal_wall:g} s, <{goal_peak:g} MB"
            f"   {wall / before_wall:.2f}x time, {peak / before_peak:.2f}x memory"
        )
    if args.examples != 100_000:
        print("(goals and 'vs before' are for --examples 100000)")
    if len(runs) == 2:
        ratio = statistics.median(w for w, _, _ in runs["inline yaml"]) / statistics.median(
            w for w, _, _ in runs["jsonl"]
        )
        print(f"inline yaml / jsonl wall: {ratio:.2f}x")


if __name__ == "__main__":
    main()
