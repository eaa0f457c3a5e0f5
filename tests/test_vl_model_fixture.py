"""The ``vl_model`` fixture end to end: Python capability tests in the matrix, JUnit, reports
and gates, once per model, with the model loaded once per process."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from helpers.colour_scorer import SOURCE
from helpers.gate_suite import scores
from PIL import Image

COLOURS = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220)}

COUNTING = """
import os
from colour_model import ColourScorer

def make():
    with open("loads.txt", "a") as handle:
        handle.write(f"{os.getpid()}\\n")
    return ColourScorer()


class PairsOnly:
    def __init__(self):
        self.inner = ColourScorer()

    def score_pairs(self, images, texts):
        import numpy as np
        a = self.inner.encode_images(images)
        b = self.inner.encode_texts(texts)
        return (a * b).sum(1)


def pairs():
    return PairsOnly()
"""

EXAMPLES = """[
    {"id": "r", "image": "images/red.png", "caption": "a red square",
     "negatives": ["a green square", "a blue square"], "tags": {"hue": "warm"}},
    {"id": "g", "image": "images/green.png", "caption": "a green square",
     "negatives": ["a red square"], "tags": {"hue": "cold"}},
    {"id": "b", "image": "images/blue.png", "caption": "a blue red thing",
     "negatives": ["a blue thing"], "tags": {"hue": "cold"}},
]"""

YAML = f"""\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.6
    examples: {" ".join(EXAMPLES.split())}
"""

PYTHON_TESTS = f"""\
import numpy as np
import pytest
from PIL import Image

EXAMPLES = {EXAMPLES}


@pytest.mark.vlcheck(capability="attribute/color")
def test_color(vl_model):
    result = vl_model.evaluate(task="caption", examples=EXAMPLES, threshold=0.6)
    assert result.n == 3


def test_two_rows(vl_model):
    vl_model.evaluate(task="caption", examples=EXAMPLES[:1], threshold=1.0,
                      capability="attribute/color", name="easy")
    vl_model.evaluate(task="caption", examples=EXAMPLES[2:], threshold=1.0,
                      capability="attribute/color", name="hard")


def test_score(vl_model):
    red = Image.new("RGB", (8, 8), (220, 20, 20))
    grid = vl_model.score([red, "images/blue.png", red.copy()], ["red", "blue"])
    assert grid.shape == (3, 2) and grid.dtype == np.float32
    assert grid[0, 0] > grid[0, 1] and grid[1, 1] > grid[1, 0]
    assert (grid[0] == grid[2]).all()
    images = vl_model.encode_images([red, {{"scene": {{"size": 32, "objects": []}}}}])
    texts = vl_model.encode_texts("red")
    assert images.shape == (2, 3) and texts.shape == (1, 3)
    assert np.float32(images[0] @ texts[0]) == grid[0, 0]
    # palette images with the same indices and different palettes are different pixels
    palette = [Image.new("P", (8, 8), 0) for _ in range(2)]
    palette[0].putpalette([220, 20, 20])
    palette[1].putpalette([20, 20, 220])
    grid = vl_model.score(palette, ["red", "blue"])
    assert grid[0, 0] > grid[0, 1] and grid[1, 1] > grid[1, 0]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    images = pytester.mkdir("images")
    for name, rgb in COLOURS.items():
        Image.new("RGB", (16, 16), rgb).save(images / f"{name}.png")
    pytester.makepyfile(colour_model=SOURCE, counting_model=COUNTING)
    pytester.makepyfile(test_capabilities=PYTHON_TESTS)
    pytester.makefile(".yaml", checks=YAML)
    pytester.syspathinsert()
    return pytester


def loads(pytester: pytest.Pytester) -> Counter[str]:
    path = pytester.path / "loads.txt"
    return Counter(path.read_text().split()) if path.exists() else Counter()


