"""The embedding cache wired into the engine: a re-run encodes nothing and builds no model,
changed and corrupted inputs are recomputed, and the plugin's options turn it off or bound it."""

from __future__ import annotations

import importlib
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.model_builders import build_open_clip
from PIL import Image

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.engine import ModelRunner, judge_test
from pytest_vlcheck.engine.runner.progress import LogWriter, Progress, stderr_writer
from pytest_vlcheck.engine.scores.embedding_cache import DB_NAME, EmbeddingCache
from pytest_vlcheck.errors import ModelLoadError
from pytest_vlcheck.gates.conditions import run_conditions
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.devices import computed_precision
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import identify, load_scorer, parse_spec

CHECKLIST = """\
vlcheck: 1
tests:
  - id: colours
    capability: attribute/color
    task: caption
    threshold: 0
    examples:
      - {image: red.png, caption: a red square, negatives: [a blue square, a green square]}
      - {image: blue.png, caption: a blue square, negatives: [a red square]}
      - {image: {path: green.png, crop: [0, 0, 8, 8]}, caption: a green square, negatives: [a red square]}
  - id: matches
    capability: object/existence
    task: match
    threshold: 0
    examples:
      - {image: red.png, caption: a red square, label: match}
      - {image: blue.png, caption: a green square, label: no_match}
"""
IMAGES = 3
TEXTS = 3

