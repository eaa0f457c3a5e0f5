"""``tiny``'s trained ResNet as a teacher of stage 1's patch features.

``tiny`` (a CLIP ResNet trained on the same scenes at the same 96 px) knows shapes; a ViT
trained from scratch on the scene truth learns them late. Its feature maps after the third
and fourth stages (6 x 6 and 3 x 3 cells at 96 px) read each patch's shape well (a linear
probe: 84% of occupied patches' shapes, held out), so stage 1 also regresses them from the
tower's patch features (``pretrain.pretrain_tower``'s ``teacher``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

TEACHER_WIDTH = 256 + 512
"""Channels of the teacher's maps: the third stage's and the fourth's, side by side."""


def feature_maps(visual: Any, pixel_values: Any, grid: int) -> Any:
    """[n, grid * grid, TEACHER_WIDTH] of an open_clip ``ModifiedResNet`` (patches row-major,
    like the tower's): both stages' maps resized to ``grid`` cells (nearest: at 96 px and a
    6 x 6 grid the third stage's map is kept as it is, each fourth-stage cell covers 2 x 2)."""
    import torch
    import torch.nn.functional as F

    x = visual.layer2(visual.layer1(visual.stem(pixel_values)))
    third = visual.layer3(x)
    fourth = visual.layer4(third)
    maps = [F.interpolate(m, size=(grid, grid), mode="nearest") for m in (third, fourth)]
    return torch.cat(maps, dim=1).flatten(2).transpose(1, 2)


def teacher_targets(
    pixels: Callable[[Sequence[int]], Any], n: int, grid: int, n_train: int, batch: int = 250
) -> Any:
    """[n, 2, grid * grid, TEACHER_WIDTH] fp16 targets for scenes ``0..n-1`` (``pixels(idx)``
    their normalised pixel values): ``[:, 0]`` of the image, ``[:, 1]`` of its left-right
    mirror; each channel standardised by the first ``n_train`` scenes' mean and deviation.

    The fp32 maps are written into one tensor as they are computed: the same values and
    layout as concatenating the batches' maps (so the same statistics, to the bit), without
    holding both copies (20,000 scenes: 4.4 GB each)."""
    import torch

    from pytest_vlcheck.tiny import live_model

    visual = live_model()[0].visual.eval()
    maps = torch.empty(n, 2, grid * grid, TEACHER_WIDTH)
    with torch.no_grad():
        for start in range(0, n, batch):
            end = min(n, start + batch)
            px = pixels(range(start, end))
            maps[start:end, 0] = feature_maps(visual, px, grid)
            maps[start:end, 1] = feature_maps(visual, px.flip(-1), grid)
    seen = maps[:n_train].flatten(0, 2)
    mean, std = seen.mean(dim=0), seen.std(dim=0) + 1e-5
    return maps.sub_(mean).div_(std).half()
