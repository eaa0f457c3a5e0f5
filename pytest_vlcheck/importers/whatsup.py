"""What'sUp (Kamath et al. 2023, "What's 'up' with vision-language models?"): spatial
prepositions on controlled photos and on COCO / Visual Genome crops.

- ``controlled_images_dataset.json`` (subset A) and ``controlled_clevr_dataset.json`` (B): a
  list of ``{image_path, caption_options}``, four captions with the true one first. The
  file name ``<obj1>_<preposition>_<obj2>.jpeg`` names the objects and the preposition
  (``left_of``, ``right_of``, ``on``, ``under`` in A; ``in-front_of``, ``behind`` and the
  same left/right in B). The authors' pair accuracy counts an object pair's two images of
  left/right (and of on/under in A, front/behind in B) right only when both are; set
  accuracy needs all four. Here: tags ``pair`` and ``set`` with ``all_of: [pair, set]``,
  and ``prepositions`` (``left-right``, ``on-under``, ``front-behind``), so the report gives
  pair accuracy per preposition group (``all_of_slices``; a set, holding two groups, counts
  under ``mixed``).
- ``coco_qa_{one,two}_obj.json`` and ``vg_qa_{one,two}_obj.json``: a list of
  ``[image_id, true caption, false caption]``; COCO images are ``val2017/{id:012d}.jpg``,
  Visual Genome's ``vg_images/{id}.jpg`` (the authors' layout under one data folder).

Correct when the argmax over the captions is the true one, ``np.argmax`` taking the first of
tied maxima: the tests say ``ties: first``. Accuracy per preposition is the ``preposition``
slice (the authors' per-preposition table).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    make_test,
    read_json_records,
)

CAPABILITY = "relation/spatial"
CONTROLLED = {
    "controlled_images_dataset": ("left_of", "right_of", "on", "under"),
    "controlled_clevr_dataset": ("left_of", "right_of", "in-front_of", "behind"),
}
"""The controlled subsets (A, B) and the prepositions their file names carry."""
PAIRS = {"left_of": "left-right", "right_of": "left-right", "on": "on-under",
         "under": "on-under", "in-front_of": "front-behind", "behind": "front-behind"}  # fmt: skip
Relations = tuple[tuple[tuple[str, str], ...], str]
"""A two-object subset's relation keys: (phrase, key) pairs checked in order, then the key of
every other caption."""
_COCO_TWO: Relations = ((("left of", "left"), ("right of", "right"), ("above", "above")), "below")
_VG_TWO: Relations = (
    (("left of", "left"), ("right of", "right"), ("front of", "front"), ("behind", "behind")),
    "top",
)
QA: dict[str, tuple[str, Relations | None]] = {
    "coco_qa_one_obj": ("val2017/{:012d}.jpg", None),
    "coco_qa_two_obj": ("val2017/{:012d}.jpg", _COCO_TWO),
    "vg_qa_one_obj": ("vg_images/{}.jpg", None),
    "vg_qa_two_obj": ("vg_images/{}.jpg", _VG_TWO),
}
"""The QA subsets: their image file pattern and, for two objects, the authors' relation
keys (phrase -> key, checked in order, and the key of every other caption)."""


def add_arguments(parser: Any) -> None:
    """What'sUp has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per file, named after it, in the order the subsets are listed above."""
    tests: dict[str, dict[str, Any]] = {}
    for path in files_under(sources, (".json",)):
        if path.stem in tests:
            raise SourceError(path, f"subset '{path.stem}' given twice")
        if path.stem in CONTROLLED:
            tests[path.stem] = _controlled_test(path, args.threshold)
        elif path.stem in QA:
            tests[path.stem] = _qa_test(path, args.threshold)
        else:
            known = ", ".join(f"{name}.json" for name in (*CONTROLLED, *QA))
            raise SourceError(path, f"not a What'sUp file; expected one of: {known}")
    ordered = [tests[name] for name in (*CONTROLLED, *QA) if name in tests]
    return [
        (
            None,
            checklist(
                "What'sUp (Kamath et al. 2023): spatial prepositions; the true caption must "
                "score highest among its alternatives (ties to the one listed first).",
                ordered,
            ),
        )
    ]


