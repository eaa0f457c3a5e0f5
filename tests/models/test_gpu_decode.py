"""``--vl-decode gpu``: the option's checks, which images fall back to the CPU path, and the
device path's numbers against PIL's, run on the CPU (the engine takes any device; only the
user-facing option refuses a model on the CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_vlcheck.engine.feed.on_device import DeviceDecode, DeviceDecodeWarning
from pytest_vlcheck.engine.feed.pipeline import ImageFeed
from pytest_vlcheck.engine.runner.stats import ScoringStats
from pytest_vlcheck.engine.scores.content_keys import namespace
from pytest_vlcheck.engine.scores.scorer_source import ScorerSource
from pytest_vlcheck.errors import SettingsError
from pytest_vlcheck.gates.baseline import make_entry
from pytest_vlcheck.gates.conditions import run_conditions
from pytest_vlcheck.gates.decision import _condition_warnings
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.models.pixels.device_transform import decode_jpegs, fallback_reason
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import parse_spec
from pytest_vlcheck.run.settings import KeywordOptions, build_settings
from pytest_vlcheck.run.sinks import stats_line
from pytest_vlcheck.tiny import TINY_SPEC

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
open_clip = pytest.importorskip("open_clip")


def _photo(width: int, height: int, seed: int) -> Image.Image:
    """A smooth image with texture, as a photo is (pure noise would exaggerate resampling)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 / width, y * 255 / height, (x + y) * 127 / (width + height)], -1)
    noise = rng.normal(0, 12, (height, width, 3))
    return Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("decode")
    photo = _photo(160, 120, 0)
    made = {name: root / f"{name}.jpg" for name in ("plain", "tall", "grey", "cmyk", "prog")}
    photo.save(made["plain"], quality=90)
    _photo(70, 130, 1).save(made["tall"], quality=85)
    photo.convert("L").save(made["grey"])
    photo.convert("CMYK").save(made["cmyk"])
    photo.save(made["prog"], progressive=True)
    exif = Image.Exif()
    exif[0x0112] = 6
    made["turned"] = root / "turned.jpg"
    photo.save(made["turned"], exif=exif)
    made["png"] = root / "plain.png"
    photo.save(made["png"])
    return made


def test_unknown_value_and_a_cpu_model_are_refused() -> None:
    with pytest.raises(SettingsError, match=r"^decode is 'fast'; expected one of \('cpu', 'gpu'\)"):
        build_settings(KeywordOptions({"decode": "fast"}))
    with pytest.raises(SettingsError) as refused:
        build_settings(KeywordOptions({"decode": "gpu", "device": "cpu"}))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("decode is 'gpu' but the model runs on the CPU (device is 'cpu')")
    assert build_settings(KeywordOptions({})).model_options.decode == "cpu"


def test_the_option_on_a_cpu_model_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--vl-model=tiny", "--vl-device=cpu", "--vl-decode=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "decode" in line]
    assert len(errors) == 1, result.stderr.lines
    assert "--vl-decode is 'gpu' but the model runs on the CPU" in errors[0]


def test_only_plain_baseline_rgb_jpeg_files_take_the_device_path(files: dict[str, Path]) -> None:
    assert fallback_reason(str(files["plain"])) is None
    assert fallback_reason(str(files["tall"])) is None
    assert fallback_reason(str(files["png"])) == "PNG format"
    assert fallback_reason(str(files["grey"])) == "L mode"
    assert fallback_reason(str(files["cmyk"])) == "CMYK mode"
    assert fallback_reason(str(files["prog"])) == "progressive JPEG"
    assert fallback_reason(str(files["turned"])) == "EXIF orientation"
    device = DeviceDecode.for_scorer(_tiny(), "tiny")
    assert device is not None
    plain = str(files["plain"])
    assert device.fallback(ImageRef("file", "plain.jpg", plain)) is None
    assert device.fallback(ImageRef("file", "plain.jpg", plain, crop=(0, 0, 8, 8))) is not None
    assert device.fallback(ImageRef("scene", "{}", "{}")) == "a scene image"


def test_decoding_equals_pil_bit_for_bit(files: dict[str, Path]) -> None:
    paths = [str(files["plain"]), str(files["tall"])]
    for path, decoded in zip(paths, decode_jpegs(paths, "cpu"), strict=True):
        with Image.open(path) as image:
            expected = np.asarray(image.convert("RGB"))
        assert np.array_equal(decoded.permute(1, 2, 0).numpy(), expected)


def test_embeddings_agree_with_pil_and_fallbacks_are_counted(files: dict[str, Path]) -> None:
    scorer = _tiny()
    device = DeviceDecode.for_scorer(scorer, "tiny")
    assert device is not None
    names = ["plain", "tall", "png", "grey", "cmyk", "prog", "turned"]
    refs = [ImageRef("file", n, str(files[n])) for n in names]
    refs.append(ImageRef("file", "crop", str(files["plain"]), crop=(10, 10, 90, 90)))
    feed = ImageFeed(ImageLoader(), None, ScoringStats())

    def run(method, fn, *args):  # type: ignore[no-untyped-def]
        return fn(*args)

    batches = list(feed.loaded_batches([refs], scorer.preprocess_image, run, device=device))
    assert feed.stats.images_on_device == 2
    assert feed.stats.images_decode_fallback == len(refs) - 2
    [(_, inputs)] = batches
    on_device = scorer.encode_preprocessed(inputs)
    plain = ImageFeed(ImageLoader(), None, ScoringStats())
    [(_, pil_inputs)] = list(plain.loaded_batches([refs], scorer.preprocess_image, run))
    by_pil = scorer.encode_preprocessed(pil_inputs)
    cosine = (on_device * by_pil).sum(1) / np.linalg.norm(on_device, axis=1)
    cosine /= np.linalg.norm(by_pil, axis=1)
    assert cosine.min() >= 0.9999
    assert np.array_equal(on_device[2:], by_pil[2:])  # the fallbacks are the CPU path itself


