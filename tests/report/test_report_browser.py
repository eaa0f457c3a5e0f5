"""report.html in a real browser: headless Chromium loads it without console errors and the
failing examples' thumbnails are ``<img>`` elements of the DOM (embedded as data URIs)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.colour_scorer import SOURCE
from helpers.model_builders import write_colour_squares
from PIL import Image

from pytest_vlcheck.report import read_matrix
from pytest_vlcheck.report.thumbnails import thumbnail_data_uris, thumbnail_names
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS

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


def _page_width(page: Path, window: int) -> int:
    """``document.documentElement.scrollWidth`` of ``page`` in a ``window``-px-wide Chromium
    (a copy of the page with a probe script: the report itself runs none)."""
    probe = page.with_name("probe.html")
    script = (
        "<script>document.body.insertAdjacentHTML('beforeend', '<p id=\"probe\">' + "
        "document.documentElement.scrollWidth + '</p>')</script></body>"
    )
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script))
    assert CHROMIUM is not None
    browser = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={window},900", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert browser.returncode == 0, browser.stderr[-2000:]
    found = re.search(r'<p id="probe">(\d+)</p>', browser.stdout)
    assert found is not None, browser.stdout[-2000:]
    return int(found[1])


def test_report_fits_a_1280_px_window_with_a_three_checkpoint_glob(
    pytester: pytest.Pytester,
) -> None:
    """Three checkpoints with long paths (specs of 200+ characters) and their 81-character
    fingerprints: the Models table wraps the specs and shortens the fingerprints (whole on
    hover), the matrix wraps the test ids, so no table is wider than the window."""
    write_colour_squares(pytester.path)
    folder = pytester.path / "runs" / "clip-finetune-on-the-colour-squares-lr-1e-5" / "ckpts"
    folder.mkdir(parents=True)
    for step in (1000, 2000, 3000):
        shutil.copy(TINY_WEIGHTS, folder / f"checkpoint_epoch_{step}_of_a_long_run.safetensors")
    spec = f"--vl-model=open_clip:{TINY_CONFIG}@{folder}/checkpoint_epoch_*.safetensors"
    result = pytester.runpytest(spec, "--vl-report=rep", "--vl-no-cache", "-p", "no:cacheprovider")
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    rep = pytester.path / "rep"
    models, _ = read_matrix(rep / "matrix.json")
    assert len(models) == 3 and all(len(m.spec or "") > 150 for m in models)
    assert all(len(m.fingerprint or "") >= 80 for m in models)
    assert _page_width(rep / "report.html", 1280) <= 1280
    html = (rep / "report.html").read_text(encoding="utf-8")
    assert f'title="{models[0].fingerprint}"' in html  # the whole fingerprint on hover
