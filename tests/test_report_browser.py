"""report.html in a real browser: headless Chromium loads it without console errors and the
failing examples' thumbnails are ``<img>`` elements of the DOM (embedded as data URIs)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.report import read_matrix
from pytest_vlcheck.report.thumbnails import thumbnail_data_uris, thumbnail_names

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed and could not be: .ci/run installs Debian's chromium "
    "(apt-get install chromium) when it runs as root with apt; install it to run this test",
)

CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.9
    examples:
      - {id: r, image: red.png, caption: red, negatives: [green]}
      - {id: g, image: green.png, caption: red, negatives: [green]}
      - {id: s, image: {scene: {objects: [{shape: star, color: blue, position: [0.5, 0.5], size: 0.8}]}}, caption: red, negatives: [blue]}
  - id: pick
    capability: attribute/color
    task: image
    threshold: 1.0
    examples:
      - {text: green, image: red.png, distractors: [green.png]}
"""


def test_report_loads_in_chromium_with_thumbnails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", browser=CHECKLIST)
    Image.new("RGB", (200, 100), (220, 20, 20)).save(pytester.path / "red.png")
    Image.new("RGB", (100, 200), (20, 200, 20)).save(pytester.path / "green.png")
    run = pytester.runpytest("--vl-model=py:colour_model:make", "--vl-report=rep")
    run.assert_outcomes(failed=2)
    rep = pytester.path / "rep"
    _, results = read_matrix(rep / "matrix.json")
    expected = set(thumbnail_data_uris(rep, thumbnail_names(results)).values())
    assert len(expected) == 3  # green.png, the scene, red.png (the image task's two images)

    assert CHROMIUM is not None
    browser = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            (rep / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert browser.returncode == 0, browser.stderr[-2000:]
    console = [line for line in browser.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "report.html logged to the console:\n" + "\n".join(console)
    shown = set(re.findall(r'<img [^>]*src="(data:image/jpeg;base64,[^"]+)"', browser.stdout))
    assert shown == expected
