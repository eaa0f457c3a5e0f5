"""ColorSwap, EqBen and VisMin: Winoground-shaped benchmarks read through the Winoground
importer's field mapping; their fixtures, errors and scores worked out by hand."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_importers import examples_of, fails, imported
from test_importers_e2e import import_into, run_scored, scores_for

from pytest_vlcheck.checklist import load_checklist

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
COLORSWAP = FIXTURES / "colorswap" / "test.json"
EQBEN = FIXTURES / "eqben" / "eqben_subset.json"
VISMIN = FIXTURES / "vismin" / "vismin.csv"


def test_colorswap_pairs_image_i_with_caption_i(tmp_path: Path) -> None:
    doc = imported(tmp_path, "colorswap", COLORSWAP)
    (test,) = doc["tests"]
    assert (test["id"], test["capability"], test["task"]) == (
        "colorswap",
        "attribute/color_swap",
        "group",
    )
    assert test["criterion"] == "group" and test["threshold"] == 0.1666
    assert examples_of(doc, "colorswap")["1"] == {
        "id": "1",
        "images": ["1_1.png", "1_2.png"],
        "captions": ["a yellow cup beside a green plate", "a green cup beside a yellow plate"],
        "tags": {"image_source": "dalle", "caption_source": "human"},
    }


def test_eqben_ids_are_positions(tmp_path: Path) -> None:
    doc = imported(tmp_path, "eqben", EQBEN, extra=("--criterion", "text"))
    (test,) = doc["tests"]
    assert (test["capability"], test["criterion"], test["threshold"]) == (
        "scene/minimal_change",
        "text",
        0.25,
    )
    assert examples_of(doc, "eqben")["1"]["images"] == [
        "eqbenkubric/1_a.png",
        "eqbenkubric/1_b.png",
    ]


def test_vismin_one_test_per_category(tmp_path: Path) -> None:
    doc = imported(tmp_path, "vismin", VISMIN)
    assert [(t["id"], t["capability"]) for t in doc["tests"]] == [
        ("vismin-object", "object/minimal_change"),
        ("vismin-attribute", "attribute/minimal_change"),
        ("vismin-counting", "counting/minimal_change"),
    ]
    assert examples_of(doc, "vismin-object")["e2"] == {
        "id": "e2",
        "images": ["original_images/images/e2.jpg", "edited_images/edited/e2.jpg"],
        "captions": ["a man holding a cup, smiling", "a man holding a book, smiling"],
    }


def test_vismin_images_resolve_in_the_authors_layout(tmp_path: Path) -> None:
    """The authors' loader: ROOT/original_images/PATH and ROOT/edited_images/PATH, a leading
    '/' of PATH stripped (the fixture's e2 has one)."""
    root = tmp_path / "vismin_data"
    for row in csv.DictReader(VISMIN.read_text(encoding="utf-8").splitlines()):
        for folder, key in (
            ("original_images", "image_path"),
            ("edited_images", "edited_image_path"),
        ):
            name = row[key]
            image = root / folder / name.lstrip("/")
            image.parent.mkdir(parents=True, exist_ok=True)
            image.write_bytes(b"")
    out = tmp_path / "vismin.yaml"
    imported(tmp_path, "vismin", VISMIN)
    checklist = load_checklist(out, image_root=root)
    refs = [ref for test in checklist.tests for e in test.examples for ref in e.images]
    assert len(refs) == 8 and all(Path(ref.location).is_file() for ref in refs)


def test_group_pair_errors_name_the_source_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "colorswap.json"
    text = COLORSWAP.read_text().replace('"id": 2', '"id": 0')
    bad.write_text(text, encoding="utf-8")
    line = text.splitlines().index("  {", 15) + 1  # the third record opens here
    assert fails(capsys, tmp_path, "colorswap", bad) == (
        f"vlcheck import: {bad}:{line}: id 0 repeats line 2"
    )
    bad = tmp_path / "eqben.json"
    bad.write_text('[\n  {"image0": "a", "image1": "b", "caption0": "x"}\n]', encoding="utf-8")
    assert fails(capsys, tmp_path, "eqben", bad) == (
        f"vlcheck import: {bad}:2: missing field 'caption1'"
    )
    bad = tmp_path / "vismin.csv"
    rows = VISMIN.read_text().splitlines()
    rows[3] = "images/e3.jpg,a red car,edited/e3.jpg"
    bad.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert fails(capsys, tmp_path, "vismin", bad) == (
        f"vlcheck import: {bad}:4: 3 values; the header has 6"
    )
    rows = VISMIN.read_text().splitlines()
    rows[4] = rows[4].replace(",e4,", ",,")
    bad.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert fails(capsys, tmp_path, "vismin", bad) == f"vlcheck import: {bad}:5: empty 'edit_id'"


# s(image i, caption j) per example; text score: caption i wins on image i for both images;
# image score: image i wins for caption i for both captions; group: both. A tie is wrong.
GRIDS = {
    "colorswap": {
        "0": [[0.9, 0.1], [0.2, 0.8]],  # text, image, group right
        "1": [[0.5, 0.5], [0.2, 0.8]],  # text: a tie on image 0 (wrong); image right
        "2": [[0.6, 0.4], [0.6, 0.7]],  # text right; image: caption 0 ties (wrong)
    },
    "eqben": {
        "0": [[0.7, 0.2], [0.1, 0.6]],  # all right
        "1": [[0.3, 0.3], [0.3, 0.3]],  # every score alike: all wrong
    },
    "vismin": {
        "e1": [[0.8, 0.1], [0.2, 0.9]],  # all right
        "e2": [[0.8, 0.1], [0.8, 0.9]],  # text right; image: caption 0 ties (wrong)
        "e3": [[0.6, 0.5], [0.4, 0.7]],  # all right
        "e4": [[0.2, 0.6], [0.5, 0.4]],  # all wrong
    },
}


@pytest.mark.parametrize(
    ("fmt", "source", "expected", "outcomes"),
    [
        ("colorswap", COLORSWAP, {"colorswap": (2 / 3, 2 / 3, 1 / 3)}, {"passed": 1}),
        ("eqben", EQBEN, {"eqben": (1 / 2, 1 / 2, 1 / 2)}, {"passed": 1}),
        (
            "vismin",
            VISMIN,
            {
                "vismin-object": (1.0, 1 / 2, 1 / 2),
                "vismin-attribute": (1.0, 1.0, 1.0),
                "vismin-counting": (0.0, 0.0, 0.0),
            },
            {"passed": 2, "failed": 1},
        ),
    ],
)
def test_winoground_scores_by_hand(
    pytester: pytest.Pytester,
    fmt: str,
    source: Path,
    expected: dict[str, tuple[float, float, float]],
    outcomes: dict[str, int],
) -> None:
    checklist = import_into(pytester.path, fmt, str(source))
    grid = GRIDS[fmt]
    scores = scores_for(checklist, lambda t, e, i, j: grid[e][i][j], pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    for test_id, (text, image, group) in expected.items():
        metrics = rows[test_id]["metrics"]
        assert metrics["text_score"] == pytest.approx(text)
        assert metrics["image_score"] == pytest.approx(image)
        assert metrics["group_score"] == pytest.approx(group)
        assert rows[test_id]["pass_rate"] == pytest.approx(group)
    result.assert_outcomes(**outcomes)