def test_runs_once_per_model_in_matrix_junit_and_samples(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--vl-model=a=py:counting_model:make",
        "--vl-model=b=py:counting_model:make",
        "--vl-report=rep",
        "--junitxml=out.xml",
        "-p",
        "no:cacheprovider",
        "-v",
    )
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_capabilities.py::test_color[[]a[]] PASSED*",
            "*test_capabilities.py::test_color[[]b[]] PASSED*",
            "*FAILED test_capabilities.py::test_two_rows[[]a[]] - attribute/color: 0.0% (0/1*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert list(loads(project).values()) == [2]  # one process: a and b loaded once each
    doc = json.loads((project.path / "rep" / "matrix.json").read_text())
    rows = {(r["file"], r["test"], r["model"]): r for r in doc["results"]}
    assert set(rows) == {
        (file, test, model)
        for model in "ab"
        for file, test in [
            ("checks.yaml", "color"),
            ("test_capabilities.py", "test_color"),
            ("test_capabilities.py", "test_two_rows::easy"),
            ("test_capabilities.py", "test_two_rows::hard"),
        ]
    }
    yaml_row, python_row = (
        rows["checks.yaml", "color", "a"],
        rows["test_capabilities.py", "test_color", "a"],
    )
    different = {k for k in yaml_row if yaml_row[k] != python_row[k]}
    assert different == {"file", "test", "line", "content_hash"}  # the same measurement
    assert python_row["pass_rate"] == pytest.approx(2 / 3)
    assert rows["test_capabilities.py", "test_two_rows::easy", "a"]["status"] == "passed"
    assert rows["test_capabilities.py", "test_two_rows::hard", "a"]["status"] == "failed"
    samples = [json.loads(line) for line in (project.path / "rep" / "samples.jsonl").open()]
    by_file: dict[str, list] = {}
    for s in samples:
        if s["model"] == "a" and s["test"] in ("color", "test_color"):
            by_file.setdefault(s["file"], []).append((s["example"], s["correct"], s["scores"]))
    assert by_file["checks.yaml"] == by_file["test_capabilities.py"]
    root = ET.parse(project.path / "out.xml").getroot()
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in root.iter("testcase")
    }
    where = {"vlcheck_file", "vlcheck_test"}  # the one place the two rows differ
    assert {k: v for k, v in props["test_color[a]"].items() if k not in where} == {
        k: v for k, v in props["color[a]"].items() if k not in where
    }
    assert props["test_color[a]"]["vlcheck_test"] == "test_color"
    assert props["test_color[a]"]["vlcheck_pass_rate"] == str(2 / 3)


def test_without_a_model_python_tests_are_skipped_with_the_hint(project: pytest.Pytester) -> None:
    result = project.runpytest("-rs", "--vl-allow-no-model", "test_capabilities.py")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*no model given: pass --vl-model SPEC*"])


