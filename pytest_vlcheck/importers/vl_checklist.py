"""VL-CheckList (Zhao et al.): JSON lists of ``[image, {"POS": [...], "NEG": [...]}]``.

Sources are data JSON files, the corpus YAML configs that point at them (``ANNO_PATH``,
``IMG_ROOT``), or directories holding either (a whole ``data/`` or ``corpus/v1/`` tree).
Each leaf file is one ``caption`` test; its capability comes from the taxonomy in the path:
Object location (center/mid/margin) and size (small/medium/large), Attribute (color,
material, size, state, action), Relation (action, spatial).

SWiG leaves carry several paraphrases: positive i goes with negative i, and each pair is an
example of its own (``--pairs first`` keeps only the first positive and the first negative of
each record, which is what VL-CheckList's own evaluator scores; the lists may then differ in
length). With ``--image-root`` the import counts the records whose image is missing, which
that evaluator drops silently. Image paths are written under the dataset folder
VL-CheckList's corpus configs use (``vg/``, ``swig/``, ``hake/``), so ``--image-root``
points at the folder holding those three, as in VL-CheckList's DATASETS.md.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    make_test,
    note,
    note_unwinnable,
    read_json,
    read_text,
    safe_test_id,
)

_ATTRIBUTES = ("color", "material", "size", "state", "action")
_RELATIONS = ("action", "spatial")
_BINS = {"location": ("center", "mid", "margin"), "size": ("small", "medium", "large")}
_IMAGE_FOLDERS = {"vg": "vg", "vaw": "vg", "swig": "swig", "hake": "hake"}
_CATEGORIES = ("object", "attribute", "relation")
_CAPABILITY = re.compile(r"[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*")


@dataclass(frozen=True)
class _Leaf:
    """One annotation file to import, with what its location says about it."""

    capability: str
    source: str
    data: Path
    image_prefix: str
    origin: Path


def add_arguments(parser: Any) -> None:
    """Options: split output, paraphrase handling, missing data, path prefixes, capability."""
    parser.add_argument(
        "--split",
        action="store_true",
        default=False,
        help="vl-checklist: one checklist per leaf; -o names a directory "
        "and each file is named after its test id",
    )
    parser.add_argument(
        "--pairs",
        choices=("all", "first"),
        default="all",
        help="vl-checklist: 'all' makes every pair (positive i with negative i, SWiG's "
        "paraphrases) an example; 'first' only the first positive with the first "
        "negative of each record, as VL-CheckList's evaluator scores (default all)",
    )
    parser.add_argument(
        "--skip-missing",
        action="store_true",
        default=False,
        help="vl-checklist: skip corpus YAMLs whose ANNO_PATH file is absent instead of failing",
    )
    parser.add_argument(
        "--keep-paths",
        action="store_true",
        default=False,
        help="vl-checklist: write image paths exactly as in the JSON, without "
        "the dataset folder (vg/, swig/, hake/)",
    )
    parser.add_argument(
        "--capability",
        metavar="CAP",
        help="vl-checklist: capability of a single JSON file whose path does "
        "not follow VL-CheckList's data tree (e.g. attribute/color)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per leaf, in one document or (``--split``) one document each."""
    leaves = _leaves(sources, args)
    tests = []
    seen: dict[str, Path] = {}
    for leaf in leaves:
        test = _leaf_test(leaf, args)
        if test["id"] in seen:
            raise SourceError(
                leaf.origin, f"gives test id '{test['id']}' again (first from {seen[test['id']]})"
            )
        seen[test["id"]] = leaf.origin
        tests.append(test)
    description = (
        "VL-CheckList (Zhao et al.): the true text must outscore a negative that "
        "changes one object, attribute or relation."
    )
    if args.split:
        return [(test["id"], checklist(description, [test])) for test in tests]
    return [(None, checklist(description, tests))]


