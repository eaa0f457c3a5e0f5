"""The predicate-noun dependency set (Nikolaus et al. 2022): ``eval_set.json``.

Consecutive records are counter-balanced: record 2k is [I1, S1, S2] and record 2k+1 is
[I2, S2, S1]. Each such pair becomes one ``group`` example (images [I1, I2], captions
[S1, S2]); its ``text`` criterion is the paper's pair score (both triplets right), so the
test's pass rate is the paper's pair accuracy, and the engine's per-example accuracy is the
paper's triplet accuracy. ``--crop`` cuts each image to its target relationship's box (the
paper's cropped topline); the boxes are normalised [x, y, w, h].
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    is_finite_number,
    make_test,
    only_one_source,
    read_json,
    text_field,
)

# The set's ``pos`` names the word that differs; a different object changes the predicate
# (verb + object), a different subject changes the noun.
_DISTRACTOR = {"object": "predicate", "subject": "noun"}


def add_arguments(parser: Any) -> None:
    """Options: the cropped topline, the alternative sentence template, the criterion."""
    parser.add_argument(
        "--crop",
        action="store_true",
        default=False,
        help="predicate-noun: cut each image to its target relationship's "
        "box (the paper's cropped topline)",
    )
    parser.add_argument(
        "--alt-sentences",
        action="store_true",
        default=False,
        help="predicate-noun: use the alternative sentence template "
        "(sentence_*_alt, e.g. 'the man wears glasses')",
    )
    parser.add_argument(
        "--criterion",
        choices=("text", "image", "group"),
        default="text",
        help="predicate-noun, winoground: the group score a test passes on "
        "(default: text for predicate-noun, the paper's pair metric; "
        "group for winoground)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over all pairs of the file."""
    path = only_one_source(sources, "eval_set.json")
    data = read_json(path)
    if not isinstance(data, list):
        raise SourceError(path, "expected a JSON list of triplet records")
    records = [_record(path, index, raw) for index, raw in enumerate(data)]
    records.sort(key=lambda r: r["id"])
    if len(records) % 2:
        raise SourceError(
            path,
            f"{len(records)} records; the counter-balanced pairs need an even number",
            record=records[-1]["id"],
        )
    suffix = "_alt" if args.alt_sentences else ""
    examples = [
        _pair(path, records[i], records[i + 1], suffix, args.crop)
        for i in range(0, len(records), 2)
    ]
    crop = bool(args.crop)
    test = make_test(
        "predicate_noun_cropped" if crop else "predicate_noun",
        "relation/predicate_noun",
        "group",
        examples,
        threshold=args.threshold,
        settings={"criterion": args.criterion},
        description=(
            "Predicate-noun dependencies: both counter-balanced triplets of a pair must "
            "prefer their own sentence (pair accuracy; chance 25%)"
            + ("; images cropped to the target relationship (topline)" if crop else "")
        ),
    )
    return [
        (
            None,
            checklist(
                "Predicate-noun dependency set (Nikolaus et al. 2022), "
                "counter-balanced pairs of Open Images triplets.",
                [test],
            ),
        )
    ]


def _record(path: Path, index: int, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise SourceError(path, "expected a JSON object", record=f"#{index}")
    if "id" not in raw or isinstance(raw["id"], bool) or not isinstance(raw["id"], int):
        raise SourceError(
            path, f"missing or non-integer 'id': {raw.get('id')!r}", record=f"#{index}"
        )
    rid = raw["id"]
    pos = text_field(path, raw, "pos", rid)
    if pos not in _DISTRACTOR:
        raise SourceError(path, f"'pos' is {pos!r}; expected 'object' or 'subject'", record=rid)
    target = raw.get("relationship_target")
    box = target.get("bounding_box") if isinstance(target, Mapping) else None
    if not isinstance(box, list) or len(box) != 4 or not all(is_finite_number(v) for v in box):
        raise SourceError(
            path,
            f"relationship_target.bounding_box is {json.dumps(box)[:60]}; expected four finite "
            "numbers [x, y, w, h]",
            record=rid,
        )
    x, y, w, h = box
    if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > 1 + 1e-6 or y + h > 1 + 1e-6:
        raise SourceError(
            path,
            f"relationship_target.bounding_box {box} is not a normalised box inside [0, 1]",
            record=rid,
        )
    out = {
        "id": rid,
        "image": text_field(path, raw, "img_filename", rid),
        "pos": pos,
        "box": [x, y, w, h],
    }
    for key in ("sentence_target", "sentence_distractor"):
        out[key] = text_field(path, raw, key, rid)
        alt = key + "_alt"
        if alt in raw:
            out[alt] = text_field(path, raw, alt, rid)
    return out


def _pair(
    path: Path, first: dict[str, Any], second: dict[str, Any], suffix: str, crop: bool
) -> dict[str, Any]:
    pair_id = f"{first['id']}-{second['id']}"
    target, distractor = "sentence_target" + suffix, "sentence_distractor" + suffix
    for record in (first, second):
        if target not in record or distractor not in record:
            raise SourceError(
                path, f"missing field '{target}' or '{distractor}'", record=record["id"]
            )
    if second["id"] != first["id"] + 1:
        raise SourceError(
            path,
            f"records {first['id']} and {second['id']} would be paired; "
            "expected consecutive ids (a record is missing or repeated)",
            record=first["id"],
        )
    if first[target] != second[distractor] or first[distractor] != second[target]:
        raise SourceError(
            path,
            f"records {first['id']} and {second['id']} are not "
            f"counter-balanced: '{first[target]}' / '{first[distractor]}' vs "
            f"'{second[target]}' / '{second[distractor]}'",
            record=first["id"],
        )
    if first["pos"] != second["pos"]:
        raise SourceError(
            path, f"records {first['id']} and {second['id']} differ in 'pos'", record=first["id"]
        )
    images = [_image(first, crop), _image(second, crop)]
    return {
        "id": pair_id,
        "images": images,
        "captions": [first[target], second[target]],
        "tags": {"distractor": _DISTRACTOR[first["pos"]]},
    }


def _image(record: dict[str, Any], crop: bool) -> Any:
    if not crop:
        return record["image"]
    return {"path": record["image"], "crop_relative": record["box"]}


IMPORTER = Importer(
    "predicate-noun",
    "eval_set.json of the predicate-noun dependency set (group test of counter-balanced pairs)",
    add_arguments,
    convert,
)
