"""Stage 1 of ``tiny-vlm``'s training: the vision tower alone learns the scenes' truth.

Trained from scratch *through* a randomly initialised decoder, the vision tower gets almost no
signal (the decoder first learns the answers' prior, blind to the image, and stays there). So
the tower is first taught, with small linear heads on the features the projector reads, what
the questions ask about:

- per scene (mean of the patch features): which colours and which colour-shape pairs are
  present, and for every shape whether it is there at least 1, 2, 3, 4 times;
- per patch: the colours and shapes of the objects whose centre lies in that patch, so that
  the features keep *where* things are (relations, and which colour belongs to which shape);
  and, as one choice among the shapes and "none", the shape centred there (a softmax over
  the shapes: the choice a shape question needs; with the binary targets alone, 1,500
  constant-lr steps left 2% of occupied patches wholly right).

And, given a teacher (``teacher.py``: ``tiny``'s trained ResNet, which knows shapes), its
feature maps per patch, regressed from the patch features by a linear map: with it, at 3,000
steps held-out per-patch shapes were 63% right and colours 73%, without it 57% and 63%.

Half of every batch is mirrored left-right (pixels and per-patch targets; every shape is
left-right symmetric, so the scene targets stand). The lr warms up linearly, then decays by a
cosine to a tenth: shapes are learnt late (held-out per-patch shape near chance for the first
500 steps), so the steps are many.

The heads are thrown away; the tower's weights are kept for stage 2 (``train.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_vlcheck.images.scenes import OBJECT_COLORS, SHAPES
from tiny_training.vlm.questions import shape_counts

COLORS = tuple(OBJECT_COLORS)
MAX_COUNT = 4
GLOBAL_TARGETS = len(COLORS) + len(COLORS) * len(SHAPES) + len(SHAPES) * MAX_COUNT
PATCH_TARGETS = len(COLORS) + len(SHAPES)
HELD_OUT = 256
SHAPE_CLASSES = 1 + len(SHAPES)
"""Per-patch shape choice: 0 no object centred there, 1 + the index in ``SHAPES`` otherwise."""


def scene_targets(scene: Mapping[str, Any], grid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(global [GLOBAL_TARGETS], per patch [grid * grid, PATCH_TARGETS]) 0/1 targets of a scene
    (patches in the vision tower's row-major order), and per patch the ``SHAPE_CLASSES`` class
    [grid * grid] (of the last object centred there: the one painted on top)."""
    objects = list(scene["objects"])
    whole = np.zeros(GLOBAL_TARGETS, dtype=np.float32)
    patches = np.zeros((grid * grid, PATCH_TARGETS), dtype=np.float32)
    shapes = np.zeros(grid * grid, dtype=np.int64)
    pairs = len(COLORS)
    counts = pairs + len(COLORS) * len(SHAPES)
    for o in objects:
        c, s = COLORS.index(o["color"]), SHAPES.index(o["shape"])
        whole[c] = 1
        whole[pairs + c * len(SHAPES) + s] = 1
        x, y = (min(grid - 1, max(0, int(float(v) * grid))) for v in o["position"])
        patches[y * grid + x, c] = 1
        patches[y * grid + x, len(COLORS) + s] = 1
        shapes[y * grid + x] = 1 + s
    for shape, n in shape_counts(objects).items():
        s = SHAPES.index(shape)
        whole[counts + s * MAX_COUNT : counts + s * MAX_COUNT + min(n, MAX_COUNT)] = 1
    return whole, patches, shapes


