"""What the nesting bound costs the readers: baselines and JSONL examples, with and without it.

    python benchmarks/nesting_check.py --entries 2000 --outcomes 500 --lines 100000

Writes a baseline-shaped JSON document (``--entries`` entries of ``--outcomes`` example
outcomes each) and a JSONL examples file of ``--lines`` lines, then prints the best of three
for: parsing the document, the depth scan over it (``nesting.json_too_deep``, which a file
with more than 64 brackets cannot skip), and loading the JSONL examples (scanned per line).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_vlcheck.checklist.jsonl import load_jsonl_examples
from pytest_vlcheck.nesting import json_too_deep


def best_of_three(work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--outcomes", type=int, default=500)
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()
    entries = [
        {
            "file": "a.yaml",
            "test": f"t{j}",
            "numbers": {"n": args.outcomes},
            "outcomes": {f"e{i}": i % 2 == 0 for i in range(args.outcomes)},
        }
        for j in range(args.entries)
    ]
    text = json.dumps({"vlcheck_baseline": 1, "entries": entries}, indent=1)
    print(f"document: {len(text) / 1e6:.1f} MB")
    print(f"  json.loads      {best_of_three(lambda: json.loads(text)):.3f} s")
    print(f"  json_too_deep   {best_of_three(lambda: json_too_deep(text)):.3f} s")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "examples.jsonl"
        rows = (
            {"id": f"e{i}", "image": f"i{i}.png", "caption": f"c {i}", "negatives": [f"n{i}"]}
            for i in range(args.lines)
        )
        path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
        seconds = best_of_three(lambda: load_jsonl_examples(path))
        scan = best_of_three(lambda: [json_too_deep(line) for line in path.open()])
        print(f"jsonl: {args.lines} lines")
        print(f"  load_jsonl_examples  {seconds:.3f} s (of which the per-line scan {scan:.3f} s)")


if __name__ == "__main__":
    main()
