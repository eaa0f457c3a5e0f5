"""The embedding cache never changes an answer: rows filed under a fingerprint that other
weights reused are refused with one line naming the cache, and an image over
``--vl-max-image-pixels`` is refused whether or not its embedding is cached."""

from __future__ import annotations

import json

import pytest
from PIL import Image

CHECKLIST = """\
vlcheck: 1
tests:
  - id: colours
    capability: attribute/color
    task: caption
    threshold: 0
    examples:
      - {image: red.png, caption: a red square, negatives: [a blue square]}
      - {image: big.png, caption: a big square, negatives: [a red square]}
"""

# The factory declares one fingerprint whatever width WIDTH asks for: the user's mistake.
SCORER = """
import os

import numpy as np


class Dual:
    fingerprint = "fixed-v1"

    def _pad(self, rows):
        width = int(os.environ.get("WIDTH", "3"))
        out = np.zeros((len(rows), width), dtype=np.float32)
        out[:, :3] = rows
        return out

    def encode_images(self, images):
        return self._pad([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(0) for im in images])

    def encode_texts(self, texts):
        return self._pad([[len(t) % 7 + 1.0, t.count("e") + 1.0, 1.0] for t in texts])


def make():
    return Dual()


make.vlcheck_fingerprint = "fixed-v1"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    Image.new("RGB", (16, 16), (250, 5, 5)).save(pytester.path / "red.png")
    Image.new("RGB", (40, 40), (5, 5, 250)).save(pytester.path / "big.png")
    pytester.makefile(".yaml", c=CHECKLIST)
    pytester.makepyfile(width_scorer=SCORER)
    pytester.syspathinsert()
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    cache = f"--vl-cache-dir={pytester.path / 'cache'}"
    return pytester.runpytest("--vl-model=m=py:width_scorer:make", cache, *args)


def test_rows_of_another_width_under_one_fingerprint_stop_the_run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(project).assert_outcomes(passed=1)
    monkeypatch.setenv("WIDTH", "5")
    (project.path / "c.yaml").write_text(CHECKLIST.replace("a big square", "a large square"))
    result = _run(project)
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    cache = project.path / "cache" / "embeddings.sqlite3"
    assert (
        f"{cache}: the embedding cache holds 3-d and 5-d embeddings for model "
        "'py:width_scorer:make' (cached first, then computed)"
    ) in text
    assert f"delete {cache} or run with --vl-no-cache" in text and "Traceback" not in text
    _run(project, "--vl-no-cache").assert_outcomes(passed=1)


def test_an_image_over_the_pixel_limit_is_refused_cached_or_not(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)  # process-wide
    _run(project).assert_outcomes(passed=1)  # big.png (1,600 pixels) is now cached
    limit = "--vl-max-image-pixels=1000"
    cached = _run(project, limit, "--vl-report=cached")
    cached.assert_outcomes(errors=1)
    assert "image too large to decode safely (40x40 = 1,600 pixels" in cached.stdout.str()
    _run(project, limit, "--vl-no-cache", "--vl-report=uncached").assert_outcomes(errors=1)
    rows = [
        json.loads((project.path / name / "matrix.json").read_text())["results"]
        for name in ("cached", "uncached")
    ]
    assert rows[0] == rows[1] and rows[0][0]["status"] == "error"