def trained_count(n: int, held_out: int = HELD_OUT) -> int:
    """How many of ``n`` scenes stage 1 trains on: all but the last ``held_out`` (at most a
    quarter), which it is measured on."""
    return n - min(held_out, n // 4)


def warmup_cosine(step: int, steps: int, warmup: int, peak: float) -> float:
    """The lr of ``step``: linear warm-up to ``peak``, then cosine decay to a tenth."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def mirrored(grid: int, *per_patch: Any) -> list[Any]:
    """Per-patch tensors [batch, grid * grid, ...] of left-right mirrored images."""
    return [
        t.unflatten(1, (grid, grid)).flip(2).flatten(1, 2)  # columns reversed in every row
        for t in per_patch
    ]


@dataclass(frozen=True)
class Accuracy:
    """Held-out accuracy of the stage-1 heads: exact-match rate of the scene's colour set,
    of its colour-shape pair set, of every shape's count (0-4+), and per-patch accuracy on
    patches that hold an object centre: all labels right, the colour labels right, and the
    patch's top-scoring shape one of its shapes (what a shape question needs)."""

    colors: float
    pairs: float
    counts: float
    patches: float
    patch_colors: float
    patch_shapes: float


def features(tower: Any, pixel_values: Any, layer: int) -> Any:
    """The patch features LLaVA's projector reads (hidden state ``layer``, CLS dropped)."""
    out = tower(pixel_values, output_hidden_states=True)
    return out.hidden_states[layer][:, 1:]


class Heads:
    """The linear heads: global on the mean patch feature, and per patch (the 0/1 targets, and
    the shape choice; and, given a teacher, its per-patch features)."""

    def __init__(self, width: int, teacher_width: int = 0) -> None:
        import torch

        self.whole = torch.nn.Linear(width, GLOBAL_TARGETS)
        self.patch = torch.nn.Linear(width, PATCH_TARGETS)
        self.shape = torch.nn.Linear(width, SHAPE_CLASSES)
        self.teacher = torch.nn.Linear(width, teacher_width) if teacher_width else None

    def parameters(self) -> list[Any]:
        found = [*self.whole.parameters(), *self.patch.parameters(), *self.shape.parameters()]
        return found + ([*self.teacher.parameters()] if self.teacher is not None else [])

    def logits(self, feats: Any) -> tuple[Any, Any, Any]:
        return self.whole(feats.mean(dim=1)), self.patch(feats), self.shape(feats)


def accuracy(whole: Any, patch: Any, shape: Any, t_whole: Any, t_patch: Any) -> Accuracy:
    """Exact-match rates of the logits' 0/1 decisions against the targets; a patch's shape is
    right when the shape choice's top class is one of the shapes centred there."""
    import torch

    pw, pp = (whole > 0).float(), (patch > 0).float()
    c, pairs = len(COLORS), len(COLORS) * len(SHAPES)
    ok = pw == t_whole
    counts = ok[:, c + pairs :].view(len(ok), len(SHAPES), MAX_COUNT).all(dim=-1)
    occupied = t_patch.sum(dim=-1) > 0
    top = shape.argmax(dim=-1, keepdim=True)
    held = torch.cat([torch.zeros_like(t_patch[..., :1]), t_patch[..., c:]], dim=-1)
    shape_right = held.gather(-1, top).squeeze(-1) > 0
    return Accuracy(
        float(ok[:, :c].all(dim=1).float().mean()),
        float(ok[:, c : c + pairs].all(dim=1).float().mean()),
        float(counts.float().mean()),
        float((pp == t_patch).all(dim=-1)[occupied].float().mean()),
        float((pp == t_patch)[..., :c].all(dim=-1)[occupied].float().mean()),
        float(shape_right[occupied].float().mean()),
    )


def pretrain_tower(
    tower: Any,
    pixels: Callable[[Sequence[int]], Any],
    scenes: Sequence[Mapping[str, Any]],
    steps: int,
    *,
    layer: int = -1,
    grid: int = 4,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    held_out: int = HELD_OUT,
    echo: Callable[[str], None] = print,
    log_every: int = 50,
    pos_weight: float = 1.0,
    warmup: int = 0,
    teacher: Any = None,
) -> tuple[list[float], Accuracy]:
    """Train ``tower`` (in place) on the scene targets of ``scenes``; ``pixels(indices)`` gives
    their normalised pixel values. The last ``held_out`` scenes (at most a quarter) are never
    trained on: the accuracy is theirs. ``pos_weight`` multiplies the loss of every positive
    target: almost all targets are 0 (most patches are empty), and unweighted the tower sits
    at the all-zero answer for hundreds of steps (the shape choice's "none" is weighted
    ``1 / pos_weight`` for the same reason). The lr warms up for ``warmup`` steps, then decays
    (``warmup_cosine``); a random half of every batch is mirrored left-right. ``teacher``
    ([len(scenes), 2, patches, width]: per scene, of the image and of its mirror; see
    ``teacher.teacher_targets``) adds the mean squared error of a linear map of the patch
    features to it."""
    import torch
    import torch.nn.functional as F

    targets = [scene_targets(s, grid) for s in scenes]
    t_whole = torch.from_numpy(np.stack([t[0] for t in targets]))
    t_patch = torch.from_numpy(np.stack([t[1] for t in targets]))
    t_shape = torch.from_numpy(np.stack([t[2] for t in targets]))
    n_train = trained_count(len(scenes), held_out)
    held = list(range(n_train, len(scenes)))
    weight = torch.tensor(pos_weight)
    class_weight = torch.tensor([1 / pos_weight] + [1.0] * len(SHAPES))
    heads = Heads(tower.config.hidden_size, 0 if teacher is None else teacher.shape[-1])
    optimizer = torch.optim.Adam([*tower.parameters(), *heads.parameters()], lr=lr)
    rng = np.random.default_rng(seed)
    losses: list[float] = []
    tower.train()
    for step in range(steps):
        idx = rng.choice(n_train, size=min(batch_size, n_train), replace=False)
        flip = torch.from_numpy(rng.random(len(idx)) < 0.5)
        px = pixels(idx)
        px = torch.where(flip.view(-1, 1, 1, 1), px.flip(-1), px)
        tp, ts = t_patch[idx], t_shape[idx]
        mp, ms = mirrored(grid, tp, ts)
        tp = torch.where(flip.view(-1, 1, 1), mp, tp)
        ts = torch.where(flip.view(-1, 1), ms, ts)
        for group in optimizer.param_groups:
            group["lr"] = warmup_cosine(step, steps, warmup, lr)
        feats = features(tower, px, layer)
        whole, patch, shape = heads.logits(feats)
        loss = (
            F.binary_cross_entropy_with_logits(whole, t_whole[idx], pos_weight=weight)
            + F.binary_cross_entropy_with_logits(patch, tp, pos_weight=weight)
            + F.cross_entropy(shape.flatten(0, 1), ts.flatten(), weight=class_weight)
        )
        if heads.teacher is not None:
            taught = teacher[torch.from_numpy(idx), flip.long()].float()
            loss = loss + F.mse_loss(heads.teacher(feats), taught)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if (step + 1) % log_every == 0:
            with torch.no_grad():
                w, p, sh = heads.logits(features(tower, pixels(held), layer))
            now = accuracy(w, p, sh, t_whole[held], t_patch[held])
            echo(f"stage 1 step {step + 1}/{steps} loss {np.mean(losses[-log_every:]):.4f} {now}")
    tower.eval()
    with torch.no_grad():
        whole, patch, shape = heads.logits(features(tower, pixels(held), layer))
    return losses, accuracy(whole, patch, shape, t_whole[held], t_patch[held])
