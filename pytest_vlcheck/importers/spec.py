"""SPEC (Peng et al. 2024, "Synthesize, Diagnose, and Optimize"): one folder per subset
(``absolute_size``, ``relative_size``, ``absolute_spatial``, ``relative_spatial``,
``existence``, ``count``), each with ``image2text.json`` and ``text2image.json``: lists of
``{query, keys, label}``, the query an image (I2T) or a text (T2I), ``keys`` the candidate
texts or images and ``label`` the index of the right one. Image paths are relative to their
subset's folder (``spec/dataset.py``: ``os.path.join(subset_root, ...)``), so the image root
is the folder that holds the subsets.

Two tests per subset: ``spec-SUBSET-i2t`` (``caption``) and ``spec-SUBSET-t2i`` (``image``).
The authors' metric (``spec/models/clip_wrapper.py``, ``i2t_evaluate`` / ``t2i_evaluate``) is
accuracy of ``argmax`` over the candidates in key order equal to ``label``: the first maximum
wins, so the tests say ``ties: order`` with each example's ``position`` its label. SPEC's code
reports I2T and T2I per subset and their means; it has no group score (the two files' queries
do not pair up), so none is made here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    capability,
    checklist,
    make_test,
    read_json_records,
    safe_test_id,
)

FILES = {"image2text.json": "i2t", "text2image.json": "t2i"}
CAPABILITIES = {
    "absolute_size": "size/absolute",
    "relative_size": "size/relative",
    "absolute_spatial": "relation/absolute_position",
    "relative_spatial": "relation/relative_position",
    "existence": "object/existence",
    "count": "counting/count",
}
"""SPEC's subsets -> capabilities; another subset folder becomes ``spec/SUBSET``."""


def add_arguments(parser: Any) -> None:
    """SPEC has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """Two tests per subset folder found under the sources, in SPEC's subset order."""
    subsets = _subsets(sources)
    tests = []
    for name in sorted(subsets, key=_order):
        folder = subsets[name]
        for file_name, direction in FILES.items():
            path = folder / file_name
            if not path.is_file():
                raise SourceError(folder, f"no {file_name} in this subset folder")
            tests.append(_test(name, direction, path, args.threshold))
    return [
        (
            None,
            checklist(
                "SPEC (Peng et al. 2024): synthetic images that differ in size, position, "
                "existence or count, matched image-to-text and text-to-image.",
                tests,
            ),
        )
    ]


def _order(name: str) -> tuple[int, str]:
    known = list(CAPABILITIES)
    return (known.index(name) if name in known else len(known), name)


def _subsets(sources: list[Path]) -> dict[str, Path]:
    """Subset name -> folder: a source holding the two files is a subset; otherwise its
    sub-folders that hold them are."""
    found: dict[str, Path] = {}
    for source in sources:
        if not source.is_dir():
            raise SourceError(source, "expected a SPEC data folder or one of its subset folders")
        folders = (
            [source] if _is_subset(source) else sorted(p for p in source.iterdir() if _is_subset(p))
        )
        if not folders:
            raise SourceError(source, "no subset folder (with image2text.json) here")
        for folder in folders:
            if folder.name in found:
                raise SourceError(folder, f"subset '{folder.name}' given twice")
            found[folder.name] = folder
    return found


def _is_subset(folder: Path) -> bool:
    return folder.is_dir() and any((folder / name).is_file() for name in FILES)


def _test(subset: str, direction: str, path: Path, threshold: float | None) -> dict[str, Any]:
    examples = [
        _example(path, subset, direction, line, key, raw)
        for line, key, raw in read_json_records(path)
    ]
    if not examples:
        raise SourceError(path, "no records in the file")
    what = (
        "the image must pick its caption" if direction == "i2t" else "the text must pick its image"
    )
    return make_test(
        safe_test_id("spec", subset, direction),
        CAPABILITIES.get(subset) or capability("spec", subset),
        "caption" if direction == "i2t" else "image",
        examples,
        threshold=threshold,
        settings={"ties": "order"},
        description=f"SPEC {subset} {direction.upper()}: {what} among the candidates "
        "(argmax in key order, the first maximum winning)",
    )


def _example(
    path: Path, subset: str, direction: str, line: int, key: str | int, raw: Any
) -> dict[str, Any]:
    """One record as a caption (I2T) or image (T2I) example; ``position`` its label."""
    if not isinstance(raw, dict):
        raise SourceError(path, "expected a JSON object {query, keys, label}", line=line)
    query, keys, label = raw.get("query"), raw.get("keys"), raw.get("label")
    if not isinstance(query, str) or not query.strip():
        raise SourceError(path, "'query' must be a non-empty string", line=line)
    if not (
        isinstance(keys, list)
        and len(keys) >= 2
        and all(isinstance(k, str) and k.strip() for k in keys)
    ):
        raise SourceError(path, "'keys' must be a list of two or more non-empty strings", line=line)
    if not (isinstance(label, int) and not isinstance(label, bool) and 0 <= label < len(keys)):
        raise SourceError(
            path,
            f"'label' is {str(label)[:40]}; expected an index 0-{len(keys) - 1} into 'keys'",
            line=line,
        )
    answer = int(label)
    others = keys[:answer] + keys[answer + 1 :]
    example: dict[str, Any] = {"id": str(key)}
    if direction == "i2t":
        example.update(image=f"{subset}/{query}", caption=keys[answer], negatives=others)
    else:
        example.update(
            text=query,
            image=f"{subset}/{keys[answer]}",
            distractors=[f"{subset}/{other}" for other in others],
        )
    if answer:
        example["position"] = answer
    return example


IMPORTER = Importer(
    "spec",
    "SPEC's subset folders (image-to-text and text-to-image tests per subset)",
    add_arguments,
    convert,
)
