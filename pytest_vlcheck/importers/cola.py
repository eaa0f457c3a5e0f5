"""COLA multi-object matching (Ray et al. 2023): ``COLA_multiobjects_matching_benchmark.json``,
a JSON list of ``[image 1, caption 1, image 2, caption 2]`` where the two captions swap the
attributes of their objects and caption i describes image i only.

One ``group`` test (Winoground's shape): text, image and group scores are all reported. The
authors' metric (``scripts/eval.py``, ``ColaMultiObjAcc``) is the image score alone, strict:
``s(img0, cap0) > s(img1, cap0) and s(img1, cap1) > s(img0, cap1)``, so the test passes on the
``image`` criterion by default. The images are links to Visual Genome / GQA images
(``https://cs-people.bu.edu/array/data/vg_gqa_images/ID.jpg``): kept as URLs, or with
``--images files`` as ``vg_gqa_images/ID.jpg`` under the image root (a local copy).
"""

from __future__ import annotations

import argparse
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    make_test,
    only_one_source,
    read_json_records,
)
from pytest_vlcheck.importers.winoground import GroupFields, group_examples

FIELDS = GroupFields(None, ("image_1", "image_2"), ("caption_1", "caption_2"))
ROW = ("image_1", "caption_1", "image_2", "caption_2")


def add_arguments(parser: Any) -> None:
    """The criterion (the authors': ``image``) and where the images are."""
    parser.add_argument("--criterion", choices=("text", "image", "group"), default="image")
    parser.add_argument(
        "--images",
        choices=("url", "files"),
        default="url",
        help="COLA: keep the images' links (url) or read vg_gqa_images/ID.jpg under the "
        "image root (files)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over the file's rows, ids their list positions."""
    path = only_one_source(sources, "COLA multi-object JSON file")
    records = [(line, key, _row(path, line, raw)) for line, key, raw in read_json_records(path)]
    examples = group_examples(path, records, FIELDS)
    for example in examples:
        example["images"] = [_image(image, args.images) for image in example["images"]]
    test = make_test(
        "cola-multi_object",
        "attribute/object_binding",
        "group",
        examples,
        threshold=args.threshold,
        settings={"criterion": args.criterion},
        description="COLA multi-object: each caption must pick its own image of the pair "
        f"(passes on the {args.criterion} score; the authors report the image score)",
    )
    return [
        (
            None,
            checklist(
                "COLA (Ray et al. 2023): pairs of images whose captions swap the attributes "
                "of their objects.",
                [test],
            ),
        )
    ]


def _row(path: Path, line: int, raw: Any) -> dict[str, Any]:
    """``[image 1, caption 1, image 2, caption 2]`` as a record of named fields."""
    if not isinstance(raw, list) or len(raw) != len(ROW):
        raise SourceError(
            path, "expected a list [image 1, caption 1, image 2, caption 2]", line=line
        )
    return dict(zip(ROW, raw, strict=True))


def _image(image: str, mode: str) -> str | dict[str, str]:
    """A link as a URL image, or its path after ``/data/`` as a file under the image root."""
    parts = urlsplit(image.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return image  # already a path: relative to the image root
    if mode == "url":
        return {"url": image.strip()}
    tail = PurePosixPath(parts.path)
    return str(PurePosixPath(*tail.parts[-2:])) if len(tail.parts) > 2 else tail.name


IMPORTER = Importer(
    "cola",
    "COLA's multi-object matching JSON (group test, passes on the image score)",
    add_arguments,
    convert,
)