def test_marker_selects_by_capability(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.vlcheck(capability="relation/spatial")
        def test_probe(vl_model):
            assert vl_model.score(["images/red.png"], ["red"])[0, 0] > 0.5

        @pytest.mark.vlcheck(capability="relation/spatial")
        def test_broken(vl_model):
            raise ValueError("oops")

        @pytest.mark.vlcheck(capability="relation/spatial")
        def test_bare(vl_model):
            assert False
        """
    )
    args = ["--vl-model=py:counting_model:make", "--vl-report=rep", "-p", "no:cacheprovider"]
    result = project.runpytest(*args, "-m", "relation", "--strict-markers")
    result.assert_outcomes(passed=1, failed=2)  # only the marked tests
    result = project.runpytest(*args, "-k", "spatial and not broken and not bare")
    result.assert_outcomes(passed=1)
    result = project.runpytest(*args, "-k", "color")
    result.assert_outcomes(passed=2)  # the YAML item and test_color
    result = project.runpytest(*args, "test_marked.py")
    rows = json.loads((project.path / "rep" / "matrix.json").read_text())["results"]
    assert [(r["test"], r["status"], r["n"]) for r in rows] == [
        ("test_probe", "passed", 0),
        ("test_broken", "failed", 0),
        ("test_bare", "failed", 0),
    ]
    assert rows[1]["message"] == "oops"


def test_user_errors_name_the_line(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mistakes="""
        def test_missing_key(vl_model):
            vl_model.evaluate(task="caption", capability="attribute/color", threshold=0.5,
                              examples=[{"image": "images/red.png", "caption": "red"}])

        def test_same_name(vl_model):
            ex = [{"image": "images/red.png", "caption": "red", "negatives": ["blue"]}]
            vl_model.evaluate(task="caption", capability="a/b", threshold=0.5, examples=ex)
            vl_model.evaluate(task="caption", capability="a/b", threshold=0.5, examples=ex)

        def test_no_capability(vl_model):
            vl_model.evaluate(task="caption", threshold=0.5, examples=[])

        def test_pairs_only(vl_model):
            vl_model.encode_texts(["red"])
        """
    )
    result = project.runpytest(
        "--vl-model=py:counting_model:make",
        "--vl-model=p=py:counting_model:pairs",
        "test_mistakes.py",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(failed=7, passed=1)
    out = result.stdout.str()
    assert "Traceback" not in out
    assert (
        "test_mistakes.py:2: example 1 of test 'test_missing_key' is missing the required "
        "key 'negatives'" in out
    )
    assert "test_mistakes.py:8: evaluate name '(none)' is already used in this test" in out
    assert "test_mistakes.py:11: evaluate needs capability=..." in out
    assert (
        "model 'py:counting_model:pairs' scores pairs only (score_pairs): encode_texts "
        "needs a dual encoder" in out
    )


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ('vl_model.score("images/red.png", ["red", None])', "vl_model.score: texts[1] is None"),
        ('vl_model.score(["images/red.png", None], "red")', "vl_model.score: images[1] is None"),
        ('vl_model.score(5, "red")', "vl_model.score: images is int 5; expected an image or"),
        ('vl_model.score("images/red.png", [])', "vl_model.score: texts is empty; expected"),
        ("vl_model.encode_texts(None)", "vl_model.encode_texts: texts is None; expected a"),
        ("vl_model.encode_images([b'png'])", "vl_model.encode_images: images[0] is bytes"),
        (
            'vl_model.evaluate(task="caption", capability="a/b", threshold=0.5, examples=5)',
            "vl_model.evaluate: examples is int 5; expected a list of example mappings",
        ),
    ],
)
def test_arguments_of_the_wrong_type_name_the_call_and_the_argument(
    project: pytest.Pytester, call: str, expected: str
) -> None:
    project.makepyfile(test_call=f"def test_call(vl_model):\n    {call}\n")
    result = project.runpytest("--vl-model=py:colour_model:make", "test_call.py")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"test_call.py:2: {expected}" in out and "Traceback" not in out


def test_a_drop_fails_the_gate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_gated="""
        def test_spatial(vl_model):
            vl_model.evaluate(
                task="caption", capability="relation/spatial", threshold=0.5, name="sp",
                examples=[{"id": str(i), "image": f"spatial{i}.png", "caption": f"c{i}",
                           "negatives": [f"n{i}"]} for i in range(60)],
            )
        """
    )
    scores(pytester.path / "old.jsonl", {"spatial": set(range(10))})
    saved = pytester.runpytest("--vl-model=old=scores:old.jsonl", "--vl-save-baseline=base.json")
    saved.assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "base.json").read_text())["entries"][0]
    assert (entry["file"], entry["test"], entry["model"]) == (
        "test_gated.py",
        "test_spatial::sp",
        "old",
    )
    scores(pytester.path / "new.jsonl", {"spatial": set(range(22))})
    gated = pytester.runpytest("--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json")
    gated.assert_outcomes(failed=1)
    gated.stdout.fnmatch_lines(
        [
            "*REGRESSED relation/spatial: 63.3% (38/60, *) >= 50.0% (gate: regressed: dropped "
            "20.0 pts, significant (McNemar mid-p 0.00024 < alpha/m 0.05; 12 lost, 0 gained) "
            "vs baseline 83.3%) [[]new]*"
        ]
    )
    scores(pytester.path / "same.jsonl", {"spatial": set(range(10))})
    same = pytester.runpytest("--vl-model=new=scores:same.jsonl", "--vl-baseline=base.json")
    same.assert_outcomes(passed=1)


def test_xdist_loads_the_model_once_per_worker(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--vl-model=py:counting_model:make", "-n", "2", "--vl-report=rep", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=3, failed=1)
    counts = loads(project)
    assert 1 <= len(counts) <= 2 and set(counts.values()) == {1}
    doc = json.loads((project.path / "rep" / "matrix.json").read_text())
    assert [(r["file"], r["test"]) for r in doc["results"]] == [
        ("checks.yaml", "color"),
        ("test_capabilities.py", "test_color"),
        ("test_capabilities.py", "test_two_rows::easy"),
        ("test_capabilities.py", "test_two_rows::hard"),
    ]
