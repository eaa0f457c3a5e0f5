"""VisMin (Awal et al. 2024): a CSV of ``image_path, caption, edited_image_path,
edited_caption, edit_id, category``: an image, an edit of it that changes one thing
(object, attribute, counting or spatial relation), and a caption for each.

Read as Winoground (``group`` test per category: text, image and group scores, a tie wrong),
as VisMin reports them per category; ``edit_id`` is the example id. Images are where the
authors' loader looks (``evals/dataset_zoo/dataset.py``, ``VisMin.load_dataset``): the
original under ``original_images/`` and the edit under ``edited_images/`` of the image root,
each path's leading ``/`` stripped.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    capability,
    capability_segment,
    checklist,
    make_test,
    only_one_source,
    read_csv,
    safe_test_id,
    text_field,
)
from pytest_vlcheck.importers.winoground import GroupFields, add_criterion, group_examples

IMAGE_FOLDERS = ("original_images", "edited_images")
"""The image root's folders of the originals and of the edits (the public release's layout)."""
FIELDS = GroupFields("edit_id", ("image_path", "edited_image_path"), ("caption", "edited_caption"))
CATEGORIES = {
    "object": "object/minimal_change",
    "attribute": "attribute/minimal_change",
    "counting": "counting/minimal_change",
    "relation": "relation/minimal_change",
}
"""VisMin's categories (its spatial-relation edits are ``relation``) -> capabilities; any
other category becomes ``<category>/minimal_change``."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test per category, in VisMin's order, then others alphabetically."""
    path = only_one_source(sources, "VisMin CSV file")
    rows = list(read_csv(path))
    examples = group_examples(path, ((line, None, row) for line, row in rows), FIELDS)
    for example in examples:
        example["images"] = [
            f"{folder}/{image.lstrip('/')}"
            for folder, image in zip(IMAGE_FOLDERS, example["images"], strict=True)
        ]
    by_category: dict[str, list[dict[str, Any]]] = {}
    for (line, row), example in zip(rows, examples, strict=True):
        category = text_field(path, row, "category", None, line=line).strip().lower()
        capability_segment(path, category, "category", line=line)
        by_category.setdefault(category, []).append(example)
    order = [c for c in CATEGORIES if c in by_category]
    order += sorted(c for c in by_category if c not in CATEGORIES)
    tests = [
        make_test(
            safe_test_id("vismin", category),
            CATEGORIES.get(category) or capability(category, "minimal_change"),
            "group",
            by_category[category],
            threshold=args.threshold,
            settings={"criterion": args.criterion},
            description=f"VisMin {category}: caption i must go with image i of the edited "
            f"pair, both ways (passes on the {args.criterion} score)",
        )
        for category in order
    ]
    return [
        (
            None,
            checklist(
                "VisMin (Awal et al. 2024): an image and a minimal edit of it (object, "
                "attribute, counting, spatial relation), a caption for each.",
                tests,
            ),
        )
    ]


IMPORTER = Importer("vismin", "VisMin's CSV (one group test per category)", add_criterion, convert)
