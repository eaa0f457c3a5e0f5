"""ColorSwap (Burapacheep et al. 2024): a JSON list of ``{id, caption_1, caption_2, image_1,
image_2, ...}``; the two captions use the same words with the colours swapped between two
objects, and caption i describes image i.

Read as Winoground (``group`` test: text, image and group scores, a tie wrong); the image
fields are file names, relative to the image root. ``image_source`` and ``caption_source``,
when present, become slices.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_vlcheck.importers.common import Importer, Output
from pytest_vlcheck.importers.winoground import (
    GroupFields,
    JsonGroupSet,
    add_criterion,
    json_group_test,
)

FIELDS = GroupFields(
    "id", ("image_1", "image_2"), ("caption_1", "caption_2"), ("image_source", "caption_source")
)


SET = JsonGroupSet(
    "ColorSwap JSON file",
    FIELDS,
    "colorswap",
    "attribute/color_swap",
    "ColorSwap: caption i (colours swapped between objects) must go with image i both ways",
    "ColorSwap (Burapacheep et al. 2024): two images, two captions with the colours of two "
    "objects swapped.",
)


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over the file's records."""
    return json_group_test(sources, args, SET)


IMPORTER = Importer(
    "colorswap", "ColorSwap's JSON (group test, Winoground scores)", add_criterion, convert
)
