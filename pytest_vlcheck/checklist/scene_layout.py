"""Where the objects of a generated scene go: layouts for relations, counts and bins.

Placement is drawn from a ``random.Random`` seeded per candidate set, so the members of one
set (a scene and its perturbed variants) share their geometry wherever the perturbation
allows: a colour swap moves nothing, a relation change moves only what it must.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_vlcheck.checklist.generate_spec import Assignment, Plan, Retry
from pytest_vlcheck.images.scenes import COLORS, location_bin, object_box, size_bin

# Object side (fraction of canvas width) for the size *attribute* words of two-object scenes.
SIZE_WORD_RANGE = {"small": (0.1, 0.14), "big": (0.3, 0.38)}
# Side ranges that land in VL-CheckList's size bins on a square canvas (see scenes.size_bin:
# small <= 12.9 px, medium <= 38.8 px at 224); the bin is re-checked on the clipped box.
BIN_SIZE_RANGE = {"small": (0.042, 0.056), "medium": (0.07, 0.16), "large": (0.2, 0.4)}
COUNT_SIDE = (0.11, 0.15)
PAD = 0.025  # minimum gap between placed objects, fraction of the canvas
MIN_INSIDE_CONTRAST = 120  # RGB distance between a contained object and its container


def contrasting(slots: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a small object inside another stays visible: colours far apart in RGB."""
    (r1, g1, b1), (r2, g2, b2) = COLORS[slots[0]["color"]], COLORS[slots[1]["color"]]
    return (r1 - r2) ** 2 + (g1 - g2) ** 2 + (b1 - b2) ** 2 >= MIN_INSIDE_CONTRAST**2


def _overlaps(x: float, y: float, s: float, placed: list[tuple[float, float, float]]) -> bool:
    return any(
        abs(x - px) < (s + ps) / 2 + PAD and abs(y - py) < (s + ps) / 2 + PAD
        for px, py, ps in placed
    )


def _free_spot(
    side: float, placed: list[tuple[float, float, float]], rng: random.Random
) -> tuple[float, float]:
    half = side / 2
    for _ in range(200):
        x, y = rng.uniform(half + 0.01, 1 - half - 0.01), rng.uniform(half + 0.01, 1 - half - 0.01)
        if not _overlaps(x, y, side, placed):
            return x, y
    raise Retry


def _side(plan: Plan, slot: Mapping[str, Any], rng: random.Random) -> float:
    lo, hi = SIZE_WORD_RANGE[slot["size"]] if slot.get("size") else plan.object_size
    return rng.uniform(lo, hi)


def _obj(slot: Mapping[str, Any], x: float, y: float, side: float) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "shape": slot["shape"],
        "color": slot["color"],
        "size": round(side, 4),
        "position": [round(x, 4), round(y, 4)],
    }
    if slot.get("texture", "solid") != "solid":
        obj["texture"] = slot["texture"]
    if slot.get("state") == "hollow":
        obj["hollow"] = True
    return obj


def _stratified_spot(
    plan: Plan, targets: Mapping[str, str], rng: random.Random
) -> tuple[float, float, float]:
    """Side and centre for object a so its clipped box falls in the target bins."""
    canvas = (plan.canvas, plan.canvas)
    for _ in range(400):
        lo, hi = BIN_SIZE_RANGE[targets["size"]] if "size" in targets else plan.object_size
        side = rng.uniform(lo, hi)
        x, y = rng.uniform(0.0, 1.0), rng.uniform(0.0, 1.0)
        probe = {"size": round(side, 4), "position": [round(x, 4), round(y, 4)]}
        box = object_box(probe, canvas)
        full = max(1, round(side * plan.canvas)) ** 2
        if box[2] * box[3] < 0.8 * full:  # keep most of the object on the canvas
            continue
        if "location" in targets and location_bin(box, canvas) != targets["location"]:
            continue
        if "size" in targets and size_bin(box, canvas) != targets["size"]:
            continue
        return round(side, 4), round(x, 4), round(y, 4)
    raise Retry


def _relation_layout(
    plan: Plan, asg: Assignment, rng: random.Random
) -> list[tuple[int, float, float, float]]:
    """(slot index, x, y, side) for a and b so that 'a RELATION b' holds and no other does."""
    sa, sb = _side(plan, asg.slots[0], rng), _side(plan, asg.slots[1], rng)
    gap, along, jitter = rng.uniform(0.06, 0.18), rng.uniform(0.0, 1.0), rng.uniform(-0.02, 0.02)
    cross = rng.uniform(0.35, 0.65)
    if asg.relation == "inside":
        container = rng.uniform(0.5, 0.62)
        cx, cy = 0.5 + rng.uniform(-0.08, 0.08), 0.5 + rng.uniform(-0.08, 0.08)
        inner = container * 0.3
        shift = {"triangle": 0.14, "star": 0.05}.get(asg.slots[1]["shape"], 0.0) * container
        return [(1, cx, cy, container), (0, cx, cy + shift, inner)]
    first, second = (0, 1) if asg.relation in ("left", "above") else (1, 0)
    s1, s2 = (sa, sb) if first == 0 else (sb, sa)
    total = s1 + gap + s2
    start = 0.04 + along * max(0.0, 0.92 - total)
    p1, p2 = start + s1 / 2, start + s1 + gap + s2 / 2
    if p2 + s2 / 2 > 0.99:
        raise Retry
    if asg.relation in ("left", "right"):  # side by side, same height
        return [(first, p1, cross + jitter, s1), (second, p2, cross - jitter, s2)]
    return [(first, cross + jitter, p1, s1), (second, cross - jitter, p2, s2)]


def scene_for(
    plan: Plan,
    asg: Assignment,
    extras: Sequence[Mapping[str, Any]],
    background: str,
    targets: Mapping[str, str],
    geometry_seed: str,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The scene spec of an assignment, and object a's spec (for bins; None when counting)."""
    rng = random.Random(geometry_seed)
    objects: list[dict[str, Any]] = []
    placed: list[tuple[float, float, float]] = []
    target_obj: dict[str, Any] | None = None
    if asg.relation is not None:
        for i, x, y, side in _relation_layout(plan, asg, rng):
            objects.append(_obj(asg.slots[i], x, y, side))
            placed.append((x, y, side))
            if i == 0:
                target_obj = objects[-1]
    elif asg.count is not None:
        side = rng.uniform(*COUNT_SIDE)
        for _ in range(asg.count):
            x, y = _free_spot(side, placed, rng)
            objects.append(_obj(asg.slots[0], x, y, side))
            placed.append((x, y, side))
    else:
        for i, slot in enumerate(asg.slots):
            if i == 0 and targets:
                side, x, y = _stratified_spot(plan, targets, rng)
            else:
                side = _side(plan, slot, rng)
                x, y = _free_spot(side, placed, rng)
            if _overlaps(x, y, side, placed):
                raise Retry
            objects.append(_obj(slot, x, y, side))
            placed.append((x, y, side))
            if i == 0:
                target_obj = objects[-1]
    for extra in extras:
        side = rng.uniform(*COUNT_SIDE) if asg.count is not None else _side(plan, extra, rng)
        x, y = _free_spot(side, placed, rng)
        objects.append(_obj(extra, x, y, side))
        placed.append((x, y, side))
    spec = {"size": plan.canvas, "background": background, "objects": objects}
    return spec, target_obj
