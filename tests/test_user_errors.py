"""Every user mistake below the pytest layer is one exception with one complete message.

Unit level: the error hierarchy, ``py:`` factories, scorer protocol checks, images and
checklist files. Each test asserts the exact message and that no traceback text leaks in.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_vlcheck.checklist import ChecklistError, is_checklist_file, load_checklist
from pytest_vlcheck.errors import (
    ImageError,
    ModelLoadError,
    ScorerProtocolError,
    UserCodeError,
    VlcheckUserError,
)
from pytest_vlcheck.images.loading import ImageLoader, open_rgb, set_max_image_pixels
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.models import registry
from pytest_vlcheck.models.backends.custom import factory_arguments
from pytest_vlcheck.models.protocol import ModelOptions, check_rows, check_scorer
from pytest_vlcheck.parsing.fields import type_name
from pytest_vlcheck.parsing.yaml_lines import (
    LineList,
    LineMap,
    checklist_header_problem,
)

OPTIONS = ModelOptions(device="cpu", batch_size=8)


def no_traceback(text: str) -> bool:
    return "Traceback" not in text and 'File "' not in text


# --- the hierarchy ------------------------------------------------------------------------


def test_old_names_are_the_new_user_errors():
    assert registry.ModelLoadError is ModelLoadError
    assert issubclass(registry.ModelSpecError, VlcheckUserError)
    assert issubclass(ChecklistError, VlcheckUserError)
    assert issubclass(ChecklistError, ValueError)  # callers that caught ValueError still do
    assert issubclass(ImageUnavailable, ImageError)
    assert ImageUnavailable("gone").reason == "gone"


def _raise_in_user_code() -> None:
    raise KeyError("weights")


def test_user_code_error_keeps_only_the_users_frames():
    try:
        _raise_in_user_code()
    except KeyError as exc:
        error = UserCodeError.from_exception(exc, "py:m:make: the factory make()")
    assert str(error) == "py:m:make: the factory make() raised KeyError: 'weights'"
    rendered = error.render().splitlines()
    assert rendered[0] == str(error)
    assert rendered[1] == "Traceback (most recent call last; your code only):"
    assert "_raise_in_user_code" in error.render()
    assert rendered[-1] == "KeyError: 'weights'"
    assert "pytest_vlcheck/errors.py" not in error.render()


# --- py: factories ------------------------------------------------------------------------


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


SCORER = """
    class Scorer:
        def __init__(self, options=None):
            self.options = options
        def encode_images(self, images):
            return [[1.0, 0.0] for _ in images]
        def encode_texts(self, texts):
            return [[1.0, 0.0] for _ in texts]