# Counts builds and calls in module globals, so a test sees whether the model was touched.
SCORERS = """
import numpy as np

COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0)}
CALLS = {"built": 0, "images": 0, "texts": 0, "pairs": 0}


def _text(text):
    vec = np.full(3, 0.01, dtype=np.float32)
    for word in text.split():
        vec += np.asarray(COLOURS.get(word, (0.0, 0.0, 0.0)), dtype=np.float32)
    return vec


def _image(image):
    return np.asarray(image, dtype=np.float32).reshape(-1, 3).mean(0) / 255


class Dual:
    fingerprint = "colour-v1"
    sigmoid_calibration = (10.0, -5.0)

    def encode_images(self, images):
        CALLS["images"] += len(images)
        return np.stack([_image(im) for im in images])

    def encode_texts(self, texts):
        CALLS["texts"] += len(texts)
        return np.stack([_text(t) for t in texts])

    def match_probability(self, similarities):
        return 1 / (1 + np.exp(-(10.0 * np.asarray(similarities, dtype=np.float64) - 5.0)))


class Pairs:
    fingerprint = "pairs-v1"

    def score_pairs(self, images, texts):
        CALLS["pairs"] += len(images)
        return np.array([float(_image(i) @ _text(t)) for i, t in zip(images, texts)])


def dual():
    CALLS["built"] += 1
    return Dual()


def pairs():
    CALLS["built"] += 1
    return Pairs()


def undeclared():
    CALLS["built"] += 1
    return Dual()


def misdeclared():
    return Dual()


dual.vlcheck_fingerprint = "colour-v1"
pairs.vlcheck_fingerprint = lambda: "pairs-v1"
misdeclared.vlcheck_fingerprint = "colour-v0"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A checklist with three images and the counting scorers as an importable module."""
    for name, rgb in (("red", (250, 5, 5)), ("blue", (5, 5, 250)), ("green", (5, 250, 5))):
        Image.new("RGB", (16, 16), rgb).save(tmp_path / f"{name}.png")
    (tmp_path / "c.yaml").write_text(CHECKLIST)
    module_name = f"cache_scorers_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module_name}.py").write_text(SCORERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(module_name)
    yield tmp_path, module
    sys.modules.pop(module_name, None)


def _run(root: Path, module, factory: str, *, cache: bool = True) -> tuple[ModelRunner, list]:
    """One fresh session: a new runner (and cache handle) scoring every test."""
    spec = parse_spec(f"py:{module.__name__}:{factory}")
    store = EmbeddingCache(root / "cache") if cache else None
    runner = ModelRunner(spec, ModelOptions(device="cpu"), ImageLoader(), cache=store)
    tests = load_checklist(root / "c.yaml").tests
    runner.prepare(tests)
    results = [judge_test(t, runner).to_json() for t in tests]
    if store is not None:
        store.close()
    return runner, results


def test_a_rerun_builds_no_model_and_gives_identical_results(project) -> None:
    root, module = project
    first, before = _run(root, module, "dual")
    assert (first.stats.images_encoded, first.stats.texts_encoded) == (IMAGES, TEXTS)
    assert module.CALLS["built"] == 1
    second, after = _run(root, module, "dual")
    assert module.CALLS == {"built": 1, "images": IMAGES, "texts": TEXTS, "pairs": 0}
    assert second.stats.model_calls == 0
    assert (second.stats.images_cached, second.stats.texts_cached) == (IMAGES, TEXTS)
    assert after == before  # the match test's sigmoid came from the remembered calibration
    assert after[1]["score_kind"] == "probability"
    assert second.fingerprint == "colour-v1"


def test_without_a_declared_fingerprint_the_model_is_built_but_encodes_nothing(project) -> None:
    root, module = project
    _, before = _run(root, module, "undeclared")
    second, after = _run(root, module, "undeclared")
    assert module.CALLS["built"] == 2
    assert second.stats.model_calls == 0 and second.stats.images_cached == IMAGES
    assert after == before


def test_a_declared_fingerprint_the_scorer_contradicts_is_refused(project) -> None:
    """Vectors of the declared and the built model must not share one cache namespace."""
    root, module = project
    with pytest.raises(
        ModelLoadError, match="colour-v0 before loading and the loaded model's is colour-v1"
    ):
        _run(root, module, "misdeclared")


def test_pair_scores_are_cached(project) -> None:
    root, module = project
    first, before = _run(root, module, "pairs")
    pairs = first.stats.pairs_scored
    assert pairs == module.CALLS["pairs"] > 0
    second, after = _run(root, module, "pairs")
    assert module.CALLS["built"] == 1 and second.stats.pairs_cached == pairs
    assert after == before


def test_a_changed_image_at_the_same_path_is_encoded_again(project) -> None:
    root, module = project
    _, before = _run(root, module, "dual")
    Image.new("RGB", (16, 16), (5, 5, 200)).save(root / "red.png")  # now (another) blue
    second, after = _run(root, module, "dual")
    assert second.stats.images_encoded == 1 and second.stats.images_cached == IMAGES - 1
    assert after[0]["passed"] == before[0]["passed"] - 1


def test_a_corrupted_entry_is_recomputed(project) -> None:
    root, module = project
    _, before = _run(root, module, "dual")
    with sqlite3.connect(root / "cache" / DB_NAME) as db:
        db.execute(
            "UPDATE vectors SET data = zeroblob(length(data)) "
            "WHERE rowid = (SELECT min(vectors.rowid) FROM vectors JOIN namespaces "
            "ON namespaces.id = vectors.namespace WHERE namespaces.name LIKE 'image|%')"
        )
    second, after = _run(root, module, "dual")
    assert second.stats.images_encoded == 1 and second.stats.images_cached == IMAGES - 1
    assert after == before


def test_without_the_cache_everything_is_encoded(project) -> None:
    root, module = project
    _run(root, module, "dual")
    second, _ = _run(root, module, "dual", cache=False)
    assert (second.stats.images_encoded, second.stats.texts_encoded) == (IMAGES, TEXTS)
    assert second.stats.cached == 0


def test_open_clip_identity_without_building_equals_the_loaded_fingerprint(tmp_path) -> None:
    config, weights = build_open_clip(tmp_path, seed=1)
    options = ModelOptions(device="cpu")
    with EmbeddingCache(tmp_path / "cache") as store:
        spec = parse_spec(f"open_clip:{config}@{weights}")
        identity = identify(spec, options, store.file_digest)
        assert identity is not None
        assert identity.fingerprint == load_scorer(spec, options).fingerprint
        plain, quickgelu = (
            identify(parse_spec(f"open_clip:{arch}@{weights}"), options, store.file_digest)
            for arch in ("ViT-B-32", "ViT-B-32-quickgelu")
        )
        assert plain is not None and quickgelu is not None
        assert plain.preprocessing != quickgelu.preprocessing  # same weights, other model
        assert identify(parse_spec("open_clip:ViT-B-32@openai"), options, store.file_digest) is None


CONFTEST = """
import json, sys

def pytest_unconfigure(config):
    with open("modules.json", "w") as handle:
        json.dump({"torch": "torch" in sys.modules, "open_clip": "open_clip" in sys.modules},
                  handle)
"""


def _stats_line(result: pytest.RunResult) -> str:
    return next(line for line in result.outlines if line.startswith("[m] "))


def test_plugin_rerun_imports_no_torch_and_writes_the_same_matrix(pytester) -> None:
    config, weights = build_open_clip(pytester.path / "model", seed=2)
    for name, rgb in (("red", (250, 5, 5)), ("blue", (5, 5, 250)), ("green", (5, 250, 5))):
        Image.new("RGB", (40, 40), rgb).save(pytester.path / f"{name}.png")
    pytester.makefile(".yaml", c=CHECKLIST)
    pytester.makeconftest(CONFTEST)
    model = f"--vl-model=m=open_clip:{config}@{weights}"
    cache = f"--vl-cache-dir={pytester.path / 'cache'}"
    runs = []
    for index in range(2):
        result = pytester.runpytest_subprocess(
            model, cache, f"--vl-report=r{index}", "-p", "no:cacheprovider"
        )
        result.assert_outcomes(passed=2)
        modules = json.loads((pytester.path / "modules.json").read_text())
        runs.append((_stats_line(result), modules, (pytester.path / f"r{index}/matrix.json")))
    (first, first_modules, first_matrix), (rerun, modules, matrix) = runs
    assert first_modules["torch"] and f"{IMAGES} images, {TEXTS} texts" in first
    assert "0 images, 0 texts, 0 pairs in 0 model calls, 6 cached" in rerun
    assert modules == {"torch": False, "open_clip": False}
    assert matrix.read_text() == first_matrix.read_text()


def test_plugin_cache_size_no_cache_and_a_bad_size(pytester) -> None:
    pytester.makefile(".yaml", c=CHECKLIST)
    for name in ("red", "blue", "green"):
        Image.new("RGB", (16, 16), (9, 9, 9)).save(pytester.path / f"{name}.png")
    pytester.makepyfile(scorers=SCORERS)
    args = ["--vl-model=m=py:scorers:dual", f"--vl-cache-dir={pytester.path / 'c'}"]
    result = pytester.runpytest_subprocess(*args, "--vl-cache-size=30", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    with EmbeddingCache(pytester.path / "c") as store:
        assert 0 < store.stored_bytes() <= 30
    uncached = pytester.runpytest_subprocess(*args, "--vl-no-cache", "-p", "no:cacheprovider")
    assert f"{IMAGES} images, {TEXTS} texts" in _stats_line(uncached)
    assert "0 cached" in _stats_line(uncached)
    bad = pytester.runpytest_subprocess(*args, "--vl-cache-size=lots")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--vl-cache-size is 'lots'; expected a size from 1 byte to 1024TB, e.g. 500MB*"]
    )


def test_progress_line_counts_rate_and_eta() -> None:
    written: list[str] = []
    ticks = iter([0.0, 2.0, 4.0, 4.0])
    progress = Progress("clip", 100, written.append, clock=lambda: next(ticks))
    progress.advance(50)  # 50 images in 2 s
    assert written[-1] == "\r[clip] 50/100 images, 25.0 images/s, ETA 2 s"
    progress.advance(50)
    assert written[-1].startswith("\r[clip] 100/100 images, 25.0 images/s, ETA 0 s")
    progress.close()
    assert written[-1].strip() == ""


def test_progress_redraws_only_on_a_terminal_outside_ci(monkeypatch) -> None:
    class Terminal:
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> None:
            pass

        def flush(self) -> None:
            pass

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert not isinstance(stderr_writer(), LogWriter)  # redraws
    monkeypatch.setenv("CI", "true")  # whole lines instead (tests/test_log_lines.py)
    assert isinstance(stderr_writer(), LogWriter)
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys, "stderr", open(__file__))  # noqa: SIM115 - a non-terminal file
    assert isinstance(stderr_writer(), LogWriter)
    sys.stderr.close()