def _leaves(sources: list[Path], args: argparse.Namespace) -> list[_Leaf]:
    files = files_under(sources, (".json", ".yaml", ".yml"))
    configs = [f for f in files if f.suffix.lower() in (".yaml", ".yml")]
    data_files = [f for f in files if f.suffix.lower() == ".json"]
    if args.capability and len(files) != 1:
        raise SourceError(
            sources[0], f"--capability applies to a single file; got {len(files)} files"
        )
    if args.capability and not _CAPABILITY.fullmatch(args.capability):
        raise SourceError(
            sources[0],
            f"--capability '{args.capability}' must be lowercase "
            "segments joined by '/', e.g. attribute/color",
        )
    leaves: list[_Leaf] = []
    skipped = 0
    for config in configs:
        leaf = _config_leaf(config, args)
        if leaf is None:
            skipped += 1
        else:
            leaves.append(leaf)
    if skipped:
        note(f"skipped {skipped} corpus config(s) whose data file is absent (--skip-missing)")
    covered = {leaf.data.resolve() for leaf in leaves}
    for data in data_files:
        if data.resolve() in covered:
            continue
        leaves.append(_data_leaf(data, args))
    if not leaves:
        raise SourceError(sources[0], "nothing to import")
    return sorted(leaves, key=lambda leaf: (leaf.capability, leaf.source))


def _config_leaf(path: Path, args: argparse.Namespace) -> _Leaf | None:
    try:
        config = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SourceError(
            path,
            f"invalid YAML: {getattr(exc, 'problem', exc)}",
            line=mark.line + 1 if mark else None,
        ) from None
    if not isinstance(config, Mapping) or not isinstance(config.get("ANNO_PATH"), str):
        raise SourceError(
            path, "not a VL-CheckList corpus config: expected ANNO_PATH and IMG_ROOT", line=1
        )
    anno = config["ANNO_PATH"]
    data = _find_annotations(path, anno)
    if data is None:
        if args.skip_missing:
            return None
        raise SourceError(
            path,
            f"ANNO_PATH '{anno}' not found next to this config or in any "
            "folder above it (pass --skip-missing to skip such configs)",
            line=1,
        )
    if args.capability:
        cap, source = args.capability, path.stem
    else:
        cap, source = _config_taxonomy(path)
    img_root = str(config.get("IMG_ROOT") or "").strip().strip("/")
    prefix = "" if args.keep_paths or not img_root else img_root + "/"
    return _Leaf(cap, source, data, prefix, path)


def _find_annotations(config: Path, anno: str) -> Path | None:
    """ANNO_PATH is relative to VL-CheckList's checkout: look in each folder above."""
    for folder in (config.parent, *config.resolve().parents, Path.cwd()):
        candidate = folder / anno
        if candidate.is_file():
            return candidate
    return None


def _data_leaf(path: Path, args: argparse.Namespace) -> _Leaf:
    if args.capability:
        cap, source = args.capability, path.stem
    else:
        cap, source = _data_taxonomy(path)
    folder = _IMAGE_FOLDERS.get(source.split("_")[0], "")
    prefix = "" if args.keep_paths or not folder else folder + "/"
    return _Leaf(cap, source, path, prefix, path)


def _category(path: Path) -> tuple[str, list[str]]:
    """The taxonomy category in ``path`` and the path parts below it."""
    parts = list(path.parts)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index].lower() in _CATEGORIES:
            return parts[index].lower(), parts[index + 1 :]
    raise SourceError(
        path,
        "cannot tell the capability: the path has no Object, Attribute or "
        "Relation folder (pass --capability)",
    )


def _config_taxonomy(path: Path) -> tuple[str, str]:
    """corpus/v1/Attribute/color/vg.yaml, .../Object/Location/center/hake.yaml."""
    category, rest = _category(path)
    names = [p.lower() for p in rest[:-1]]
    source = path.stem
    if category == "object" and len(names) == 2:
        return _object_capability(path, names[0], names[1]), source
    if category in ("attribute", "relation") and len(names) == 1:
        return _leaf_capability(path, category, names[0]), source
    raise SourceError(path, f"unexpected place in the corpus tree: {'/'.join(rest)}")


def _data_taxonomy(path: Path) -> tuple[str, str]:
    """data/Attribute/vg/color.json, data/Relation/swig_action.json,
    data/Object/Location/vg_location/vg_obj_margin.json."""
    category, rest = _category(path)
    stem = path.stem.lower()
    if category == "object":
        kind = rest[0].lower() if len(rest) >= 2 else ""
        if kind not in _BINS:
            raise SourceError(
                path, "expected Object/Location/... or Object/Size/... (pass --capability)"
            )
        source, _, leaf = stem.rpartition("_")
        return _object_capability(path, kind, leaf), source or stem
    if len(rest) == 2:
        return _leaf_capability(path, category, stem), rest[0].lower()
    if len(rest) == 1 and "_" in stem:
        source, _, leaf = stem.rpartition("_")
        return _leaf_capability(path, category, leaf), source
    raise SourceError(path, f"expected {category.title()}/DATASET/LEAF.json (pass --capability)")


