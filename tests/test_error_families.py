"""Every family of user mistake (issue 8), end to end through pytest: one exact message, no
traceback of vlcheck's, the exit code, and an earlier report and baseline left intact when the
run is refused (usage errors), or a report that records the errors when collection fails.

One good run per module writes the report and baseline every case starts from; every case
runs pytest in-process (torch and open_clip are imported once per test process:
tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.cli import main
from pytest_vlcheck.model_required import MODEL_NOT_LOADED

CHECKLIST = """\
vlcheck: 1
image_root: images
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {id: r, image: red.png, caption: a red square, negatives: [a blue square]}
      - {id: b, image: blue.png, caption: a blue square, negatives: [a red square]}
"""
GOOD = ("--vl-model=py:colour_model:make", "--vl-report=rep", "--vl-save-baseline=base.json")
KEPT = ("rep/matrix.json", "rep/matrix.md", "rep/matrix.csv", "rep/report.html", "base.json")

OK, FAILED, INTERRUPTED, USAGE = 0, 1, 2, 4
NOT_LOADED = MODEL_NOT_LOADED  # a model that failed to load (tests/test_log_lines.py)


@pytest.fixture(scope="module")
def good_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checklist, its images and scorer, and the report and baseline of a good run."""
    root = tmp_path_factory.mktemp("good")
    (root / "images").mkdir()
    for name, rgb in {"red": (220, 20, 20), "blue": (20, 20, 220)}.items():
        Image.new("RGB", (16, 16), rgb).save(root / "images" / f"{name}.png")
    (root / "colour_model.py").write_text(SOURCE)
    (root / "checks.yaml").write_text(CHECKLIST)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *GOOD],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == OK, done.stdout + done.stderr
    return root


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels with next to no data: a
    decompression bomb as far as its header goes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00"))
        + chunk(b"IEND", b"")
    )


def _truncated_png(root: Path) -> bytes:
    return (root / "images" / "red.png").read_bytes()[:45]


def _symlink_loop(root: Path) -> None:
    (root / "images" / "blue.png").unlink()
    (root / "images" / "blue.png").symlink_to(root / "images" / "blue.png")


SCORER = """
import numpy as np

class Scorer:
    def encode_images(self, images):
        return np.ones((len(images), 3))
    def encode_texts(self, texts):
        return np.ones((len(texts), 3))

class WrongShape(Scorer):
    def encode_texts(self, texts):
        return np.ones((len(texts) + 1, 3))

class Pairs:
    def score_pairs(self, images, texts):
        return np.ones((len(images), 2))

def load_checkpoint():
    raise RuntimeError("checkpoint missing")

def raises():
    load_checkpoint()

def wrong_shape():
    return WrongShape()

def pairs_2d():
    return Pairs()

def nothing():
    return object()

class Words(Scorer):
    def encode_texts(self, texts):
        return [["a", "b", "c"] for _ in texts]

def words():
    return Words()
"""


@dataclass
class Case:
    """One mistake: files to write (text, bytes, or a function of the project root), the
    pytest arguments, the exit code and the lines that must appear (``{root}`` is the
    project)."""

    args: tuple[str, ...]
    ret: int
    lines: tuple[str, ...]
    files: dict[str, str | bytes | Callable[[Path], object]] = field(default_factory=dict)
    user_traceback: bool = False


