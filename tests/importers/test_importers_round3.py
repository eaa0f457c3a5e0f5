"""COLA and SPEC (and BiVLC, with pyarrow): fixtures in the authors' formats, scored from a
``scores:`` file, the authors' numbers worked out by hand from their code, ties included."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from test_importers import examples_of, fails, imported
from test_importers_e2e import import_into, run_scored, scores_for

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
COLA = FIXTURES / "cola" / "COLA_multiobjects_matching_benchmark.json"
SPEC = FIXTURES / "spec"
VG = "https://cs-people.bu.edu/array/data/vg_gqa_images/"


def test_cola_rows_become_group_examples_passing_on_the_image_score(tmp_path: Path) -> None:
    doc = imported(tmp_path, "cola", COLA)
    (test,) = doc["tests"]
    assert (test["id"], test["task"], test["criterion"]) == ("cola-multi_object", "group", "image")
    assert examples_of(doc, "cola-multi_object")["0"] == {
        "id": "0",
        "images": [{"url": VG + "2390970.jpg"}, {"url": VG + "2388902.jpg"}],
        "captions": [
            "standing tall long giraffe to the right of brown giraffe",
            "brown giraffe behind tall white giraffe",
        ],
    }
    files = imported(tmp_path, "cola", COLA, extra=("--images", "files"))
    assert examples_of(files, "cola-multi_object")["1"]["images"] == [
        "vg_gqa_images/2383130.jpg",
        "vg_gqa_images/2382835.jpg",
    ]


# s(image i, caption j) per row: ColaMultiObjAcc is s00 > s10 and s11 > s01 (the image score)
COLA_SCORES = {
    "0": [[0.9, 0.1], [0.2, 0.8]],  # everything right
    "1": [[0.5, 0.5], [0.4, 0.6]],  # image score right; image 0 ties its captions: text wrong
    "2": [[0.3, 0.2], [0.3, 0.6]],  # caption 0 ties its images: image wrong; text right
}


def test_cola_image_score_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "cola", str(COLA))
    scores = scores_for(
        checklist, lambda t, e, i, j: COLA_SCORES[e][i][j], pytester.path / "s.jsonl"
    )
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["cola-multi_object"]
    # the authors' multi-object accuracy: rows 0 and 1, 2/3; text 2/3, group 1/3
    assert (row["n"], row["passed"]) == (3, 2)
    assert row["metrics"]["image_score"] == pytest.approx(2 / 3)
    assert row["metrics"]["text_score"] == pytest.approx(2 / 3)
    assert row["metrics"]["group_score"] == pytest.approx(1 / 3)
    result.assert_outcomes(passed=1)


def test_cola_bad_row_is_reported_at_its_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "cola.json"
    bad.write_text('[\n  ["a.jpg", "x", "b.jpg"]\n]', encoding="utf-8")
    assert fails(capsys, tmp_path, "cola", bad) == (
        f"vlcheck import: {bad}:2: expected a list [image 1, caption 1, image 2, caption 2]"
    )


def test_spec_two_tests_per_subset_in_key_order(tmp_path: Path) -> None:
    doc = imported(tmp_path, "spec", SPEC)
    assert [(t["id"], t["task"], t["ties"]) for t in doc["tests"]] == [
        ("spec-absolute_size-i2t", "caption", "order"),
        ("spec-absolute_size-t2i", "image", "order"),
        ("spec-count-i2t", "caption", "order"),
        ("spec-count-t2i", "image", "order"),
    ]
    assert examples_of(doc, "spec-count-i2t")["0"] == {
        "id": "0",
        "image": "count/images/count_0.jpg",
        "caption": "two apples",
        "negatives": ["one apple", "three apples"],
        "position": 1,
    }
    assert examples_of(doc, "spec-count-t2i")["1"] == {
        "id": "1",
        "text": "three dogs",
        "image": "count/images/t2i_1_2.jpg",
        "distractors": ["count/images/t2i_1_0.jpg", "count/images/t2i_1_1.jpg"],
        "position": 2,
    }


# scores per candidate in the file's key order; SPEC takes argmax (the first maximum)
SPEC_SCORES = {
    ("spec-count-i2t", "0"): (1, [0.5, 0.5, 0.1]),  # label 1 ties key 0, before it: wrong
    ("spec-count-i2t", "1"): (0, [0.4, 0.4, 0.2]),  # label 0 ties key 1, after it: right
    ("spec-count-i2t", "2"): (2, [0.1, 0.2, 0.6]),  # right
    ("spec-count-t2i", "0"): (1, [0.2, 0.7, 0.7]),  # label 1 ties key 2, after it: right
    ("spec-count-t2i", "1"): (2, [0.3, 0.3, 0.3]),  # all tied: key 0 wins, wrong
    ("spec-absolute_size-i2t", "0"): (0, [0.6, 0.4]),  # right
    ("spec-absolute_size-t2i", "0"): (1, [0.5, 0.5]),  # label 1 ties key 0: wrong
}


def test_spec_i2t_and_t2i_accuracy_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "spec", str(SPEC))

    def rule(test: str, example: str, i: int, j: int) -> float:
        label, by_key = SPEC_SCORES[(test, example)]
        order = [label, *(k for k in range(len(by_key)) if k != label)]  # true one first
        return by_key[order[j if test.endswith("i2t") else i]]

    scores = scores_for(checklist, rule, pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    counts = {test: (row["n"], row["passed"], row["ties"]) for test, row in rows.items()}
    assert counts == {
        "spec-absolute_size-i2t": (1, 1, 0),
        "spec-absolute_size-t2i": (1, 0, 1),
        "spec-count-i2t": (3, 2, 2),
        "spec-count-t2i": (2, 1, 2),
    }
    result.assert_outcomes(passed=3, failed=1)  # absolute_size t2i: 0 < chance 1/2


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            '{"query": "q.jpg", "keys": ["a", "b"], "label": 2}',
            "'label' is 2; expected an index 0-1",
        ),
        ('{"query": "q.jpg", "keys": ["a"], "label": 0}', "'keys' must be a list of two or more"),
        ('{"query": "", "keys": ["a", "b"], "label": 0}', "'query' must be a non-empty string"),
        ('{"query": "q.jpg", "keys": ["a", "b"], "label": true}', "'label' is True"),
    ],
)
def test_spec_bad_records_are_reported_at_their_line(
    tmp_path: Path, capsys, record: str, message: str
) -> None:
    subset = tmp_path / "data" / "count"
    subset.mkdir(parents=True)
    good = '{"query": "x", "keys": ["a.jpg", "b.jpg"], "label": 0}'
    (subset / "image2text.json").write_text(f"[\n  {record}\n]", encoding="utf-8")
    (subset / "text2image.json").write_text(f"[\n  {good}\n]", encoding="utf-8")
    err = fails(capsys, tmp_path, "spec", tmp_path / "data")
    assert err.startswith(f"vlcheck import: {subset / 'image2text.json'}:2: {message}")


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), colour).save(buffer, format="PNG")
    return buffer.getvalue()


BIVLC_ROWS = [
    ("replace", "obj", "a dog on grass", "a cat on grass"),
    ("swap", "att", "a red cup and a blue plate", "a blue cup and a red plate"),
    ("replace", "att", "a wooden table", "a metal table"),
]


def bivlc_parquet(path: Path, *, bad_image: bool = False) -> Path:
    """The dataset's columns, images embedded as {bytes, path} (what ``datasets`` writes)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = []
    for i, (kind, subtype, caption, negative) in enumerate(BIVLC_ROWS):
        image = {"bytes": _png((i * 40, 0, 0)), "path": None}
        negative_image = {"bytes": b"GIF89a" if bad_image else _png((0, i * 40, 0)), "path": None}
        rows.append(
            {
                "image": image,
                "caption": caption,
                "negative_image": negative_image,
                "negative_caption": negative,
                "type": kind,
                "subtype": subtype,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# s(image i, caption i'): row 0 all right; row 1 the image ties its captions (I2T wrong, T2I
# right); row 2 the caption ties its images (T2I wrong, I2T right)
BIVLC_SCORES = [
    [[0.9, 0.1], [0.2, 0.8]],
    [[0.5, 0.5], [0.4, 0.6]],
    [[0.3, 0.2], [0.3, 0.6]],
]


def test_bivlc_i2t_t2i_and_group_by_hand(pytester: pytest.Pytester) -> None:
    source = bivlc_parquet(pytester.path / "test-00000-of-00001.parquet")
    checklist = import_into(pytester.path, "bivlc", str(source))
    images = sorted(p.name for p in (pytester.path / "bivlc_images").iterdir())
    assert images[:2] == [
        "test-00000-of-00001-0-image.png",
        "test-00000-of-00001-0-negative_image.png",
    ]
    assert len(images) == 6
    scores = scores_for(
        checklist,
        lambda t, e, i, j: BIVLC_SCORES[int(e.rsplit(":", 1)[1])][i][j],
        pytester.path / "s.jsonl",
    )
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["bivlc"]
    # the authors' I2T (text score) 2/3, T2I (image score) 2/3, group 1/3
    assert row["metrics"]["text_score"] == pytest.approx(2 / 3)
    assert row["metrics"]["image_score"] == pytest.approx(2 / 3)
    assert (row["n"], row["passed"]) == (3, 1)
    assert row["slices"]["type"]["replace"]["passed"] == 1
    assert row["slices"]["type"]["swap"]["passed"] == 0
    result.assert_outcomes(passed=1)  # 1/3 >= chance 1/6
    # written once: a second import leaves identical images as they are
    first = (pytester.path / "bivlc_images" / images[0]).stat().st_mtime_ns
    import_into(pytester.path, "bivlc", str(source))
    assert (pytester.path / "bivlc_images" / images[0]).stat().st_mtime_ns == first


def test_bivlc_bad_image_writes_nothing(tmp_path: Path, capsys) -> None:
    source = bivlc_parquet(tmp_path / "test.parquet", bad_image=True)
    err = fails(capsys, tmp_path, "bivlc", source)
    assert err == (
        f"vlcheck import: {source}: record 0: 'negative_image' is neither a PNG nor a JPEG image"
    )
    assert not (tmp_path / "never_images").exists()
