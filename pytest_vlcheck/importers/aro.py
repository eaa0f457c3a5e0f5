"""ARO (Yuksekgonul et al. 2023): VG-Relation, VG-Attribution, COCO-Order, Flickr-Order.

VG-Relation / VG-Attribution are JSON lists of ``{image_path, bbox_x, bbox_y, bbox_w,
bbox_h, true_caption, false_caption, relation_name | attributes}``; the image is cropped to
the box, as ARO does. COCO-Order / Flickr-Order pair an image with its caption and four
word-order shuffles of it: either given (``caption_options``, the true caption first) or made
here from the captions alone (the Karpathy-split JSON, ``{image, caption: [...]}``) with the
project's seeded shuffles, in ARO's order: nouns and adjectives, everything else, within
trigrams, trigrams. Captions are normalised the way ARO's loader does (lower case, the
characters ``.!"()*#:;~`` removed, at most 30 words).

The paper's VG-Relation and VG-Attribution figures are macro averages: the mean of the
per-relation (per-attribute-pair) accuracies. Each VG test declares that average (``macro:``
over its ``relation`` / ``attributes`` tag) as ARO's code computes it: VG-Relation without the
relations of the notebook's ``symmetric`` list (``SYMMETRIC_RELATIONS``), VG-Attribution over
the attribute pairs with at least 25 examples; the pass rate stays the micro average that
ARO's script prints.

ARO's own scoring of the Order sets picks the first maximum (``np.argmax``), which is the
true caption, so the Order tests are written with ``ties: first`` (a model that scores every
option the same gets 100%, as in ARO). On VG-Relation / VG-Attribution ARO lists the false
caption first, so a tie is a failure there, as under the default ``ties: fail``.
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    is_finite_number,
    make_test,
    note,
    note_unwinnable,
    read_json,
    text_field,
)

SETS = ("vg-relation", "vg-attribution", "coco-order", "flickr-order")
_CAPABILITY = {
    "vg-relation": "relation/swap",
    "vg-attribution": "attribute/swap",
    "coco-order": "order/shuffle",
    "flickr-order": "order/shuffle",
}
_DESCRIPTION = {
    "vg-relation": "ARO VG-Relation: the true relation must beat the one with subject and "
    "object swapped (image cropped to the relation's box)",
    "vg-attribution": "ARO VG-Attribution: the true attribute binding must beat the swapped "
    "one (image cropped to the objects' box)",
    "coco-order": "ARO COCO-Order: the caption must beat its four word-order shuffles",
    "flickr-order": "ARO Flickr-Order: the caption must beat its four word-order shuffles",
}
# The VG-Relation relations ARO's replication notebook leaves out of the macro average (its
# ``symmetric`` list: relations whose swapped caption may be just as true, plus a few
# others), in the notebook's order.
_SYMMETRIC_TEXT = (
    "adjusting, attached to, between, bigger than, biting, boarding, brushing, chewing, "
    "cleaning, climbing, close to, coming from, coming out of, contain, crossing, dragging, "
    "draped over, drinking, drinking from, driving, driving down, driving on, eating from, "
    "eating in, enclosing, exiting, facing, filled with, floating in, floating on, flying, "
    "flying above, flying in, flying over, flying through, full of, going down, going into, "
    "going through, grazing in, growing in, growing on, guiding, hanging from, hanging in, "
    "hanging off, hanging over, higher than, holding onto, hugging, in between, jumping off, "
    "jumping on, jumping over, kept in, larger than, leading, leaning over, leaving, "
    "licking, longer than, looking in, looking into, looking out, looking over, "
    "looking through, lying next to, lying on top of, making, mixed with, mounted on, "
    "moving, on the back of, on the edge of, on the front of, on the other side of, opening, "
    "painted on, parked at, parked beside, parked by, parked in, parked in front of, "
    "parked near, parked next to, perched on, petting, piled on, playing, playing in, "
    "playing on, playing with, pouring, reaching for, reading, reflected on, riding on, "
    "running in, running on, running through, seen through, sitting behind, sitting beside, "
    "sitting by, sitting in front of, sitting near, sitting next to, sitting under, "
    "skiing down, skiing on, sleeping in, sleeping on, smiling at, sniffing, splashing, "
    "sprinkled on, stacked on, standing against, standing around, standing behind, "
    "standing beside, standing in front of, standing near, standing next to, staring at, "
    "stuck in, surrounding, swimming in, swinging, talking to, topped with, touching, "
    "traveling down, traveling on, tying, typing on, underneath, wading in, waiting for, "
    "walking across, walking by, walking down, walking next to, walking through, working in, "
    "working on, worn on, wrapped around, wrapped in, by, of, near, next to, with, beside, "
    "on the side of, around"
)
SYMMETRIC_RELATIONS: tuple[str, ...] = tuple(_SYMMETRIC_TEXT.split(", "))
_MACRO: dict[str, dict[str, Any]] = {
    # ARO's notebook: the mean of per-relation accuracies over every relation but those listed
    "vg-relation": {"tag": "relation", "exclude": list(SYMMETRIC_RELATIONS)},
    # ARO's evaluate_scores: the mean over attribute pairs with at least 25 examples
    "vg-attribution": {"tag": "attributes", "min_count": 25},
}
SHUFFLE_ORDER = ("nouns_adjectives", "all_but_nouns_adjectives", "within_trigrams", "trigrams")
_STRIP = re.compile(r'[.!"()*#:;~]')
_SPACES = re.compile(r"\s+")


def add_arguments(parser: Any) -> None:
    """Options: which set a file is, the shuffle seed, caption normalisation."""
    parser.add_argument(
        "--set",
        dest="aro_set",
        choices=SETS,
        help="aro: the set of the (single) source file; by default it is told "
        "from the records (relation_name / attributes) and, for the "
        "Order sets, from 'coco' or 'flickr' in the file name",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="aro: seed of the word-order shuffles made for the Order sets (default 0)",
    )
    parser.add_argument(
        "--max-words",
        type=_positive,
        default=30,
        help="aro: captions are cut to this many words, as in ARO (default 30)",
    )
    parser.add_argument(
        "--no-normalize",
        action="store_true",
        default=False,
        help="aro: keep captions exactly as written (no lower-casing, punctuation removal or cut)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One caption test per source file."""
    files = files_under(sources, (".json",))
    if args.aro_set and len(files) != 1:
        raise SourceError(files[0], f"--set names the set of a single file; got {len(files)}")
    tests: dict[str, dict[str, Any]] = {}
    for path in files:
        data = read_json(path)
        if not isinstance(data, list) or not data:
            raise SourceError(path, "expected a non-empty JSON list of records")
        which = args.aro_set or _detect(path, data)
        test_id = which.replace("-", "_")
        if test_id in tests:
            raise SourceError(path, f"a second {which} file")
        if which.startswith("vg-"):
            examples = _vg_examples(path, data, which, args)
        else:
            examples = _order_examples(path, data, args)
        tests[test_id] = make_test(
            test_id,
            _CAPABILITY[which],
            "caption",
            examples,
            threshold=args.threshold,
            description=_DESCRIPTION[which],
        )
        if which in _MACRO:
            tests[test_id]["macro"] = _MACRO[which]
        else:
            tests[test_id]["ties"] = "first"
    ordered = [tests[s.replace("-", "_")] for s in SETS if s.replace("-", "_") in tests]
    return [
        (
            None,
            checklist(
                "ARO (Yuksekgonul et al. 2023): attribution, relation and word order.", ordered
            ),
        )
    ]


