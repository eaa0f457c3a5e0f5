"""SugarCrepe: seven JSON sets, each a mapping id -> {filename, caption, negative_caption}.

One caption test per set; the capability comes from the set's name (``replace_att`` ->
``attribute/replace``). Images are COCO val2017 file names, kept as written.
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
    files_under,
    make_test,
    note_unwinnable,
    read_json,
    text_field,
)

CAPABILITIES = {
    "replace_obj": "object/replace",
    "replace_att": "attribute/replace",
    "replace_rel": "relation/replace",
    "swap_obj": "object/swap",
    "swap_att": "attribute/swap",
    "add_obj": "object/add",
    "add_att": "attribute/add",
}
_WHAT = {
    "replace": "one word replaced",
    "swap": "two words swapped",
    "add": "a word added",
    "obj": "object",
    "att": "attribute",
    "rel": "relation",
}


# Early releases of SugarCrepe named the object sets "entity" (replace_ent.json, ...).
_OLD_NAMES = {"replace_ent": "replace_obj", "swap_ent": "swap_obj", "add_ent": "add_obj"}


def add_arguments(parser: Any) -> None:
    """SugarCrepe has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per set file, in the order the sets are listed above."""
    files = files_under(sources, (".json",))
    tests_by_set: dict[str, dict[str, Any]] = {}
    seen: dict[str, Path] = {}
    for path in files:
        name = _OLD_NAMES.get(path.stem, path.stem)
        if name not in CAPABILITIES:
            raise SourceError(
                path,
                f"'{name}' is not a SugarCrepe set; expected a file "
                f"named one of: {', '.join(n + '.json' for n in CAPABILITIES)}",
            )
        if name in tests_by_set:
            raise SourceError(path, f"set '{name}' given twice (also as {seen[name]})")
        seen[name] = path
        tests_by_set[name] = _set_test(path, name, args.threshold)
    tests = [tests_by_set[name] for name in CAPABILITIES if name in tests_by_set]
    return [
        (
            None,
            checklist(
                "SugarCrepe (Hsieh et al. 2023): for each COCO image, the true "
                "caption must outscore a hard negative made by replacing, "
                "swapping or adding a word.",
                tests,
            ),
        )
    ]


def _set_test(path: Path, name: str, threshold: float | None) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise SourceError(path, "expected a JSON object mapping ids to records")
    examples = []
    for key, record in data.items():
        if not isinstance(record, Mapping):
            raise SourceError(
                path, "expected an object with filename, caption and negative_caption", record=key
            )
        examples.append(
            {
                "id": str(key),
                "image": text_field(path, record, "filename", key),
                "caption": text_field(path, record, "caption", key),
                "negatives": [text_field(path, record, "negative_caption", key)],
            }
        )
    if not examples:
        raise SourceError(path, "the set has no records")
    note_unwinnable(path, examples)
    return make_test(
        name,
        CAPABILITIES[name],
        "caption",
        examples,
        threshold=threshold,
        description=f"SugarCrepe {name}: negative caption with {describe_set(name)}",
    )


def describe_set(name: str) -> str:
    """``replace_att`` -> ``one word replaced (attribute)``."""
    action, part = name.split("_")
    return f"{_WHAT[action]} ({_WHAT[part]})"


IMPORTER = Importer(
    "sugarcrepe", "SugarCrepe's seven JSON sets (one test per set)", add_arguments, convert
)
