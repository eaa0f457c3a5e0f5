"""Winoground (Thrush et al. 2022): ``examples.jsonl``, two images and two captions made of the
same words in a different order.

Each line is one ``group`` example; the images are ``{image_0}.png`` and ``{image_1}.png``
(the dataset's ``images/`` folder is the image root). The tags (``tag``,
``secondary_tag``, ``collapsed_tag``, ``num_main_preds``) become slices. The test passes on
the group score by default; all three scores are reported whatever the criterion.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    make_test,
    only_one_source,
    read_jsonl,
    text_field,
)

_TAGS = ("tag", "secondary_tag", "collapsed_tag", "num_main_preds")


def add_arguments(parser: Any) -> None:
    """Options (shared with other formats, with Winoground's defaults): the criterion, the
    image extension."""
    parser.add_argument("--criterion", choices=("text", "image", "group"), default="group")
    parser.add_argument("--image-ext", metavar="EXT", default=".png")


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test, one example per line."""
    path = only_one_source(sources, "examples.jsonl")
    ext = args.image_ext if args.image_ext.startswith(".") else "." + args.image_ext
    examples = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path):
        if not isinstance(record, Mapping):
            raise SourceError(path, "expected a JSON object", line=line)
        raw_id = record.get("id")
        if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
            raise SourceError(path, f"missing or invalid 'id': {raw_id!r}", line=line)
        example_id = str(raw_id)
        if example_id in seen:
            raise SourceError(path, f"id {example_id} repeats line {seen[example_id]}", line=line)
        seen[example_id] = line
        images = [
            text_field(path, record, key, None, line=line) + ext for key in ("image_0", "image_1")
        ]
        captions = [
            text_field(path, record, key, None, line=line) for key in ("caption_0", "caption_1")
        ]
        tags = {}
        for key in _TAGS:
            value = record.get(key)
            if isinstance(value, (list, dict)):
                raise SourceError(path, f"'{key}' must be a single value, got {value!r}", line=line)
            if value is not None and str(value).strip():
                tags[key] = str(value).strip()
        example: dict[str, Any] = {"id": example_id, "images": images, "captions": captions}
        if tags:
            example["tags"] = tags
        examples.append(example)
    if not examples:
        raise SourceError(path, "no examples in the file")
    test = make_test(
        "winoground",
        "order/word_order",
        "group",
        examples,
        threshold=args.threshold,
        criterion=args.criterion,
        description="Winoground: caption i must go with image i both ways "
        f"(passes on the {args.criterion} score)",
    )
    return [
        (
            None,
            checklist(
                "Winoground (Thrush et al. 2022): pairs of images and captions "
                "with the same words in a different order.",
                [test],
            ),
        )
    ]


IMPORTER = Importer(
    "winoground", "Winoground's examples.jsonl (group test, slices by tag)", add_arguments, convert
)