def _detect(path: Path, data: list[Any]) -> str:
    first = data[0]
    if isinstance(first, Mapping):
        if "relation_name" in first:
            return "vg-relation"
        if "attributes" in first:
            return "vg-attribution"
        if "caption" in first or "caption_options" in first:
            name = path.name.lower()
            if "coco" in name:
                return "coco-order"
            if "flickr" in name:
                return "flickr-order"
            raise SourceError(
                path,
                "an Order set, but the file name says neither coco nor "
                "flickr; pass --set coco-order or --set flickr-order",
            )
    raise SourceError(
        path,
        "cannot tell which ARO set this is (expected records with "
        "relation_name, attributes, caption or caption_options); pass --set",
        record=0,
    )


def normalize(caption: str, max_words: int) -> str:
    """ARO's caption clean-up: lower case, ``.!"()*#:;~`` become spaces, spaces collapse,
    at most ``max_words`` words."""
    words = _SPACES.sub(" ", _STRIP.sub(" ", caption.lower())).strip().split(" ")
    return " ".join(words[:max_words])


def _clean(caption: str, args: argparse.Namespace) -> str:
    return caption if args.no_normalize else normalize(caption, args.max_words)


def _vg_examples(
    path: Path, data: list[Any], which: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    examples = []
    clamped = skipped = 0
    for index, record in enumerate(data):
        if not isinstance(record, Mapping):
            raise SourceError(path, "expected a JSON object", record=index)
        box: list[float] = []
        for key in ("bbox_x", "bbox_y", "bbox_w", "bbox_h"):
            value = record.get(key)
            if not is_finite_number(value):
                raise SourceError(
                    path, f"'{key}' must be a finite number, got {value!r}", record=index
                )
            box.append(value)
        x, y, w, h = box
        if x < 0 or y < 0:
            clamped += 1
            w, h = w + min(x, 0), h + min(y, 0)
            x, y = max(x, 0), max(y, 0)
        if w <= 0 or h <= 0:
            skipped += 1
            continue
        true = _clean(text_field(path, record, "true_caption", index), args)
        false = _clean(text_field(path, record, "false_caption", index), args)
        if which == "vg-relation":
            tags = {"relation": text_field(path, record, "relation_name", index)}
        else:
            attributes = record.get("attributes")
            if (
                not isinstance(attributes, list)
                or not attributes
                or not all(isinstance(a, str) for a in attributes)
            ):
                raise SourceError(path, "'attributes' must be a list of strings", record=index)
            tags = {"attributes": "_".join(attributes)}
        examples.append(
            {
                "id": str(index),
                "image": {
                    "path": text_field(path, record, "image_path", index),
                    "crop": [x, y, w, h],
                },
                "caption": true,
                "negatives": [false],
                "tags": tags,
            }
        )
    note_unwinnable(path, examples)
    if clamped:
        note(f"{path}: {clamped} box(es) reaching outside the image were cut at 0")
    if skipped:
        note(f"{path}: skipped {skipped} record(s) with an empty box")
    return examples


def _order_examples(path: Path, data: list[Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    examples = []
    dropped = 0
    seen: dict[str, int] = {}
    for index, record in enumerate(data):
        if not isinstance(record, Mapping):
            raise SourceError(path, "expected a JSON object", record=index)
        image = text_field(path, record, "image", index)
        if "caption_options" in record:
            options = record["caption_options"]
            if (
                not isinstance(options, list)
                or len(options) < 2
                or not all(isinstance(c, str) and c.strip() for c in options)
            ):
                raise SourceError(
                    path,
                    "'caption_options' must list the true caption and at least one shuffle",
                    record=index,
                )
            example_id = str(record.get("id", index))
            cases = [(example_id, [_clean(c, args) for c in options])]
        else:
            captions = record.get("caption")
            captions = [captions] if isinstance(captions, str) else captions
            if (
                not isinstance(captions, list)
                or not captions
                or not all(isinstance(c, str) and c.strip() for c in captions)
            ):
                raise SourceError(
                    path, "'caption' must be a caption or a list of captions", record=index
                )
            cases = [
                (f"{index}.{number}", _shuffled(caption, args, f"{index}.{number}"))
                for number, caption in enumerate(captions)
            ]
        for example_id, (true, *shuffles) in cases:
            if example_id in seen:  # found here, not in the built checklist's line
                raise SourceError(
                    path, f"id {example_id!r} repeats record {seen[example_id]}", record=index
                )
            seen[example_id] = index
            negatives = [s for s in shuffles if s != true]
            dropped += len(shuffles) - len(negatives)
            if not negatives:
                continue
            examples.append(
                {"id": example_id, "image": image, "caption": true, "negatives": negatives}
            )
    if dropped:
        note(
            f"{path}: dropped {dropped} shuffle(s) identical to their caption (a caption "
            "too short or too repetitive to shuffle)"
        )
    if not examples:
        raise SourceError(path, "no captions with a usable shuffle")
    return examples


def _shuffled(caption: str, args: argparse.Namespace, example_id: str) -> list[str]:
    """The caption and its four shuffles, each drawn from its own seeded generator."""
    from pytest_vlcheck.checklist.perturbations import SHUFFLES

    base = caption if args.no_normalize else normalize(caption, 10**9)
    options = [_cut(base, args)]
    for name in SHUFFLE_ORDER:
        rng = random.Random(f"aro:{args.seed}:{example_id}:{name}")
        shuffled = SHUFFLES[name](base, rng)
        options.append(_cut(shuffled if shuffled is not None else base, args))
    return options


def _cut(caption: str, args: argparse.Namespace) -> str:
    return caption if args.no_normalize else " ".join(caption.split()[: args.max_words])


IMPORTER = Importer(
    "aro",
    "ARO's VG-Relation / VG-Attribution JSONs (cropped) and "
    "COCO-Order / Flickr-Order (caption + four shuffles)",
    add_arguments,
    convert,
)
