"""SugarCrepe++ (Dumpala et al. 2024): five JSON sets, each a list of {id, filename, caption,
caption2, negative_caption}; two captions that mean the same and one hard negative per COCO
val2017 image.

Two tests per set, as the paper scores them:
- ``<set>_itt`` (image-to-text): both true captions must outscore the negative on the image (a
  ``caption`` test with ``captions: [caption, caption2]``);
- ``<set>_tot`` (text-only): s(caption, caption2) must beat s(caption, negative) and
  s(caption2, negative) (a ``text`` test, ``symmetric: true``).
Both are strict. Degenerate records (a negative equal to a caption, two equal captions) stay,
as they are in the authors' denominators, and are listed in the import's notes.
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
    named_files,
    note,
    read_json_records,
    text_field,
)
from pytest_vlcheck.importers.sugarcrepe import CAPABILITIES, describe_set

SETS = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att")


def add_arguments(parser: Any) -> None:
    """SugarCrepe++ has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """Two tests per set file, the sets in the paper's order."""
    files = named_files(sources, ".json", SETS, "a SugarCrepe++ set")
    tests = [
        test for name in SETS if name in files for test in _set_tests(files[name], args.threshold)
    ]
    return [
        (
            None,
            checklist(
                "SugarCrepe++ (Dumpala et al. 2024): two captions that mean the same and a hard "
                "negative per COCO image, scored with the image (ITT) and as texts only (TOT).",
                tests,
            ),
        )
    ]


def _set_tests(path: Path, threshold: float | None) -> list[dict[str, Any]]:
    records = _records(path)
    name = path.stem
    capability, what = CAPABILITIES[name], describe_set(name)
    itt = [
        {
            "id": r["id"],
            "image": r["image"],
            "captions": [r["caption"], r["caption2"]],
            "negatives": [r["negative"]],
        }
        for r in records
    ]
    tot = [
        {
            "id": r["id"],
            "anchor": r["caption"],
            "positive": r["caption2"],
            "negatives": [r["negative"]],
        }
        for r in records
    ]
    return [
        make_test(
            f"{name}_itt",
            capability,
            "caption",
            itt,
            threshold=threshold,
            description=f"SugarCrepe++ {name} ITT: both captions must outscore the negative "
            f"({what}) on the image",
        ),
        make_test(
            f"{name}_tot",
            capability,
            "text",
            tot,
            threshold=threshold,
            description=f"SugarCrepe++ {name} TOT: the two captions must be nearer each other "
            f"than either is to the negative ({what}), as texts only",
            settings={"symmetric": True},
        ),
    ]


def _records(path: Path) -> list[dict[str, str]]:
    """Each record's id, image and texts; degenerate records are kept and noted."""
    out: list[dict[str, str]] = []
    ids: set[str] = set()
    degenerate = []
    for line, _, record in read_json_records(path):
        if not isinstance(record, Mapping):
            raise SourceError(
                path,
                "expected an object with id, filename, caption, caption2 and negative_caption",
                line=line,
            )
        key = record.get("id")
        if isinstance(key, bool) or not isinstance(key, (int, str)) or str(key).strip() == "":
            raise SourceError(path, f"'id' is {key!r}; expected a number or a text", line=line)
        fields = {
            name: text_field(path, record, source, None, line=line)
            for name, source in (
                ("image", "filename"),
                ("caption", "caption"),
                ("caption2", "caption2"),
                ("negative", "negative_caption"),
            )
        }
        if str(key) in ids:
            raise SourceError(path, f"id {key!r} repeats an earlier record", line=line)
        ids.add(str(key))
        out.append({"id": str(key), **fields})
        problem = _degenerate(fields)
        if problem:
            degenerate.append(f"id {key} ({problem})")
    if not out:
        raise SourceError(path, "the set has no records")
    if degenerate:
        note(
            f"{path}: {len(degenerate)} degenerate record(s), kept as the authors count them: "
            + "; ".join(degenerate)
        )
    return out


def _degenerate(record: Mapping[str, str]) -> str:
    """What makes a record unwinnable or trivial, or '' when nothing does."""
    problems = []
    if record["negative"] in (record["caption"], record["caption2"]):
        problems.append("a caption equals the negative: no model can pass it")
    if record["caption"] == record["caption2"]:
        problems.append("caption equals caption2: TOT is decided by the negative alone")
    return ", ".join(problems)


IMPORTER = Importer(
    "sugarcrepe-pp",
    "SugarCrepe++'s five JSON sets (an image-to-text and a text-only test per set)",
    add_arguments,
    convert,
)