def test_cached_vectors_are_exactly_what_the_model_gave(project) -> None:
    root, module = project
    _run(root, module, "dual")
    with EmbeddingCache(root / "cache") as store:
        from pytest_vlcheck.engine.scores.content_keys import namespace, text_key

        space = namespace("colour-v1", "py|fp32", "text")
        row = store.get_many(space, [text_key("a red square")])[text_key("a red square")]
    np.testing.assert_array_equal(row, np.array([1.01, 0.01, 0.01], dtype=np.float32))


@pytest.mark.filterwarnings("ignore:precision fp16 is not supported on the CPU")
def test_fp16_on_the_cpu_is_filed_as_the_fp32_it_ran(project) -> None:
    """fp16 on the CPU runs in fp32: its vectors are an fp32 run's, named so in the cache and
    in the run conditions (a GPU fp16 run sharing the cache must not be served them)."""
    root, _ = project
    config, weights = build_open_clip(root, seed=1)
    spec = parse_spec(f"open_clip:{config}@{weights}")
    tests = load_checklist(root / "c.yaml").tests
    runners = []
    for precision in ("fp16", "fp32"):
        options = ModelOptions(device="cpu", precision=precision)
        with EmbeddingCache(root / "cache") as store:
            runner = ModelRunner(spec, options, ImageLoader(), cache=store)
            runner.prepare(tests)
        runners.append(runner)
        assert run_conditions(options)["precision"] == "fp32"
    # the fp32 run is served the fp16 run's vectors: they were filed under fp32
    assert runners[0].stats.model_calls > 0 and runners[1].stats.model_calls == 0
    assert computed_precision("fp16", "cuda:1") == "fp16"
    assert computed_precision("bf16", "cpu") == "bf16"