BLUE_AT = "{root}/checks.yaml:10: blue.png: "
CASES: dict[str, Case] = {
    # --- model specs and the user's own scorer --------------------------------------------
    "spec unknown scheme": Case(
        ("--vl-model=foo:bar",),
        USAGE,
        (
            "ERROR: --vl-model: unknown model 'foo:bar'; expected one of clip, tiny, tiny-vlm, "
            "open_clip:..., hf:..., vqa:..., scores:..., py:..., or a model registered in the "
            "'pytest_vlcheck.models' entry-point group",
        ),
    ),
    "spec folder missing": Case(
        ("--vl-model=hf:/does/not/exist", "--vl-model=open_clip:ViT-B-32@/no/such.safetensors"),
        USAGE,
        (
            "ERROR: --vl-model: hf:/does/not/exist: model directory not found: /does/not/exist; "
            "expected a directory written by save_pretrained, or a hub name ORG/NAME",
        ),
    ),
    "spec weights missing": Case(
        ("--vl-model=open_clip:ViT-B-32@/no/such.safetensors",),
        USAGE,
        (
            "ERROR: --vl-model: open_clip:ViT-B-32@/no/such.safetensors: weights file not found: "
            "/no/such.safetensors; expected an existing weights file (.safetensors preferred) "
            "or a pretrained tag",
        ),
    ),
    "py factory raises": Case(
        ("--vl-model=py:user_scorers:raises",),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': cannot load model 'py:user_scorers:raises': "
            "the factory raises() raised RuntimeError: checkpoint missing",
            "Traceback (most recent call last; your code only):",
            '  File "{root}/user_scorers.py", line 22, in raises',
            '  File "{root}/user_scorers.py", line 19, in load_checkpoint',
            "RuntimeError: checkpoint missing",
        ),
        {"user_scorers.py": SCORER},
        user_traceback=True,
    ),
    "py wrong shapes": Case(
        ("--vl-model=py:user_scorers:wrong_shape",),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': model 'py:user_scorers:wrong_shape': encode_texts returned an "
            "array of shape [3, 3] for 2 inputs; expected shape [2, D] (one embedding per "
            "input)",
        ),
        {"user_scorers.py": SCORER},
    ),
    "py 2-D score_pairs": Case(
        ("--vl-model=py:user_scorers:pairs_2d",),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': model 'py:user_scorers:pairs_2d': "
            "score_pairs returned an array of shape [4, 2] for 4 inputs; expected shape [4] (one "
            "score per pair)",
        ),
        {"user_scorers.py": SCORER},
    ),
    "py not numbers": Case(
        ("--vl-model=py:user_scorers:words",),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': model 'py:user_scorers:words': encode_texts "
            "returned list, not numbers (could not convert string to float: 'a'); expected a "
            "numpy array, torch tensor or list of numbers",
        ),
        {"user_scorers.py": SCORER},
    ),
    "py no methods": Case(
        ("--vl-model=py:user_scorers:nothing",),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': model 'py:user_scorers:nothing' gave an object "
            "object, which is not a scorer; expected an object "
            "with encode_images + encode_texts (a dual encoder), score_pairs, score_refs or the "
            "generative methods (score_continuations, next_token_logprobs, generate)",
        ),
        {"user_scorers.py": SCORER},
    ),
    # --- images -----------------------------------------------------------------------------
    "image missing": Case(
        (GOOD[0],),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': 1 image(s) of 1 example(s) could not be "
            "loaded (use --vl-missing=skip to score the rest):",
            BLUE_AT + "file not found: {root}/images/blue.png",
        ),
        {"images/blue.png": lambda root: (root / "images" / "blue.png").unlink()},
    ),
    "image corrupt": Case(
        (GOOD[0],),
        FAILED,
        (
            BLUE_AT + "cannot decode {root}/images/blue.png: not an image format Pillow reads "
            "(or a corrupt file)",
        ),
        {"images/blue.png": b"not an image at all"},
    ),
    "image undecodable": Case(
        (GOOD[0],),
        FAILED,
        (BLUE_AT + "cannot decode {root}/images/blue.png: *",),
        {"images/blue.png": _truncated_png},
    ),
    "image symlink loop": Case(
        (GOOD[0],),
        FAILED,
        (BLUE_AT + "symlink loop: {root}/images/blue.png never reaches a file",),
        {"images/blue.png": _symlink_loop},
    ),
    "crop outside the image": Case(
        (GOOD[0],),
        FAILED,
        (
            "{root}/checks.yaml:10: blue.png crop=[40.0, 0.0, 5.0, 5.0]: crop [40.0, 0.0, 5.0, "
            "5.0] lies outside the 16x16 image blue.png; expected a box [x, y, w, h] that "
            "overlaps it",
        ),
        {
            "checks.yaml": CHECKLIST.replace(
                "image: blue.png", "image: {path: blue.png, crop: [40, 0, 5, 5]}"
            )
        },
    ),
    "decompression bomb": Case(
        (GOOD[0],),
        FAILED,
        (
            BLUE_AT + "image too large to decode safely (400,000,000 pixels, over the limit of "
            "89,478,485 pixels that guards against decompression bombs); raise the limit with "
            "--vl-max-image-pixels=N",
        ),
        {"images/blue.png": _png_header(20000, 20000)},
    ),
    "image pixel limit option": Case(
        (GOOD[0], "--vl-max-image-pixels=200"),
        FAILED,
        (
            "{root}/checks.yaml:9: red.png: image too large to decode safely (16x16 = 256 "
            "pixels, over the limit of 200 pixels that guards against decompression bombs); "
            "raise the limit with --vl-max-image-pixels=N",
        ),
    ),
    # --- score files ------------------------------------------------------------------------
    "score file bad line": Case(
        ("--vl-model=scores:s.jsonl",),
        NOT_LOADED,
        ("{root}/checks.yaml:4: test 'color': *s.jsonl:2: 'text' must be a string",),
        {"s.jsonl": '{"image": "red.png", "text": "a red square", "score": 1}\n{"image": "x"}\n'},
    ),
    "score file missing pair": Case(
        ("--vl-model=scores:s.jsonl",),
        FAILED,
        ("*s.jsonl has no score for image 'red.png' with text 'a blue square'*",),
        {"s.jsonl": '{"image": "red.png", "text": "a red square", "score": 1}\n'},
    ),
    "score file missing": Case(
        ("--vl-model=scores:nofile.jsonl",),
        USAGE,
        (
            "ERROR: --vl-model: scores:nofile.jsonl: scores file not found (looked for "
            "{root}/nofile.jsonl); expected a JSON Lines file of {image, text, score} lines",
        ),
    ),
    "score file a folder": Case(
        ("--vl-model=scores:images",),
        USAGE,
        ("*scores:images: scores file is a directory (looked for {root}/images)*",),
    ),
    "score file bad crop": Case(
        ("--vl-model=scores:s.jsonl",),
        NOT_LOADED,
        ("*s.jsonl:1: a crop must be four numbers [x, y, w, h], got ['a', 1, 2, 3]",),
        {"s.jsonl": '{"image": "red.png", "text": "red", "score": 1, "crop": ["a", 1, 2, 3]}\n'},
    ),
    # --- options and ini values -------------------------------------------------------------
    "device missing": Case(
        ("--vl-model=tiny", "--vl-device=cuda:7"),
        NOT_LOADED,
        (
            "{root}/checks.yaml:4: test 'color': cannot load model 'tiny': device 'cuda:7' "
            "(--vl-device) requested but CUDA is not available on this machine; expected one "
            "of: auto, cpu",
        ),
    ),
    "precision ini": Case(
        (GOOD[0],),
        USAGE,
        ("ERROR: vl_precision is 'fp8'; expected one of ('fp32', 'fp16', 'bf16')",),
        {"tox.ini": "[pytest]\nvl_precision = fp8\n"},
    ),
    "batch size ini": Case(
        (GOOD[0],),
        USAGE,
        ("ERROR: vl_batch_size (ini) is 'abc'; expected a whole number from 1 to 65536, or auto",),
        {"tox.ini": "[pytest]\nvl_batch_size = abc\n"},
    ),
    "batch size 0": Case(
        (GOOD[0], "--vl-batch-size=0"),
        USAGE,
        ("ERROR: --vl-batch-size is 0; expected a whole number from 1 to 65536, or auto",),
    ),
    "report folder unwritable": Case(
        (GOOD[0], "--vl-report=base.json"),
        USAGE,
        (
            "ERROR: --vl-report base.json: cannot write there (File exists); expected a writable folder",
        ),
    ),
    "report thumbnails a file": Case(
        (GOOD[0], "--vl-report=other"),
        USAGE,
        (
            "ERROR: --vl-report other: other/thumbnails is a file; expected the report's "
            "thumbnail folder, or nothing there",
        ),
        {"other": lambda root: (root / "other").mkdir(), "other/thumbnails": "notes"},
    ),
    "report file a folder": Case(
        (GOOD[0], "--vl-report=other"),
        USAGE,
        (
            "ERROR: --vl-report other: other/matrix.json is a folder; expected the report "
            "file of that name, or nothing there",
        ),
        {"other/matrix.json": lambda root: (root / "other/matrix.json").mkdir(parents=True)},
    ),
    "baseline folder unwritable": Case(
        (GOOD[0], "--vl-save-baseline=base.json/new.json"),
        USAGE,
        (
            "ERROR: --vl-save-baseline base.json/new.json: cannot write there (File exists); "
            "expected a writable folder",
        ),
    ),
    "baseline to merge into is not a baseline": Case(
        (GOOD[0], "--vl-save-baseline=rep/matrix.md"),
        USAGE,
        (
            "ERROR: --vl-save-baseline: rep/matrix.md:1: invalid JSON: Expecting value "
            "(column 1); expected a baseline file to merge into, or a new path",
        ),
    ),
    # --- checklist files --------------------------------------------------------------------
    "non-UTF-8 checklist": Case(
        (GOOD[0],),
        INTERRUPTED,
        ("{root}/checks.yaml:9: not UTF-8 text (byte 0xe9 at column 53); save the file as UTF-8",),
        {"checks.yaml": CHECKLIST.replace("a red square,", "a red squar\xe9,").encode("latin-1")},
    ),
    "bad YAML": Case(
        (GOOD[0],),
        INTERRUPTED,
        ("{root}/checks.yaml:10: invalid YAML: did not find expected ',' or ']'",),
        {"checks.yaml": CHECKLIST.replace("negatives: [a blue square]}", "negatives: [a blue")},
    ),
    "every error of a file": Case(
        (GOOD[0],),
        INTERRUPTED,
        (
            "{root}/checks.yaml:5: 'capability' is 'Color'; expected lowercase segments joined "
            "by '/', e.g. attribute/color",
            "{root}/checks.yaml:7: 'threshold' is 1.5; expected a number from 0 to 1",
            *(
                f"{{root}}/checks.yaml:{11 + i}: 'negatives' has 0 items; expected at least 1"
                for i in range(8)
            ),
            "... and 2 more",
        ),
        {
            "checks.yaml": CHECKLIST.replace("attribute/color", "Color").replace("0.5", "1.5")
            + "".join(
                f"      - {{image: red.png, caption: c{i}, negatives: []}}\n" for i in range(10)
            )
        },
    ),
    "cutoff outside [-1, 1]": Case(
        (GOOD[0],),
        INTERRUPTED,
        (
            "{root}/checks.yaml:7: 'cutoff' is 2; expected a number from -1 to 1 (a cosine "
            "similarity; from 0 to 1 for a model that gives probabilities)",
        ),
        {
            "checks.yaml": CHECKLIST.split("    examples:")[0].replace(
                "caption", "match\n    cutoff: 2"
            )
            + "    examples:\n      - {image: red.png, caption: red, label: match}\n"
        },
    ),
    "negative cutoff for probabilities": Case(
        ("--vl-model=scores:s.jsonl",),
        FAILED,
        (
            "{root}/checks.yaml:4: test 'color': 'cutoff' is -0.5, but this model gives "
            "probabilities, which every pair would reach; expected a cutoff from 0 to 1 for it "
            "(a negative cut-off is for cosine similarities)",
        ),
        {
            "checks.yaml": CHECKLIST.split("    examples:")[0].replace(
                "caption", "match\n    cutoff: -0.5"
            )
            + "    examples:\n      - {image: red.png, caption: red, label: match}\n",
            "s.jsonl": '{"image": "red.png", "text": "red", "score": 0.9}\n',
        },
    ),
    "infinite number in JSON Lines": Case(
        (GOOD[0],),
        INTERRUPTED,
        ("{root}/ex.jsonl:2: 'crop' is [0, 0, .inf (infinite), 4]; expected four finite numbers",),
        {
            "checks.yaml": CHECKLIST.split("    examples:")[0] + "    examples: ex.jsonl\n",
            "ex.jsonl": '{"image": "red.png", "caption": "red", "negatives": ["blue"]}\n'
            '{"image": {"path": "red.png", "crop": [0, 0, Infinity, 4]}, "caption": "red", '
            '"negatives": ["blue"]}\n',
        },
    ),
    "YAML without the header named": Case(
        (GOOD[0], "notes.yaml"),
        INTERRUPTED,
        (
            "{root}/notes.yaml:1: not a checklist: the 'vlcheck: 1' header is missing; expected "
            "a top-level 'vlcheck: 1' line within the first 4096 bytes, then 'tests:'",
        ),
        {"notes.yaml": CHECKLIST.replace("vlcheck: 1\n", "")},
    ),
}


