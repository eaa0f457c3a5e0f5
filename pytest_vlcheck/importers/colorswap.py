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

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    checklist,
    make_test,
    only_one_source,
    read_json_records,
)
from pytest_vlcheck.importers.winoground import GroupFields, add_criterion, group_examples

FIELDS = GroupFields(
    "id", ("image_1", "image_2"), ("caption_1", "caption_2"), ("image_source", "caption_source")
)


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over the file's records."""
    path = only_one_source(sources, "ColorSwap JSON file")
    examples = group_examples(path, read_json_records(path), FIELDS)
    test = make_test(
        "colorswap",
        "attribute/color_swap",
        "group",
        examples,
        threshold=args.threshold,
        criterion=args.criterion,
        description="ColorSwap: caption i (colours swapped between objects) must go with "
        f"image i both ways (passes on the {args.criterion} score)",
    )
    return [
        (
            None,
            checklist(
                "ColorSwap (Burapacheep et al. 2024): two images, two captions with the "
                "colours of two objects swapped.",
                [test],
            ),
        )
    ]


IMPORTER = Importer(
    "colorswap", "ColorSwap's JSON (group test, Winoground scores)", add_criterion, convert
)
