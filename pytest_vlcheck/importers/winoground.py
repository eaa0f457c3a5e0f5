"""Winoground (Thrush et al. 2022): ``examples.jsonl``, two images and two captions made of the
same words in a different order.

Each line is one ``group`` example; the images are ``{image_0}.png`` and ``{image_1}.png``
(the dataset's ``images/`` folder is the image root). The tags (``tag``,
``secondary_tag``, ``collapsed_tag``, ``num_main_preds``) become slices. The test passes on
the group score by default; all three scores are reported whatever the criterion.

Other benchmarks of the same shape (ColorSwap, EqBen, VisMin) are a ``GroupFields`` mapping
of their own field names onto the same reading (``group_examples``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    make_test,
    only_one_source,
    read_json_records,
    read_jsonl,
    text_field,
)


@dataclass(frozen=True)
class GroupFields:
    """Where a two-images-two-captions record keeps each part: image i goes with caption i.

    ``id`` ``None``: the record's key or list position is its id. ``image_ext`` is appended
    to the image fields (Winoground writes bare names).
    """

    id: str | None
    images: tuple[str, str]
    captions: tuple[str, str]
    tags: tuple[str, ...] = ()
    image_ext: str = ""


WINOGROUND = GroupFields(
    "id",
    ("image_0", "image_1"),
    ("caption_0", "caption_1"),
    ("tag", "secondary_tag", "collapsed_tag", "num_main_preds"),
)


def add_arguments(parser: Any) -> None:
    """Options (shared with other formats, with Winoground's defaults): the criterion, the
    image extension."""
    add_criterion(parser)
    parser.add_argument("--image-ext", metavar="EXT", default=".png")


def add_criterion(parser: Any) -> None:
    """The score a group test passes on (every format of this shape takes it)."""
    parser.add_argument("--criterion", choices=("text", "image", "group"), default="group")


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test, one example per line."""
    path = only_one_source(sources, "examples.jsonl")
    ext = args.image_ext if args.image_ext.startswith(".") else "." + args.image_ext
    fields = GroupFields(
        WINOGROUND.id, WINOGROUND.images, WINOGROUND.captions, WINOGROUND.tags, ext
    )
    examples = group_examples(path, ((line, None, r) for line, r in read_jsonl(path)), fields)
    test = make_test(
        "winoground",
        "order/word_order",
        "group",
        examples,
        threshold=args.threshold,
        settings={"criterion": args.criterion},
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


def group_examples(
    path: Path, records: Iterable[tuple[int, str | int | None, Any]], fields: GroupFields
) -> list[dict[str, Any]]:
    """``group`` examples from ``(line, key, record)`` triples read by ``fields``; a bad or
    repeated id, a missing image or caption, a tag that is not one value are errors at the
    record's line."""
    examples = []
    seen: dict[str, int] = {}
    for line, key, record in records:
        if not isinstance(record, Mapping):
            raise SourceError(path, "expected a JSON object", line=line)
        raw_id = record.get(fields.id) if fields.id is not None else key
        if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
            raise SourceError(path, f"missing or invalid '{fields.id}': {raw_id!r}", line=line)
        example_id = str(raw_id).strip()
        if not example_id:
            raise SourceError(path, f"empty '{fields.id}'", line=line)
        if example_id in seen:
            raise SourceError(path, f"id {example_id} repeats line {seen[example_id]}", line=line)
        seen[example_id] = line
        images = [
            text_field(path, record, key, None, line=line) + fields.image_ext
            for key in fields.images
        ]
        captions = [text_field(path, record, key, None, line=line) for key in fields.captions]
        example: dict[str, Any] = {"id": example_id, "images": images, "captions": captions}
        tags = _tags(path, record, fields.tags, line)
        if tags:
            example["tags"] = tags
        examples.append(example)
    if not examples:
        raise SourceError(path, "no examples in the file")
    return examples


def _tags(
    path: Path, record: Mapping[str, Any], keys: tuple[str, ...], line: int
) -> dict[str, str]:
    tags = {}
    for key in keys:
        value = record.get(key)
        if isinstance(value, (list, dict)):
            raise SourceError(path, f"'{key}' must be a single value, got {value!r}", line=line)
        if value is not None and str(value).strip():
            tags[key] = str(value).strip()
    return tags


IMPORTER = Importer(
    "winoground", "Winoground's examples.jsonl (group test, slices by tag)", add_arguments, convert
)


@dataclass(frozen=True)
class JsonGroupSet:
    """A Winoground-style benchmark published as one JSON file of pairs (ColorSwap, EqBen):
    its record fields, and the test and checklist it becomes."""

    source: str
    fields: GroupFields
    test_id: str
    capability: str
    test_description: str
    checklist_description: str


def json_group_test(
    sources: list[Path], args: argparse.Namespace, kind: JsonGroupSet
) -> list[Output]:
    """One group test over the records of the one JSON file ``kind`` reads."""
    path = only_one_source(sources, kind.source)
    examples = group_examples(path, read_json_records(path), kind.fields)
    test = make_test(
        kind.test_id,
        kind.capability,
        "group",
        examples,
        threshold=args.threshold,
        settings={"criterion": args.criterion},
        description=f"{kind.test_description} (passes on the {args.criterion} score)",
    )
    return [(None, checklist(kind.checklist_description, [test]))]