def _write(root: Path, files: dict[str, str | bytes | Callable[[Path], object]]) -> None:
    for name, content in files.items():
        if callable(content):
            content = content(root)
            if content is None:
                continue
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def _kept(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in KEPT}


@pytest.mark.parametrize("name", list(CASES))
def test_error_family(
    name: str, good_project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[name]
    root = pytester.path
    shutil.copytree(good_project, root, dirs_exist_ok=True, symlinks=True)
    before = _kept(root)
    _write(root, case.files)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)
    pytester.syspathinsert()
    # no embedding cache: each mistake must be met while decoding, as on a first run
    result = pytester.runpytest("-p", "no:cacheprovider", "--vl-no-cache", *GOOD[1:], *case.args)
    output = result.stdout.lines + result.stderr.lines
    text = "\n".join(output)
    assert result.ret == case.ret, text
    for line in case.lines:
        pattern = line.replace("{root}", str(root))
        assert any(_matches(candidate, pattern) for candidate in output), (pattern, text)
    assert "pytest_vlcheck/" not in text and "INTERNALERROR" not in text
    assert text.count("Traceback") == (1 if case.user_traceback else 0), text
    if case.ret == USAGE:
        assert _kept(root) == before  # a run refused before it starts leaves every file
        assert sorted(p.name for p in (root / "rep").iterdir()) == sorted(
            [
                *{Path(n).name for n in KEPT if n.startswith("rep/")},
                "samples.jsonl",
                "manifest.json",
            ]
        )
    elif case.ret == INTERRUPTED:  # stopped by collection errors: the report says which
        assert _kept(root)["base.json"] == before["base.json"]
        errors = json.loads((root / "rep" / "matrix.json").read_text())["errors"]
        reported = {f"{root}/{e['file']}:{e['line']}: {e['message']}" for e in errors}
        first = case.lines[0].replace("{root}", str(root))
        assert any(_matches(line, first) for line in reported), (first, reported)
    elif case.ret == FAILED:
        rows = json.loads((root / "rep" / "matrix.json").read_text())["results"]
        assert rows and {row["status"] for row in rows} == {"error"}


