"""Compun (Kumar et al. 2024): a CSV of compound nouns and a naming convention for images.

Each compound noun ``cn`` is one ``image`` example: the text "a photo of a {cn}" must pick
``{cn}.jpg`` over the images of its two constituent nouns, ``{cn}_n1.jpg`` and
``{cn}_n2.jpg``. With ``--captions FILE`` (a JSON object mapping each compound noun to
example captions, as the paper's LLM produced them), the text becomes the paper's prompt
ensemble: one prompt per caption, "a photo of a {cn}. An example of {cn} in an image is
{caption}", and an image's score is its mean similarity to those prompts.
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
    read_csv,
    read_json,
)

_COLUMN = "compound noun"


def add_arguments(parser: Any) -> None:
    """Options: the example-captions file, the image extension."""
    parser.add_argument(
        "--captions",
        type=Path,
        metavar="FILE",
        help="compun: JSON object {compound noun: [caption, ...]}; each text "
        "becomes the paper's prompt ensemble",
    )
    parser.add_argument(
        "--image-ext",
        metavar="EXT",
        default=".jpg",
        help="compun, winoground: image file extension (default .jpg for "
        "compun, .png for winoground)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One image test with one example per compound noun."""
    path = only_one_source(sources, "Compun CSV")
    nouns = _read_nouns(path)
    captions = _read_captions(args.captions, nouns) if args.captions else None
    ext = args.image_ext if args.image_ext.startswith(".") else "." + args.image_ext
    examples = []
    for _line, noun in nouns:
        base = f"a photo of a {noun}"
        if captions is None:
            text: str | list[str] = base
        else:
            text = [f"{base}. An example of {noun} in an image is {c}" for c in captions[noun]]
        examples.append(
            {
                "id": noun,
                "text": text,
                "image": f"{noun}{ext}",
                "distractors": [f"{noun}_n1{ext}", f"{noun}_n2{ext}"],
            }
        )
    how = "the mean over example-caption prompts" if captions else "'a photo of a {cn}'"
    test = make_test(
        "compun_examples" if captions else "compun",
        "compound/noun",
        "image",
        examples,
        threshold=args.threshold,
        description=f"Compun: the compound noun's image must beat the images of "
        f"its two constituent nouns; text = {how} (chance 1/3)",
    )
    return [
        (
            None,
            checklist(
                "Compun (Kumar et al. 2024): text-to-image choice between a "
                "compound noun and its constituent nouns.",
                [test],
            ),
        )
    ]


def _read_nouns(path: Path) -> list[tuple[int, str]]:
    nouns: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    column: str | None = None
    for line, row in read_csv(path):
        if column is None:
            column = _noun_column(path, list(row))
        noun = (row.get(column) or "").strip()
        if not noun:
            continue
        if noun in seen:
            raise SourceError(path, f"compound noun '{noun}' repeats line {seen[noun]}", line=line)
        if "/" in noun or noun.startswith("."):
            raise SourceError(path, f"'{noun}' cannot name an image file", line=line)
        seen[noun] = line
        nouns.append((line, noun))
    if not nouns:
        raise SourceError(path, "no compound nouns in the file", line=1)
    return nouns


def _noun_column(path: Path, columns: list[str]) -> str:
    for name in columns:
        if name.strip().lower() == _COLUMN:
            return name
    if len(columns) == 1:
        return columns[0]
    raise SourceError(path, f"no 'Compound Noun' column among {columns}", line=1)


def _read_captions(path: Path, nouns: list[tuple[int, str]]) -> dict[str, list[str]]:
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise SourceError(path, "expected a JSON object mapping compound nouns to caption lists")
    folded = {str(k).strip().lower(): k for k in data}
    captions: dict[str, list[str]] = {}
    for _, noun in nouns:
        key = noun if noun in data else folded.get(noun.lower())
        if key is None:
            raise SourceError(path, f"no captions for the compound noun '{noun}'")
        value = data[key]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(c, str) and c.strip() for c in value)
        ):
            raise SourceError(
                path,
                f"captions of '{noun}' must be a non-empty list of non-empty strings",
                record=repr(key),
            )
        captions[noun] = [c.strip() for c in value]
    return captions


IMPORTER = Importer(
    "compun",
    "Compun's CSV of compound nouns (image test, optional prompt ensembles from example captions)",
    add_arguments,
    convert,
)