def _controlled_test(path: Path, threshold: float | None) -> dict[str, Any]:
    prepositions = CONTROLLED[path.stem]
    examples = []
    for line, key, record in read_json_records(path):
        if not isinstance(record, Mapping):
            raise SourceError(
                path, "expected an object with image_path and caption_options", line=line
            )
        image = record.get("image_path")
        options = record.get("caption_options")
        if not isinstance(image, str) or not image.strip():
            raise SourceError(path, "'image_path' must be a non-empty string", line=line)
        if not (isinstance(options, list) and len(options) >= 2 and all(
            isinstance(o, str) and o.strip() for o in options
        )):  # fmt: skip
            raise SourceError(
                path, "'caption_options' must be a list of captions, the true one first", line=line
            )
        first, preposition, second = _parse_name(path, line, image, prepositions)
        examples.append(
            {
                "id": str(key),
                "image": _last_two(image),
                "caption": options[0],
                "negatives": options[1:],
                "tags": {
                    "preposition": preposition,
                    "prepositions": PAIRS[preposition],
                    "pair": f"{first}|{second}|{PAIRS[preposition]}",
                    "set": f"{first}|{second}",
                },
            }
        )
    return _test(path, examples, threshold, all_of=["pair", "set"])


def _parse_name(path: Path, line: int, image: str, known: tuple[str, ...]) -> tuple[str, str, str]:
    """``mug_left_of_plate.jpeg`` -> (mug, left_of, plate), as the authors split it."""
    stem = PurePosixPath(image).name.rsplit(".", 1)[0]
    for preposition in sorted(known, key=len, reverse=True):
        first, sep, second = stem.partition(f"_{preposition}_")
        if sep and first and second:
            return first, preposition, second
    raise SourceError(
        path,
        f"image {image!r}: expected a file name <object>_<preposition>_<object>.jpeg with a "
        f"preposition of this subset: {', '.join(known)}",
        line=line,
    )


def _last_two(image: str) -> str:
    """``data/controlled_images/mug_left_of_plate.jpeg`` -> ``controlled_images/mug_...``:
    the subset's folder and the file, under the data folder given as ``--image-root``."""
    parts = PurePosixPath(image.replace("\\", "/")).parts
    return "/".join(parts[-2:])


def _qa_test(path: Path, threshold: float | None) -> dict[str, Any]:
    pattern, relations = QA[path.stem]
    examples = []
    for line, key, record in read_json_records(path):
        if not (
            isinstance(record, list)
            and len(record) == 3
            and isinstance(record[0], (int, str))
            and not isinstance(record[0], bool)
            and all(isinstance(t, str) and t.strip() for t in record[1:])
        ):
            raise SourceError(path, "expected [image_id, true caption, false caption]", line=line)
        image_id, true, false = record
        try:
            image = pattern.format(int(image_id) if "012d" in pattern else image_id)
        except ValueError:
            raise SourceError(path, f"image id {image_id!r} is not a number", line=line) from None
        examples.append(
            {
                "id": str(key),
                "image": image,
                "caption": true,
                "negatives": [false],
                "tags": {"preposition": _qa_preposition(true, relations)},
            }
        )
    return _test(path, examples, threshold)


def _qa_preposition(caption: str, relations: Relations | None) -> str:
    """The authors' per-preposition key: the caption's last word for one object, else the
    first relation phrase it contains (or the subset's remaining key)."""
    if relations is None:
        return caption.split()[-1]
    phrases, otherwise = relations
    return next((key for phrase, key in phrases if phrase in caption), otherwise)


def _test(
    path: Path,
    examples: list[dict[str, Any]],
    threshold: float | None,
    all_of: list[str] | None = None,
) -> dict[str, Any]:
    if not examples:
        raise SourceError(path, "the file has no records")
    return make_test(
        path.stem,
        CAPABILITY,
        "caption",
        examples,
        threshold=threshold,
        description=f"What'sUp {path.stem}: the true spatial caption must score highest",
        settings={"ties": "first", "all_of": all_of},
    )


IMPORTER = Importer(
    "whatsup",
    "What'sUp's controlled (A, B) and COCO/VG QA JSON files (one test per file)",
    add_arguments,
    convert,
)
