"""Checklists of N caption examples and ``scores:`` files that get exactly the chosen examples
wrong: a "checkpoint" whose verdicts are exact, for gate, shard and input-guard tests."""

from __future__ import annotations

import json

N = 60


def checklist(tests: dict[str, int]) -> str:
    """A checklist of caption tests, each with N examples (ids 0..N-1)."""
    lines = ["vlcheck: 1", "tests:"]
    for test_id, threshold_pct in tests.items():
        lines += [
            f"  - id: {test_id}",
            f"    capability: relation/{test_id}",
            "    task: caption",
            f"    threshold: {threshold_pct / 100}",
            "    examples:",
        ]
        lines += [
            f"      - {{id: '{i}', image: {test_id}{i}.png, caption: c{i}, negatives: [n{i}]}}"
            for i in range(N)
        ]
    return "\n".join(lines) + "\n"


def scores(path, wrong: dict[str, set[int]]) -> None:
    """A score file where test T gets exactly the examples in ``wrong[T]`` wrong."""
    records = []
    for test_id, bad in wrong.items():
        for i in range(N):
            true, negative = (0.4, 0.6) if i in bad else (0.6, 0.4)
            records.append({"image": f"{test_id}{i}.png", "text": f"c{i}", "score": true})
            records.append({"image": f"{test_id}{i}.png", "text": f"n{i}", "score": negative})
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