"""


@pytest.mark.parametrize(
    ("factory", "gets_options"),
    [
        ("def make():\n    return Scorer()", False),
        ("def make(**kwargs):\n    return Scorer(kwargs or None)", False),
        ("def make(*args):\n    return Scorer(args or None)", False),
        ("def make(options):\n    return Scorer(options)", True),
        ("def make(opts=None):\n    return Scorer(opts)", True),
        ("def make(*, options):\n    return Scorer(options)", True),
    ],
)
def test_factories_get_options_only_when_they_declare_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factory: str, gets_options: bool
):
    name = _module(tmp_path, monkeypatch, "fac_rule", textwrap.dedent(SCORER) + factory + "\n")
    scorer = registry.load_scorer(registry.parse_spec(f"py:{name}:make"), OPTIONS)
    assert scorer.options == (OPTIONS if gets_options else None)


def test_a_factory_needing_two_arguments_is_refused():
    def make(options, extra):  # pragma: no cover - never called
        raise AssertionError

    with pytest.raises(ModelLoadError) as info:
        factory_arguments(make, OPTIONS, "py:m:make")
    assert str(info.value) == (
        "py:m:make: the factory needs the argument(s) extra; expected a factory taking no "
        "argument, or one (the ModelOptions: device, batch_size, precision)"
    )


def test_a_factory_that_raises_is_user_code_with_its_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    source = """
        def helper():
            raise RuntimeError("checkpoint missing")

        def make():
            helper()
    """
    name = _module(tmp_path, monkeypatch, "fac_raises", source)
    with pytest.raises(UserCodeError) as info:
        registry.load_scorer(registry.parse_spec(f"py:{name}:make"), OPTIONS)
    assert str(info.value) == (
        "cannot load model 'py:fac_raises:make': the factory make() raised RuntimeError: "
        "checkpoint missing"
    )
    rendered = info.value.render()
    frames = [line for line in rendered.splitlines() if line.lstrip().startswith("File ")]
    assert len(frames) == 2  # make() and helper(): nothing of vlcheck or importlib
    assert all("fac_raises.py" in frame for frame in frames)


def test_a_module_that_does_not_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    name = _module(tmp_path, monkeypatch, "fac_syntax", "def make(:\n    pass\n")
    with pytest.raises(UserCodeError) as info:
        registry.load_scorer(registry.parse_spec(f"py:{name}:make"), OPTIONS)
    assert str(info.value).startswith(
        "cannot load model 'py:fac_syntax:make': importing 'fac_syntax' raised SyntaxError:"
    )
    assert "fac_syntax.py" in info.value.render()
    assert "importlib" not in info.value.render()


def test_a_module_that_is_not_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelLoadError) as info:
        registry.load_scorer(registry.parse_spec("py:no_such_scorers:make"), OPTIONS)
    assert str(info.value) == (
        f"cannot load model 'py:no_such_scorers:make': no module named 'no_such_scorers' in the current directory "
        f"({os.getcwd()}) or on sys.path; expected MODULE to be an importable module, e.g. "
        "my_scorers for ./my_scorers.py"
    )


def test_a_module_whose_own_import_fails_is_user_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    name = _module(tmp_path, monkeypatch, "fac_dep", "import not_installed_dep\n")
    with pytest.raises(UserCodeError) as info:
        registry.load_scorer(registry.parse_spec(f"py:{name}:make"), OPTIONS)
    assert str(info.value) == (
        "cannot load model 'py:fac_dep:make': importing 'fac_dep' raised ModuleNotFoundError: "
        "No module named 'not_installed_dep'"
    )


def test_missing_factory_and_no_scorer_methods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    source = """
        class Half:
            def encode_images(self, images):
                return []

        def half():
            return Half()
    """
    name = _module(tmp_path, monkeypatch, "fac_half", source)
    with pytest.raises(ModelLoadError) as missing:
        registry.load_scorer(registry.parse_spec(f"py:{name}:nope"), OPTIONS)
    assert str(missing.value) == (
        f"cannot load model 'py:fac_half:nope': 'nope' in module 'fac_half' ({tmp_path / 'fac_half.py'}) does not "
        "exist; expected a function or class returning a scorer"
    )
    with pytest.raises(ScorerProtocolError) as half:
        registry.load_scorer(registry.parse_spec(f"py:{name}:half"), OPTIONS)
    assert str(half.value) == (
        "model 'py:fac_half:half' gave a Half object (it has only encode_images), which is "
        "not a scorer; expected an object with encode_images + encode_texts (a dual "
        "encoder), score_pairs, score_refs or the generative methods (score_continuations, "
        "next_token_logprobs, generate)"
    )


# --- scorer protocol ----------------------------------------------------------------------


def test_check_scorer_accepts_each_kind_of_scorer():
    class Pairs:
        def score_pairs(self, images, texts):
            return []

    check_scorer(Pairs(), "py:m:f")
    with pytest.raises(ScorerProtocolError, match=r"gave an int object, which is not"):
        check_scorer(3, "py:m:f")


@pytest.mark.parametrize(
    ("array", "method", "message"),
    [
        (
            np.zeros((3, 4)),
            "encode_texts",
            "model 'm': encode_texts returned an array of shape [3, 4] for 2 inputs; expected "
            "shape [2, D] (one embedding per input)",
        ),
        (
            np.zeros(2),
            "encode_images",
            "model 'm': encode_images returned an array of shape [2] for 2 inputs; expected "
            "shape [2, D] (one embedding per input)",
        ),
        (
            np.zeros((2, 2)),
            "score_pairs",
            "model 'm': score_pairs returned an array of shape [2, 2] for 2 inputs; expected "
            "shape [2] (one score per pair)",
        ),
        (
            np.array([[1.0, 0.0], [np.inf, 0.0]]),
            "encode_images",
            "model 'm': encode_images returned infinite values in row 1 (of 2); expected "
            "finite embeddings",
        ),
        (
            np.array([[np.nan, 0.0], [1.0, 0.0]]),
            "encode_texts",
            "model 'm': encode_texts returned NaN in row 0 (of 2); expected finite embeddings",
        ),
    ],
)
def test_check_rows_messages(array: np.ndarray, method: str, message: str):
    with pytest.raises(ScorerProtocolError) as info:
        check_rows(array, 2, method, "m")
    assert str(info.value) == message


WIDTHS = """
import numpy as np