def test_a_runner_decodes_on_its_device_with_the_same_verdicts(files: dict[str, Path]) -> None:
    """The engine takes ``decode="gpu"`` on any device (here the CPU): the JPEG files take the
    device path, the PNG and the crop the CPU path, and every score stays close."""
    from pytest_vlcheck.checklist import load_checklist
    from pytest_vlcheck.engine import ModelRunner
    from pytest_vlcheck.tasks import get_task

    root = files["plain"].parent
    (root / "c.yaml").write_text(
        "vlcheck: 1\ntests:\n  - id: one\n    capability: attribute/color\n"
        "    task: caption\n    threshold: 0\n    examples:\n"
        "      - {image: plain.jpg, caption: a red circle, negatives: [a blue circle]}\n"
        "      - {image: tall.jpg, caption: a blue square, negatives: [a red square]}\n"
        "      - {image: plain.png, caption: a green circle, negatives: [a red circle]}\n"
        "      - {image: {path: tall.jpg, crop: [2, 2, 40, 40]}, caption: a square,"
        " negatives: [a circle]}\n"
    )
    [test] = load_checklist(root / "c.yaml").tests
    spec = parse_spec(TINY_SPEC)
    grids = {}
    for decode in ("cpu", "gpu"):
        runner = ModelRunner(spec, ModelOptions(device="cpu", decode=decode), ImageLoader())
        runner.prepare([test])
        task = get_task(test.task)
        grids[decode] = [runner.grid(task.grid(e), e.id) for e in test.examples]
        counts = runner.stats.images_on_device, runner.stats.images_decode_fallback
        assert counts == ((2, 2) if decode == "gpu" else (0, 0))
        line = stats_line("tiny", runner.stats)
        assert line is not None
        assert line.endswith("; 2 decoded on the device, 2 on the CPU") == (decode == "gpu")
    for on_device, by_pil in zip(grids["gpu"], grids["cpu"], strict=True):
        np.testing.assert_allclose(on_device, by_pil, atol=1e-3)
        assert np.array_equal(on_device.argmax(-1), by_pil.argmax(-1))


def test_a_preprocess_it_cannot_express_says_so_once() -> None:
    class Processor:
        def preprocess(self, image: Image.Image) -> object:
            return image

    with pytest.warns(DeviceDecodeWarning, match="cannot express this model's preprocessing"):
        assert DeviceDecode.for_scorer(Processor(), "hf") is None
    squash = open_clip.image_transform(32, is_train=False, resize_mode="squash")
    scorer = _tiny()
    scorer.preprocess = squash
    with pytest.warns(DeviceDecodeWarning):
        assert DeviceDecode.for_scorer(scorer, "tiny") is None


def test_gpu_is_a_run_condition_and_names_its_own_namespace(tmp_path: Path) -> None:
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

    default, gpu = ModelOptions(device="cpu"), ModelOptions(device="cpu", decode="gpu")
    assert "decode" not in run_conditions(default)
    assert run_conditions(gpu)["decode"] == "gpu"
    row = {"file": "f", "test": "t", "model": "m", "capability": "c", "task": "retrieval"}
    row |= {"n": 1, "passed": 1, "pass_rate": 1.0, "ci_low": 0, "ci_high": 1, "threshold": 0.5}

    def saved(options: ModelOptions) -> dict[str, object]:
        entry = make_entry(
            row,
            {"a": True},
            spec="tiny",
            fingerprint=None,
            content_hash="h",
            conditions=run_conditions(options),
        )
        return dict(entry.to_dict()["conditions"])

    assert "decode" not in saved(default)  # baselines saved before the option read the same
    assert saved(gpu)["decode"] == "gpu"
    assert _condition_warnings(_entry(saved(default)), run_conditions(gpu)) == [
        "run conditions differ from the baseline: decode cpu -> gpu"
    ]
    spec = parse_spec(TINY_SPEC)
    with EmbeddingCache(tmp_path / "c") as cache:
        source = ScorerSource(spec, default, cache)
        before = source.namespace("image")
        other = ScorerSource(spec, gpu, cache).namespace("image")
        identity = source._name.identity
    assert identity is not None
    # the default names the namespace the releases before the option did
    assert before == namespace(identity.fingerprint, f"{identity.preprocessing}|fp32", "image")
    assert other is not None and other != before


def _tiny():  # type: ignore[no-untyped-def]
    from pytest_vlcheck.models.backends.open_clip import load

    return load(TINY_SPEC.removeprefix("open_clip:"), ModelOptions(device="cpu"))


def _entry(conditions: dict[str, object]):  # type: ignore[no-untyped-def]
    from pytest_vlcheck.gates.baseline import BaselineEntry

    return BaselineEntry(
        file="f",
        test="t",
        model="m",
        capability="c",
        task="retrieval",
        spec="tiny",
        fingerprint=None,
        content_hash="h",
        tool_version=None,
        git_commit=None,
        conditions=conditions,
    )
