"""EqBen (Wang et al. 2023): a JSON list (or id -> record object) of ``{image0, image1,
caption0, caption1}``: two images with a minimal visual change and a caption for each.

Read as Winoground (``group`` test: text, image and group scores, a tie wrong); the image
fields are paths relative to the image root; a record's id is its list position (or key).
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

FIELDS = GroupFields(None, ("image0", "image1"), ("caption0", "caption1"))


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over the file's records."""
    path = only_one_source(sources, "EqBen JSON file")
    examples = group_examples(path, read_json_records(path), FIELDS)
    test = make_test(
        "eqben",
        "scene/minimal_change",
        "group",
        examples,
        threshold=args.threshold,
        criterion=args.criterion,
        description="EqBen: caption i must go with image i of a minimally changed pair, both "
        f"ways (passes on the {args.criterion} score)",
    )
    return [
        (
            None,
            checklist(
                "EqBen (Wang et al. 2023): image pairs with a minimal semantic change and "
                "a caption for each.",
                [test],
            ),
        )
    ]


IMPORTER = Importer("eqben", "EqBen's JSON (group test, Winoground scores)", add_criterion, convert)