class Widths:
    fingerprint = "widths"

    def encode_images(self, images):
        return np.ones((len(images), 4))

    def encode_texts(self, texts):
        return np.ones((len(texts), 3))


def make():
    return Widths()
"""


def test_embeddings_of_two_widths_are_one_line_naming_the_model(pytester: pytest.Pytester):
    Image.new("RGB", (8, 8), "red").save(pytester.path / "red.png")
    pytester.makepyfile(widths=WIDTHS)
    pytester.makefile(
        ".yaml",
        c="vlcheck: 1\ntests:\n  - id: c\n    capability: attribute/color\n    task: caption\n"
        "    threshold: 0.5\n    examples:\n      - {image: red.png, caption: red, negatives: "
        "[blue]}\n",
    )
    result = pytester.runpytest("c.yaml", "--vl-model=py:widths:make", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*c.yaml:3: test 'c': model 'py:widths:make': encode_images gives 4-d embeddings "
            "and encode_texts 3-d; expected one width (a shared embedding space)"
        ]
    )
    assert "Traceback" not in result.stdout.str() and "einsum" not in result.stdout.str()


def test_check_rows_passes_good_results():
    check_rows(np.ones((2, 3)), 2, "encode_texts", "m")
    check_rows(np.array([0.5, np.nan]), 2, "score_pairs", "m")  # a NaN score fails its example


# --- images -------------------------------------------------------------------------------


def _png(path: Path, size: tuple[int, int] = (20, 10)) -> Path:
    Image.new("RGB", size, "red").save(path)
    return path


def _reason(path: Path) -> str:
    with pytest.raises(ImageUnavailable) as info:
        open_rgb(path)
    assert no_traceback(info.value.reason)
    return info.value.reason


def test_a_folder_is_not_an_image(tmp_path: Path):
    """Missing, looping, corrupt and truncated images: tests/test_error_families.py."""
    assert _reason(tmp_path) == f"not a file: {tmp_path} (expected an image file)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_image(tmp_path: Path):
    locked = _png(tmp_path / "locked.png")
    locked.chmod(0)
    assert _reason(locked) == f"cannot read {locked}: permission denied"


def test_the_pixel_limit_can_be_raised_and_must_be_positive(tmp_path: Path):
    """The refusal messages: tests/test_error_families.py (both Pillow's and ours)."""
    image = _png(tmp_path / "big.png", (40, 30))
    before = Image.MAX_IMAGE_PIXELS
    try:
        set_max_image_pixels(1200)
        assert open_rgb(image).size == (40, 30)
        with pytest.raises(VlcheckUserError, match=r"^--vl-max-image-pixels=0: expected a"):
            set_max_image_pixels(0)
    finally:
        Image.MAX_IMAGE_PIXELS = before


def test_a_crop_past_an_edge_is_clipped(tmp_path: Path):
    """A crop that misses the image entirely: tests/test_error_families.py."""
    path = _png(tmp_path / "small.png", (20, 10))
    overhang = ImageRef("file", "small.png", str(path), crop=(-5.0, 5.0, 10.0, 10.0))
    assert ImageLoader()(overhang).size == (5, 5)  # clipped to the image on every side


# --- checklist files ----------------------------------------------------------------------

VALID = "vlcheck: 1\ntests:\n  - id: t\n    capability: object/existence\n    task: caption\n"


def test_why_a_yaml_file_is_not_a_checklist(tmp_path: Path):
    """A missing header, named on pytest's command line: tests/test_error_families.py."""
    plain = tmp_path / "config.yaml"
    plain.write_text("tests: []\n")
    nested = tmp_path / "nested.yaml"
    nested.write_text("suite:\n  vlcheck: 1\n")
    assert checklist_header_problem(nested) == (
        f"{nested}:2: not a checklist: 'vlcheck:' is indented; expected it at the start of "
        "a line (the top level of the file), e.g. 'vlcheck: 1'"
    )
    text = tmp_path / "notes.txt"
    text.write_text(VALID)
    assert checklist_header_problem(text) == (
        f"{text}: not a checklist: expected a .yaml or .yml file starting with 'vlcheck: 1'"
    )
    assert not is_checklist_file(plain) and not is_checklist_file(text)


def test_type_names_never_show_internal_classes():
    line_list, line_map = LineList([1]), LineMap(a=1)
    assert type_name(line_list) == "a list"
    assert type_name(line_map) == "a mapping"
    assert type_name(True) == "true or false"
    assert type_name(3) == "an integer"
    assert type_name(2.5) == "a number"


def test_infinite_numbers_are_named(tmp_path: Path):
    path = tmp_path / "inf.yaml"
    path.write_text(VALID + "    threshold: .inf\n    examples: []\n")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert str(info.value) == (
        f"{path}:6: 'threshold' is .inf (infinite); expected a number from 0 to 1\n"
        f"{path}:7: 'examples' has 0 items; expected at least 1"
    )
    assert "LineList" not in str(info.value)


def test_wrong_type_messages_say_a_list_not_linelist(tmp_path: Path):
    path = tmp_path / "list.yaml"
    path.write_text(VALID + "    threshold: 0.5\n    description: [a, b]\n    examples: []\n")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert "LineList" not in str(info.value) and "LineMap" not in str(info.value)


def test_every_problem_of_a_file_once_in_line_order(tmp_path: Path):
    path = tmp_path / "many.yaml"
    path.write_text(
        "vlcheck: 2\ntests:\n  - id: a\n    capability: x\n    task: caption\n"
        "    treshold: 0.5\n    examples:\n      - {image: a.png, caption: c}\n"
        "      - {image: a.png, caption: c, negatives: [d], colour: red}\n"
    )
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert [str(e) for e in info.value.errors] == [
        f"{path}:1: 'vlcheck' is 2; this version of pytest-vlcheck reads format 1",
        # the misspelt key is told once: no "missing the required key 'threshold'" as well
        f"{path}:6: unknown key 'treshold' in test 'a' (did you mean 'threshold'?); expected "
        "one of: all_of, capability, cluster, compare, criterion, cutoff, decide, description, "
        "examples, generate, hard_threshold, id, known_failures, macro, max_new_tokens, prompt, "
        "rotate, scoring, symmetric, task, threshold, ties",
        f"{path}:8: example 1 of test 'a' is missing the required key 'negatives'",
        f"{path}:9: unknown key 'colour' in example 2 of test 'a'; expected one of: caption, "
        "captions, id, image, negatives, position, tags",
    ]
    assert str(info.value) == "\n".join(str(e) for e in info.value.errors)
    assert info.value.render(limit=2).splitlines()[2:] == ["... and 2 more"]
    assert (info.value.path, info.value.line) == (path, 1)
