"""Size and power of the gate's paired tests when examples share an image, by simulation.

    python benchmarks/gate_calibration.py [--reps 1000] [--seed 0]

Each simulated item pairs a baseline run and a new run over K clusters (images) of m
examples (m uniform in 1-10, or fixed). An example changes (is lost or gained) with
probability 0.25; the direction is the cluster's own coin with probability rho and the
example's own coin otherwise, so directions are correlated within a cluster (rho 0:
independent; rho 1: a coin decides per image whether its examples may only get worse or
only improve). Under the null both coins are fair; under a consistent drop a change is a
loss with probability 0.5 + delta. Three tests, at alpha 0.05, two-sided:

- ``exact``: the exact McNemar mid-p on the lost and gained counts (the examples as
  independent; the gate with ``--vl-gate-clusters=off``).
- ``old``: the gate before issue 41: Durkalski et al.'s (2003) clustered McNemar,
  chi2 = (B - C)^2 / sum_k (b_k - c_k)^2 on 1 df, when two examples share a cluster, the
  exact mid-p otherwise.
- ``new``: ``metrics.clustered.paired_test``, the design-effect-adjusted mid-p, where an item
  with too few clusters (or every change in one) counts as not rejected.

Printed per setting: the share of items with p < 0.05 under the null (the size; 0.05 is
right) and under the drop (the power), each with its Monte Carlo standard error, then the
issue's fixed cases (a consistent 20-of-60 drop on 6 images, ...). Pure Python and numpy;
a few minutes on one core at the default 1000 repetitions.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_vlcheck.metrics.clustered import paired_test
from pytest_vlcheck.metrics.paired import mcnemar_midp

ALPHA = 0.05
CHANGE = 0.25


def durkalski(diffs: list[list[int]]) -> float:
    """The old gate's clustered McNemar p from each cluster's d_i (1 lost, -1 gained)."""
    sums = [sum(c) for c in diffs]
    total, spread = sum(sums), sum(s * s for s in sums)
    if total == 0 or spread == 0:
        return 1.0
    return math.erfc(math.sqrt(total * total / spread / 2))


def simulate(
    rng: np.random.Generator, sizes: list[int], rho: float, delta: float
) -> list[list[int]]:
    """Each cluster's d_i: 1 lost, -1 gained, 0 unchanged."""
    lost_p = 0.5 + delta
    clusters = []
    for m in sizes:
        shared = rng.random() < lost_p
        own = rng.random(m) < lost_p
        use_shared = rng.random(m) < rho
        changed = rng.random(m) < CHANGE
        lost = np.where(use_shared, shared, own)
        clusters.append([int(c) * (1 if x else -1) for c, x in zip(changed, lost, strict=True)])
    return clusters


def p_values(diffs: list[list[int]]) -> tuple[float, float, float]:
    """(exact, old, new) p for one simulated item."""
    lost = sum(d == 1 for c in diffs for d in c)
    gained = sum(d == -1 for c in diffs for d in c)
    exact = mcnemar_midp(lost, gained)
    shared = any(len(c) > 1 for c in diffs)
    old = durkalski(diffs) if shared else exact
    # outcomes that give these changes: before right unless gained, after right unless lost
    before, after, clusters = {}, {}, {}
    for k, cluster in enumerate(diffs):
        for j, d in enumerate(cluster):
            i = f"{k}-{j}"
            before[i], after[i], clusters[i] = d != -1, d != 1, str(k)
    new = paired_test(before, after, clusters).p
    return exact, old, new


def rates(rng: np.random.Generator, sizes_of, rho: float, delta: float, reps: int) -> list[float]:
    hits = np.zeros(3)
    for _ in range(reps):
        hits += np.array(p_values(simulate(rng, sizes_of(rng), rho, delta))) < ALPHA
    return list(hits / reps)


def cell(rate: float, reps: int) -> str:
    return f"{100 * rate:5.1f} ±{100 * math.sqrt(max(rate * (1 - rate), 1e-9) / reps):3.1f}"


def fixed_case(n: int, images: int, lost: set[int], gained: set[int]) -> tuple[float, ...]:
    diffs: list[list[int]] = [[] for _ in range(images)]
    for i in range(n):
        diffs[i % images].append(1 if i in lost else -1 if i in gained else 0)
    return p_values(diffs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    settings = []
    for k, delta in ((30, 0.2), (300, 0.07)):
        for rho in (0.0, 0.3, 0.7):
            settings.append((f"{k} x 1-10", rho, delta, lambda r, k=k: list(r.integers(1, 11, k))))
        settings.append((f"{k} x 1", 0.0, delta, lambda r, k=k: [1] * k))
    settings.append(("30 x 4", 1.0, 0.2, lambda r: [4] * 30))
    print(f"alpha {ALPHA}, {args.reps} items per cell, seed {args.seed}; % with p < alpha, ± s.e.")
    tests = ("exact", "old", "new")
    columns = [f"size {t}" for t in tests] + [f"power {t}" for t in tests]
    print("| clusters x size | rho | delta | " + " | ".join(columns) + " |")
    print("|" + "---|" * 9)
    for label, rho, delta, sizes_of in settings:
        null = rates(rng, sizes_of, rho, 0.0, args.reps)
        drop = rates(rng, sizes_of, rho, delta, args.reps)
        row = [label, f"{rho:g}", f"{delta:g}"]
        row += [cell(x, args.reps) for x in (*null, *drop)]
        print("| " + " | ".join(row) + " |")
    print()
    print("Fixed cases (p: exact, old, new):")
    cases = {
        "20 of 60 lost on 6 images (3-4 each)": (60, 6, set(range(20)), set()),
        "30 lost, 20 gained of 100 on 6 images": (100, 6, set(range(30)), set(range(30, 50))),
        "16 of 40 lost on one image": (40, 1, set(range(16)), set()),
        "4 of 40 lost, each on its own image of 6": (40, 6, {0, 1, 2, 3}, set()),
    }
    for name, case in cases.items():
        print(f"  {name}: " + ", ".join(f"{p:.3g}" for p in fixed_case(*case)))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