def _matches(candidate: str, pattern: str) -> bool:
    """``candidate`` is ``pattern`` where ``*`` stands for any text (nothing else is special),
    both without indentation."""
    candidate, pattern = candidate.strip(), pattern.strip()
    regex = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern))
    return re.fullmatch(regex, candidate) is not None


def test_a_bom_checklist_runs_like_any_other(good_project: Path, pytester: pytest.Pytester) -> None:
    shutil.copytree(good_project, pytester.path, dirs_exist_ok=True)
    (pytester.path / "checks.yaml").write_bytes(b"\xef\xbb\xbf" + CHECKLIST.encode())
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:cacheprovider", GOOD[0])
    result.assert_outcomes(passed=1)


def test_validate_reports_every_error_and_every_bad_image(
    good_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(good_project, tmp_path, dirs_exist_ok=True)
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        CHECKLIST.replace("0.5", "7").replace("a blue square]}", "]}")
        + "  - id: color\n    capability: x\n    task: caption\n    threshold: 1\n"
        "    generate: {}\n"
    )
    (tmp_path / "images" / "blue.png").write_bytes(b"junk")
    extra = (
        "      - {id: c, image: {path: red.png, crop: [99, 0, 1, 1]}, caption: c, negatives: [d]}\n"
    )
    (tmp_path / "checks.yaml").write_text(CHECKLIST + extra)
    assert main(["validate", "--images", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"{broken}:7: 'threshold' is 7; expected a number from 0 to 1",
        f"{broken}:9: 'negatives' has 0 items; expected at least 1",
        f"{broken}:15: generate: n: expected the number of examples, an integer 1-100000, got None",
        f"{tmp_path}/checks.yaml:10: blue.png: cannot decode {tmp_path}/images/blue.png: not an "
        "image format Pillow reads (or a corrupt file)",
        f"{tmp_path}/checks.yaml:11: red.png crop=[99.0, 0.0, 1.0, 1.0]: crop [99.0, 0.0, 1.0, "
        "1.0] lies outside the 16x16 image red.png; expected a box [x, y, w, h] that overlaps it",
    ]
    assert out == f"{tmp_path}/checks.yaml: 1 test, 3 examples, 3 image files checked, 2 unusable\n"
    assert "Traceback" not in out + err


def test_a_run_that_collects_no_checklist_says_how_they_are_recognised(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", notes="title: not a checklist\n")  # not named: not collected
    result = pytester.runpytest("-p", "no:cacheprovider", "--vl-model=py:colour_model:make")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "vlcheck: no checklist was collected. A checklist is a .yaml or .yml file whose "
            "first key is 'vlcheck: 1' (then 'tests:'); pass its file or folder to pytest, or "
            "--vl-bundled for the shipped suite ('vlcheck validate PATH' says why a file is "
            "not one)."
        ]
    )
