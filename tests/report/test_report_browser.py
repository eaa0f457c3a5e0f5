"""report.html in a real browser: headless Chromium loads it without console errors, the
failing examples' thumbnails are ``<img>`` elements of the DOM (embedded as data URIs), and a
README-sized run's verdict, matrix and marks are on the first screen, failing tests first."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.colour_scorer import SOURCE
from helpers.model_builders import write_colour_squares
from PIL import Image
from test_report import result, typed

from pytest_vlcheck.report import build_report, read_matrix
from pytest_vlcheck.report.html import render_html
from pytest_vlcheck.report.thumbnails import thumbnail_data_uris, thumbnail_names
from pytest_vlcheck.results import FailureExample
from pytest_vlcheck.results.run_meta import ModelMeta
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed and could not be: .ci/run installs Debian's chromium "
    "(apt-get install chromium) when it runs as root with apt; install it to run this test",
)

WINDOW = (1280, 900)


def _chromium(
    page: Path, *options: str, window: int = WINDOW[0]
) -> subprocess.CompletedProcess[str]:
    """Open ``page`` in headless Chromium, ``window`` px wide and ``WINDOW[1]`` high, with
    ``options`` (``--dump-dom``: the DOM on stdout; ``--screenshot=FILE``)."""
    assert CHROMIUM is not None
    browser = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={window},{WINDOW[1]}", *options, page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert browser.returncode == 0, browser.stderr[-2000:]
    return browser


def _probed(page: Path, script: str, pattern: str, window: int = WINDOW[0]) -> str:
    """What ``script``, run in a copy of ``page`` (the report itself runs none), writes into
    the DOM: ``pattern``'s group in the DOM ``--dump-dom`` prints."""
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"))
    found = re.search(pattern, _chromium(probe, "--dump-dom", window=window).stdout)
    assert found is not None, f"no {pattern} in the DOM"
    return found[1]


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

    page = rep / "report.html"
    browser = _chromium(page, "--enable-logging=stderr", "--v=0", "--dump-dom")
    console = [line for line in browser.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "report.html logged to the console:\n" + "\n".join(console)
    shown = set(re.findall(r'<img [^>]*src="(data:image/jpeg;base64,[^"]+)"', browser.stdout))
    assert shown == expected


def _page_width(page: Path, window: int) -> int:
    """``document.documentElement.scrollWidth`` of ``page`` in a ``window``-px-wide Chromium
    (a copy of the page with a probe script: the report itself runs none)."""
    script = (
        "<script>document.body.insertAdjacentHTML('beforeend', '<p id=\"probe\">' + "
        "document.documentElement.scrollWidth + '</p>')</script>"
    )
    return int(_probed(page, script, r'<p id="probe">(\d+)</p>', window))


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


# README's matrix of the bundled suite on tiny: (capability, test id, threshold, pass rate).
README_ROWS = [
    ("attribute/color", "color", 0.85, 0.958),
    ("attribute/color", "color_image", 0.80, 1.0),
    ("attribute/color", "color_jpeg_resize", 0.90, 0.979),
    ("attribute/size", "size", 0.65, 0.642),
    ("attribute/texture", "texture", 0.65, 0.60),
    ("attribute/state", "state", 0.65, 0.65),
    ("counting/number", "number", 0.70, 0.979),
    ("object/negation", "negation", 0.70, 0.458),
    ("object/existence", "occlusion", 0.90, 0.992),
    ("object/existence", "caption_paraphrase_typos", 0.80, 0.838),
    ("object/existence", "existence", 0.85, 0.979),
    ("object/existence", "existence_match", 0.65, 0.688),
    ("object/location", "location", 0.80, 0.996),
    ("object/size", "object_size", 0.75, 0.921),
    ("order/binding", "binding", 0.65, 0.517),
    ("order/binding", "binding_group", 0.30, 0.075),
    ("order/word_order", "word_order", 0.50, 0.25),
    ("order/word_order", "aro_shuffle", 0.80, 0.342),
    ("relation/spatial", "spatial", 0.65, 0.671),
    ("relation/spatial", "spatial_replaced", 0.70, 0.413),
]
_FAILED_RED = (248, 215, 218)  # .st-failed's background: the FAILED headline, failing cells


def _readme_sized_report(folder: Path) -> Path:
    """report.html of README's run (20 tests, 8 failing, each with slices and 5 failing
    examples: a page many screens long) rendered as a run writes it."""
    rows = []
    for capability, test, threshold, rate in README_ROWS:
        passed = round(rate * 240)
        failures = [
            FailureExample(id=f"{test}-{i}", images=[f"img/{i}.png"],
                           texts=["a red cube", "a blue cube"], scores=[[0.21, 0.26]],
                           detail="")
            for i in range(5 if passed < threshold * 240 else 0)
        ]  # fmt: skip
        status = "passed" if passed >= threshold * 240 else "failed"
        slices = {"color": {c: {"n": 40, "passed": 30, "rate": 0.75} for c in "rgbcmy"}}
        rows.append(result("tiny", test, capability, 240, passed, status, threshold=threshold,
                           failures=failures, slices=slices))  # fmt: skip
    models = [ModelMeta("tiny", "tiny", "f00d")]
    page = folder / "report.html"
    page.write_text(render_html(build_report(models, typed(rows))), encoding="utf-8")
    return page


def _layout(page: Path) -> dict:
    """Where the headline, the matrix, its marks line and the tests' sections are (CSS px from
    the page's top) in a ``WINDOW``-sized Chromium: a copy of the page with a probe script
    writes them into the DOM, which ``--dump-dom`` prints (the report itself runs none)."""
    script = """<script>
const bottom = (e) => e.getBoundingClientRect().bottom + window.scrollY;
const matrix = document.querySelector('table.matrix');
const marks = [...document.querySelectorAll('p.meta')].find((p) => p.textContent.startsWith('marks:'));
const found = {headline: bottom(document.querySelector('p.headline')), matrix: bottom(matrix),
  marks: bottom(marks), sections: [...document.querySelectorAll('section')].map((s) => s.id),
  height: document.documentElement.scrollHeight};
const out = document.createElement('pre');
out.id = 'probe';
out.textContent = JSON.stringify(found);
document.body.appendChild(out);
</script>"""
    return json.loads(_probed(page, script, r'<pre id="probe">(.*?)</pre>'))


def test_the_verdict_and_the_matrix_are_on_the_first_screen(tmp_path: Path) -> None:
    """README's run: the FAILED headline, the whole 20-row matrix and its marks line fit a
    1280 x 900 window of a page several screens long, the failing tests' sections come
    first; and the screenshot shows the red headline in the first screen's top."""
    page = _readme_sized_report(tmp_path)
    layout = _layout(page)
    assert layout["height"] > 3 * WINDOW[1]  # a long page: what the first screen holds matters
    assert layout["headline"] < 150
    assert layout["matrix"] <= layout["marks"] <= WINDOW[1]
    failing = [
        f"t{i}" for i, row in enumerate(README_ROWS, 1) if round(row[3] * 240) < row[2] * 240
    ]
    assert len(failing) == 8  # the sections' anchors number the tests in matrix order
    assert layout["sections"][:8] == failing
    assert layout["sections"][8:] == [f"t{i}" for i in range(1, 21) if f"t{i}" not in failing]

    shot = tmp_path / "first-screen.png"
    _chromium(page, f"--screenshot={shot}")
    with Image.open(shot) as image:
        assert image.size == WINDOW
        top = image.convert("RGB").crop((0, 0, WINDOW[0], int(layout["headline"]) + 1))
        red = {colour: n for n, colour in top.getcolors(top.width * top.height)}.get(_FAILED_RED, 0)
    assert red > 1000, "the FAILED headline's red band is not in the screenshot's top"
