"""EqBen (Wang et al. 2023): a JSON list (or id -> record object) of ``{image0, image1,
caption0, caption1}``: two images with a minimal visual change and a caption for each.

Read as Winoground (``group`` test: text, image and group scores, a tie wrong); the image
fields are paths relative to the image root; a record's id is its list position (or key).
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

FIELDS = GroupFields(None, ("image0", "image1"), ("caption0", "caption1"))


SET = JsonGroupSet(
    "EqBen JSON file",
    FIELDS,
    "eqben",
    "scene/minimal_change",
    "EqBen: caption i must go with image i of a minimally changed pair, both ways",
    "EqBen (Wang et al. 2023): image pairs with a minimal semantic change and a caption for each.",
)


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over the file's records."""
    return json_group_test(sources, args, SET)


IMPORTER = Importer("eqben", "EqBen's JSON (group test, Winoground scores)", add_criterion, convert)