def _object_capability(path: Path, kind: str, leaf: str) -> str:
    if kind not in _BINS or leaf not in _BINS[kind]:
        options = ", ".join(f"{k}/{b}" for k in _BINS for b in _BINS[k])
        raise SourceError(
            path,
            f"object {kind} '{leaf}' is not in VL-CheckList's taxonomy "
            f"({options}); pass --capability",
        )
    return f"object/{kind}/{leaf}"


def _leaf_capability(path: Path, category: str, leaf: str) -> str:
    known = _ATTRIBUTES if category == "attribute" else _RELATIONS
    if leaf not in known:
        raise SourceError(
            path,
            f"{category} '{leaf}' is not in VL-CheckList's taxonomy "
            f"({', '.join(known)}); pass --capability",
        )
    return f"{category}/{leaf}"


def _leaf_test(leaf: _Leaf, args: argparse.Namespace) -> dict[str, Any]:
    data = read_json(leaf.data)
    if not isinstance(data, list):
        raise SourceError(leaf.data, "expected a JSON list of [image, {POS, NEG}] records")
    examples: list[dict[str, Any]] = []
    first = args.pairs == "first"
    for index, record in enumerate(data):
        image, positives, negatives = _record(leaf.data, index, record, first_only=first)
        pairs = list(zip(positives, negatives, strict=False))
        if first or len(pairs) == 1:
            examples.append(
                {
                    "id": str(index),
                    "image": leaf.image_prefix + image,
                    "caption": pairs[0][0],
                    "negatives": [pairs[0][1]],
                }
            )
            continue
        for number, (positive, negative) in enumerate(pairs):
            examples.append(
                {
                    "id": f"{index}.{number}",
                    "image": leaf.image_prefix + image,
                    "caption": positive,
                    "negatives": [negative],
                    "tags": {"paraphrase": number},
                }
            )
    if not examples:
        raise SourceError(leaf.data, "the file has no records")
    note_unwinnable(leaf.data, examples)
    if args.image_root is not None:
        _note_missing_images(leaf.data, Path(args.image_root), examples)
    test_id = safe_test_id(leaf.capability.replace("/", "-"), leaf.source)
    return make_test(
        test_id,
        leaf.capability,
        "caption",
        examples,
        threshold=args.threshold,
        description=f"VL-CheckList {leaf.capability} ({leaf.source}): the true "
        "text must outscore its negative",
    )


def _note_missing_images(path: Path, root: Path, examples: list[dict[str, Any]]) -> None:
    """Count the records VL-CheckList's evaluator would drop, silently, for a missing image."""
    records = {str(e["id"]).split(".")[0]: e["image"] for e in examples}
    missing = sum(not (root / image).is_file() for image in records.values())
    if missing:
        note(
            f"{path}: {missing} of {len(records)} record(s) have no image under {root}; "
            "VL-CheckList's evaluator drops them without a word, pytest --vl-missing skip "
            "scores the rest and reports the count"
        )


def _record(
    path: Path, index: int, record: Any, *, first_only: bool = False
) -> tuple[str, list[str], list[str]]:
    if (
        not isinstance(record, list)
        or len(record) != 2
        or not isinstance(record[0], str)
        or not isinstance(record[1], Mapping)
    ):
        raise SourceError(path, 'expected [image_path, {"POS": [...], "NEG": [...]}]', record=index)
    image, texts = record
    if not image.strip():
        raise SourceError(path, "empty image path", record=index)
    lists = []
    for key in ("POS", "NEG"):
        value = texts.get(key)
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(t, str) and t.strip() for t in value)
        ):
            raise SourceError(
                path, f"{key} must be a non-empty list of non-empty strings", record=index
            )
        lists.append(value)
    if len(lists[0]) != len(lists[1]) and not first_only:
        raise SourceError(
            path,
            f"POS has {len(lists[0])} texts and NEG {len(lists[1])}; "
            "paraphrase i of POS pairs with i of NEG, so they must match "
            "(--pairs first takes the first of each, as VL-CheckList's evaluator does)",
            record=index,
        )
    return image, lists[0], lists[1]


IMPORTER = Importer(
    "vl-checklist",
    "VL-CheckList data JSONs / corpus YAMLs / whole trees (one caption test per leaf)",
    add_arguments,
    convert,
)
