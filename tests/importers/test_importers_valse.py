"""``vlcheck import valse``: fixtures in VALSE's format, the real files' valid-set counts,
and the pairwise accuracy end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_importers import examples_of, fails, imported
from test_importers_e2e import import_into, run_scored, scores_for

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers" / "valse"
ANCHORS = Path(__file__).resolve().parents[2] / ".." / "shared" / "anchors" / "valse"

# The authors' valid set (mturk.caption >= 2) of each piece of the published files.
VALID_COUNTS = {
    "existence": 505,
    "plurals": 851,
    "counting-hard": 868,
    "counting-small-quant": 900,
    "counting-adversarial": 691,
    "relations": 535,
    "action-replacement": 648,
    "actant-swap": 949,
    "coreference-standard": 708,
    "coreference-hard": 104,
    "foil-it": 943,
}


def test_valse_keeps_the_valid_set_one_test_per_piece(tmp_path: Path) -> None:
    doc = imported(tmp_path, "valse", FIXTURES)
    assert [t["id"] for t in doc["tests"]] == ["existence", "plurals", "relations"]
    assert [t["capability"] for t in doc["tests"]] == [
        "object/existence",
        "counting/plurality",
        "relation/replace",
    ]
    existence = examples_of(doc, "existence")
    assert list(existence) == ["existence_visual7w_1", "existence_visual7w_2"]  # 3: 1 vote
    assert existence["existence_visual7w_1"] == {
        "id": "existence_visual7w_1",
        "image": "visual7w/v7w_1.jpg",
        "caption": "There are no people in the picture.",
        "negatives": ["There are people in the picture."],
    }
    # COCO 2017 is spelled coco_2017 and coco2017 in VALSE; both are one image source.
    assert examples_of(doc, "relations")["relations:coco_2017:1"]["image"] == (
        "coco2017/000000000001.jpg"
    )
    assert examples_of(doc, "plurals")["plurals:coco2017:7"]["image"] == (
        "coco2017/000000000007.jpg"
    )


def test_valse_all_records_and_named_image_roots(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    doc = imported(
        tmp_path,
        "valse",
        FIXTURES / "existence.json",
        FIXTURES / "relations.json",
        extra=(
            "--all-records",
            "--image-root",
            "visual7w=images/v7w",
            "--image-root",
            "coco2017=/data/coco/val2017",
        ),
    )
    assert len(examples_of(doc, "existence")) == 3
    # relative to the YAML's folder (tmp_path), an absolute DIR as given
    assert examples_of(doc, "existence")["existence_visual7w_3"]["image"] == "images/v7w/v7w_3.jpg"
    assert examples_of(doc, "relations")["relations:coco_2017:2"]["image"] == (
        "/data/coco/val2017/000000000002.jpg"
    )
    assert "image_root" not in doc


def test_valse_named_roots_must_cover_every_source(tmp_path: Path, capsys) -> None:
    err = fails(capsys, tmp_path, "valse", FIXTURES, extra=("--image-root", "coco2017=c"))
    assert err.endswith("images from visual7w but no --image-root NAME=DIR for it")
    err = fails(
        capsys, tmp_path, "valse", FIXTURES, extra=("--image-root", "a", "--image-root", "swig=s")
    )
    assert "--image-root a and --image-root NAME=DIR together" in err
    err = fails(capsys, tmp_path, "valse", FIXTURES, extra=("--image-root", "coco=c"))
    assert err == (
        "vlcheck import: --image-root coco=c: no image source 'coco' in valse; expected one "
        "of: coco2017, foil, swig, visdial, visual7w"
    )


def _piece(tmp_path: Path, text: str, name: str = "existence.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _record(**changes: object) -> dict[str, object]:
    record = json.loads((FIXTURES / "existence.json").read_text())["existence_visual7w_1"]
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (_record(dataset="coco"), "unknown dataset 'coco'"),
        (_record(image_file=""), "field 'image_file' must be a non-empty string"),
        (_record(mturk={"caption": "3"}), "'mturk.caption' must be a vote count 0-3"),
        (_record(foil=None), "field 'foil' must be a non-empty string"),
    ],
)
def test_valse_bad_record_is_reported_at_its_source_line(
    tmp_path: Path, capsys, record: dict[str, object], message: str
) -> None:
    good = json.dumps(_record())
    bad = json.dumps(record)
    path = _piece(tmp_path, f'{{\n  "a": {good},\n\n  "b": {bad}\n}}\n')
    err = fails(capsys, tmp_path, "valse", path)
    assert err.startswith(f"vlcheck import: {path}:4: {message}")


def test_valse_duplicate_and_empty_ids_are_reported_at_their_line(tmp_path: Path, capsys) -> None:
    good = json.dumps(_record())
    path = _piece(tmp_path, f'{{\n  "a": {good},\n  "a": {good}\n}}\n')
    assert fails(capsys, tmp_path, "valse", path) == (
        f"vlcheck import: {path}:3: id 'a' repeats line 2"
    )
    path = _piece(tmp_path, f'{{\n  "a": {good},\n  " ": {good}\n}}\n')
    assert fails(capsys, tmp_path, "valse", path).startswith(f"vlcheck import: {path}:3: ")
    path = _piece(tmp_path, "{}", name="foils.json")
    assert "'foils' is not a VALSE piece" in fails(capsys, tmp_path, "valse", path)


@pytest.mark.skipif(not ANCHORS.is_dir(), reason="the shared anchor files are not here")
def test_valse_real_files_give_the_authors_valid_counts(tmp_path: Path) -> None:
    doc = imported(tmp_path, "valse", ANCHORS)
    counts = {t["id"]: len(t["examples"]) for t in doc["tests"]}
    assert counts == VALID_COUNTS
    assert sum(counts.values()) == 7702
    everything = imported(tmp_path, "valse", ANCHORS, extra=("--all-records",))
    assert sum(len(t["examples"]) for t in everything["tests"]) == 8782


def test_valse_pairwise_accuracy_with_a_tie(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "valse", str(FIXTURES))
    # s(image, caption) vs s(image, foil): VALSE's pairwise accuracy needs caption > foil.
    caption_foil = {
        "existence_visual7w_1": (0.8, 0.2),  # right
        "existence_visual7w_2": (0.5, 0.5),  # a tie: wrong
        "relations:coco_2017:1": (0.7, 0.1),  # right
        "relations:coco_2017:2": (0.3, 0.6),  # wrong
        "plurals:coco2017:7": (0.4, 0.39),  # right
    }
    scores = scores_for(checklist, lambda t, e, i, j: caption_foil[e][j], pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    assert (rows["existence"]["n"], rows["existence"]["passed"]) == (2, 1)
    assert rows["existence"]["pass_rate"] == 0.5  # 1/2 by hand, the tie counted wrong
    assert (rows["relations"]["n"], rows["relations"]["passed"]) == (2, 1)
    assert rows["plurals"]["pass_rate"] == 1.0
    result.assert_outcomes(passed=3)  # 0.5 >= chance 0.5
