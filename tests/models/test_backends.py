"""The open_clip and transformers backends, end to end on tiny seeded models built offline."""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from helpers.model_builders import (
    build_hf_blip_itm,
    build_hf_clip,
    build_hf_siglip,
    build_open_clip,
)
from PIL import Image

from pytest_vlcheck.models.backends import hf as hf_backend
from pytest_vlcheck.models.backends import open_clip as open_clip_backend
from pytest_vlcheck.models.batching import (
    GPU_BATCH_SIZE,
    BatchSizeWarning,
    TruncationWarning,
    calibrated_sigmoid,
    device_batch_size,
    run_in_batches,
)
from pytest_vlcheck.models.devices import (
    _bf16_emulated,
    effective_precision,
    resolve_device,
    torch_dtype,
)
from pytest_vlcheck.models.hashing import fingerprint_path
from pytest_vlcheck.models.protocol import ModelOptions

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")
transformers = pytest.importorskip("transformers")

CPU = ModelOptions(device="cpu")
TEXTS = ["a red apple", "a green apple on a table", "two dogs", "A Red Apple!", "x"]


def _images(count: int = 5, seed: int = 3) -> list[Image.Image]:
    """Seeded noise images of different sizes, so resize and crop both run."""
    rng = np.random.default_rng(seed)
    sizes = [(40, 30), (32, 32), (25, 60), (64, 48), (33, 33), (50, 20)]
    return [
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
        for w, h in (sizes[i % len(sizes)] for i in range(count))
    ]


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def oc_files(models_dir: Path) -> tuple[Path, Path]:
    return build_open_clip(models_dir / "oc")


@pytest.fixture(scope="module")
def oc(oc_files: tuple[Path, Path]) -> open_clip_backend.OpenClipScorer:
    config, weights = oc_files
    return open_clip_backend.load(f"{config}@{weights}", CPU)


@pytest.fixture(scope="module")
def oc_sig_files(models_dir: Path) -> tuple[Path, Path]:
    return build_open_clip(models_dir / "oc-sig", siglip=True)


@pytest.fixture(scope="module")
def hf_clip_dir(models_dir: Path) -> Path:
    return build_hf_clip(models_dir / "hf-clip")


@pytest.fixture(scope="module")
def hf_clip(hf_clip_dir: Path) -> hf_backend.HfDualScorer:
    return hf_backend.load(str(hf_clip_dir), CPU)


@pytest.fixture(scope="module")
def hf_sig_dir(models_dir: Path) -> Path:
    return build_hf_siglip(models_dir / "hf-siglip")


@pytest.fixture(scope="module")
def hf_sig(hf_sig_dir: Path) -> hf_backend.HfSigmoidScorer:
    return hf_backend.load(str(hf_sig_dir), CPU)


@pytest.fixture(scope="module")
def hf_blip_dir(models_dir: Path) -> Path:
    return build_hf_blip_itm(models_dir / "hf-blip")


# --- devices, batching, hashing -------------------------------------------------------------------------


def test_resolve_device_auto_prefers_cuda_then_mps_then_cpu(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu"


def test_resolve_device_rejects_unusable_devices(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ValueError, match=r"invalid device 'gpu0'"):
        resolve_device("gpu0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"'cuda'.*CUDA is not available"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == "cuda:0"
    with pytest.raises(ValueError, match=r"'cuda:3'.*only 1 CUDA device"):
        resolve_device("cuda:3")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match="MPS is not available"):
        resolve_device("mps")


def test_precision_names_and_cpu_fp16_fallback():
    assert torch_dtype("fp32") is torch.float32
    assert torch_dtype("fp16") is torch.float16
    assert torch_dtype("bf16") is torch.bfloat16
    with pytest.raises(ValueError, match="invalid precision 'fp8'"):
        torch_dtype("fp8")
    with pytest.warns(UserWarning, match="fp16 is not supported on the CPU"):
        assert effective_precision("fp16", "cpu") == "fp32"
    assert effective_precision("fp16", "cuda:0") == "fp16"


@pytest.mark.parametrize(
    ("machine", "avx512_bf16", "amx", "warns"),
    [
        ("x86_64", False, False, True),  # AVX2 only: emulated
        ("x86_64", True, False, False),
        ("x86_64", False, True, False),
        ("aarch64", False, False, False),  # not probed
    ],
)
def test_bf16_stays_on_the_cpu_with_a_warning_where_it_is_emulated(
    monkeypatch, machine, avx512_bf16, amx, warns
):
    import platform
    import warnings

    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    _bf16_emulated.cache_clear()  # probed once per process: here, of the patched CPU
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert effective_precision("bf16", "cpu") == "bf16"
    finally:
        _bf16_emulated.cache_clear()
    messages = [str(w.message) for w in caught]
    assert any("bf16 on this CPU runs about 50-70x slower" in m for m in messages) == warns


def test_auto_batch_size_follows_the_device():
    auto = ModelOptions(batch_size=64, auto_batch=True)
    assert device_batch_size(auto, "cuda:1") == GPU_BATCH_SIZE
    assert device_batch_size(auto, "cpu") == device_batch_size(auto, "mps") == 64
    assert device_batch_size(ModelOptions(batch_size=32), "cuda:0") == 32  # the user's number


class _Model:
    """A forward pass that runs out of GPU memory above ``fits`` inputs."""

    def __init__(self, batch_size: int, fits: int) -> None:
        self.name, self.batch_size, self.fits, self.sizes = "m", batch_size, fits, []

    def forward(self, batch: list[float]) -> np.ndarray:
        self.sizes.append(len(batch))
        if len(batch) > self.fits:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return np.array(batch, dtype=np.float32).reshape(-1, 1) * 2


def test_a_batch_that_runs_out_of_gpu_memory_is_halved_until_it_fits():
    model = _Model(batch_size=16, fits=5)
    items = [float(i) for i in range(23)]
    with pytest.warns(BatchSizeWarning) as caught:
        rows = run_in_batches(items, model, model.forward)
    assert rows.ravel().tolist() == [2 * i for i in items]  # every row, in order
    assert model.batch_size == 4  # 16 -> 8 -> 4, and kept for the rest of the run
    assert model.sizes == [16, 8, 4, 4, 4, 4, 4, 3]
    assert [str(w.message) for w in caught] == [
        "m: a batch of 16 ran the GPU out of memory; going on with batches of 8 "
        "(--vl-batch-size sets it)",
        "m: a batch of 8 ran the GPU out of memory; going on with batches of 4 "
        "(--vl-batch-size sets it)",
    ]
    nothing_fits = _Model(batch_size=2, fits=0)
    with pytest.warns(BatchSizeWarning), pytest.raises(torch.cuda.OutOfMemoryError):
        run_in_batches(items, nothing_fits, nothing_fits.forward)
    assert nothing_fits.sizes == [2, 1]  # at one input the error is the user's to see


class _Fetched(torch.Tensor):
    """A forward's output that logs when it is read back (``to`` the host)."""

    log: ClassVar[list[tuple[str, int]]] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func is torch.Tensor.to:
            cls.log.append(("fetched", int(args[0][0, 0])))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_device_output_is_read_back_after_the_next_batch_is_launched():
    """Beside an accelerator the host tokenises batch k + 1 while the device runs batch k."""
    model = _Model(batch_size=2, fits=2)

    def launch(batch: list[float]) -> torch.Tensor:
        _Fetched.log.append(("launched", int(batch[0])))
        return torch.tensor([[2 * item] for item in batch]).as_subclass(_Fetched)

    _Fetched.log.clear()
    rows = run_in_batches([0.0, 1.0, 2.0, 3.0, 4.0], model, launch)
    assert rows.dtype == np.float32 and rows.ravel().tolist() == [0, 2, 4, 6, 8]
    launched = [("launched", i) for i in (0, 2, 4)]
    fetched = [("fetched", 2 * i) for i in (0, 2, 4)]
    assert _Fetched.log == [launched[0], launched[1], fetched[0], launched[2], *fetched[1:]]


def test_fingerprint_of_a_file_is_its_sha256(tmp_path: Path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"weights" * 1000)
    assert fingerprint_path(path) == hashlib.sha256(b"weights" * 1000).hexdigest()


def test_fingerprint_of_a_directory_tracks_weight_and_config_files(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "sub" / "vocab.txt").write_text("a\nb\n")
    first = fingerprint_path(tmp_path)
    (tmp_path / "README.md").write_text("notes do not change what the model computes")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x.json").write_text("{}")
    assert fingerprint_path(tmp_path) == first
    (tmp_path / "config.json").write_text('{"a": 1}')
    edited = fingerprint_path(tmp_path)
    assert edited != first
    (tmp_path / "sub" / "vocab.txt").rename(tmp_path / "sub" / "vocab2.txt")
    assert fingerprint_path(tmp_path) not in (first, edited)
    with pytest.raises(FileNotFoundError, match="nope"):
        fingerprint_path(tmp_path / "nope")


def test_fingerprint_reads_a_hub_blob_name_and_it_equals_the_content_hash(tmp_path: Path):
    content = b"hub weights"
    digest = hashlib.sha256(content).hexdigest()
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / digest).write_bytes(content)
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "model.safetensors").symlink_to(tmp_path / "blobs" / digest)
    assert fingerprint_path(tmp_path / "snap" / "model.safetensors") == digest


def test_calibrated_sigmoid_by_hand():
    got = calibrated_sigmoid(np.array([0.5, -0.25, 0.0]), scale=math.exp(2.0), bias=-3.0)
    expected = [1 / (1 + math.exp(-(math.exp(2.0) * s - 3.0))) for s in (0.5, -0.25, 0.0)]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # 0.5 -> logit 0.69453 -> 0.66697 (worked by hand)
    assert abs(float(got[0]) - 0.66697) < 1e-4
    assert float(calibrated_sigmoid(np.array([-1e6]), 1.0, 0.0)[0]) == 0.0


def test_backend_modules_import_without_torch():
    code = (
        "import sys, pytest_vlcheck.models.backends.open_clip, pytest_vlcheck.models.backends.hf\n"
        "import pytest_vlcheck.models.live.scorer\n"
        "heavy = [m for m in ('torch', 'open_clip', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)


# --- open_clip ---------------------------------------------------------------------------


def test_open_clip_shapes_dtype_and_eval_mode(oc: open_clip_backend.OpenClipScorer):
    images = _images()
    emb_i = oc.encode_images(images)
    emb_t = oc.encode_texts(TEXTS)
    assert emb_i.shape == (5, 16) and emb_i.dtype == np.float32
    assert emb_t.shape == (5, 16) and emb_t.dtype == np.float32
    assert not oc.model.training
    # patch_dropout=0.5 in the tiny config: in train mode two calls would differ.
    assert np.array_equal(oc.encode_images(images), emb_i)
    assert np.array_equal(oc.encode_texts(TEXTS), emb_t)
    assert oc.encode_texts([]).shape == (0, 16)
    assert not hasattr(oc, "match_probability")
    assert oc.name.startswith("open_clip:")


def test_open_clip_results_do_not_depend_on_batch_size(oc_files: tuple[Path, Path]):
    config, weights = oc_files
    small = open_clip_backend.load(f"{config}@{weights}", ModelOptions(device="cpu", batch_size=2))
    large = open_clip_backend.load(f"{config}@{weights}", ModelOptions(device="cpu", batch_size=64))
    images = _images(7)
    np.testing.assert_allclose(small.encode_images(images), large.encode_images(images), atol=1e-5)
    np.testing.assert_allclose(small.encode_texts(TEXTS), large.encode_texts(TEXTS), atol=1e-5)


def test_open_clip_cosines_equal_open_clips_own_api(oc: open_clip_backend.OpenClipScorer, oc_files):
    config_path, weights = oc_files
    from safetensors.torch import load_file

    model = open_clip.CLIP(**json.loads(config_path.read_text()))
    model.load_state_dict(load_file(str(weights)))
    model.eval()
    transform = open_clip.image_transform(32, is_train=False)
    images = _images()
    with torch.no_grad():
        image_f = model.encode_image(torch.stack([transform(im) for im in images]), normalize=True)
        text_f = model.encode_text(open_clip.tokenize(TEXTS), normalize=True)
    expected = (image_f @ text_f.T).numpy()
    got = _cosine(oc.encode_images(images), oc.encode_texts(TEXTS))
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.ptp(expected) > 1e-3  # the comparison is not between constant matrices


def test_open_clip_fingerprint_is_the_weights_hash_and_follows_the_weights(tmp_path: Path, oc):
    config, weights = build_open_clip(tmp_path / "again", seed=0)
    again = open_clip_backend.load(f"{config}@{weights}", CPU)
    assert again.fingerprint == oc.fingerprint  # same seed, same bytes
    assert again.fingerprint.split(":")[0] == hashlib.sha256(weights.read_bytes()).hexdigest()
    config1, weights1 = build_open_clip(tmp_path / "other", seed=1)
    other = open_clip_backend.load(f"{config1}@{weights1}", CPU)
    assert other.fingerprint != oc.fingerprint


def test_open_clip_same_stem_configs_do_not_shadow_each_other(tmp_path: Path, oc_files):
    config, weights = oc_files
    wide = json.loads(config.read_text())
    wide["embed_dim"] = 24
    (tmp_path / "wide").mkdir()
    wide_config = tmp_path / "wide" / config.name  # same file stem as the 16-d model
    wide_config.write_text(json.dumps(wide))
    torch.manual_seed(0)
    wide_weights = tmp_path / "wide" / "w.safetensors"
    from safetensors.torch import save_file

    save_file(open_clip.CLIP(**wide).state_dict(), str(wide_weights))
    first = open_clip_backend.load(f"{wide_config}@{wide_weights}", CPU)
    second = open_clip_backend.load(f"{config}@{weights}", CPU)
    assert first.encode_texts(["a"]).shape == (1, 24)
    assert second.encode_texts(["a"]).shape == (1, 16)
    assert "tiny-clip" not in open_clip.list_models()


def test_open_clip_pt_checkpoint_loads_like_safetensors(tmp_path: Path, oc, oc_files):
    from safetensors.torch import load_file

    config, weights = oc_files
    pt = tmp_path / "tiny.pt"
    torch.save(load_file(str(weights)), pt)
    scorer = open_clip_backend.load(f"{config}@{pt}", CPU)
    np.testing.assert_array_equal(scorer.encode_texts(TEXTS), oc.encode_texts(TEXTS))


class _Payload:
    """Unpickling this writes a marker file: proof that arbitrary code would run."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "executed"))


def test_open_clip_refuses_checkpoints_that_need_unsafe_unpickling(tmp_path: Path, oc_files):
    config, _ = oc_files
    marker = tmp_path / "marker.txt"
    bad = tmp_path / "evil.pt"
    torch.save({"visual.proj": _Payload(str(marker))}, bad)
    assert not marker.exists()
    with pytest.raises(ValueError, match=r"open_clip:.*evil\.pt is not a plain weights checkpoint"):
        open_clip_backend.load(f"{config}@{bad}", CPU)
    assert not marker.exists()
    raw = tmp_path / "raw.bin"
    raw.write_bytes(pickle.dumps(_Payload(str(marker)), protocol=2))
    with pytest.raises(ValueError, match="refuses"):
        open_clip_backend.load(f"{config}@{raw}", CPU)
    assert not marker.exists()


def test_open_clip_sigmoid_variant_probability(oc_sig_files: tuple[Path, Path]):
    config, weights = oc_sig_files
    scorer = open_clip_backend.load(f"{config}@{weights}", CPU)
    assert isinstance(scorer, open_clip_backend.OpenClipSigmoidScorer)
    assert scorer.logit_bias == pytest.approx(-1.5)
    assert scorer.logit_scale == pytest.approx(math.exp(2.3), rel=1e-6)
    images = _images(3)
    cos = _cosine(scorer.encode_images(images), scorer.encode_texts(TEXTS))
    transform = open_clip.image_transform(32, is_train=False)
    with torch.no_grad():
        image_f, text_f, scale, bias = scorer.model(
            torch.stack([transform(im) for im in images]), open_clip.tokenize(TEXTS)
        )
        expected = torch.sigmoid(scale * image_f @ text_f.T + bias).numpy()
    np.testing.assert_allclose(scorer.match_probability(cos), expected, atol=1e-5)


def test_open_clip_truncation_warns_once_naming_the_text(oc: open_clip_backend.OpenClipScorer):
    fits = "a " * 75  # 75 tokens + start + end = 77
    long = "a " * 76  # 78 tokens
    longer = "a " * 90 + "zebra"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emb = oc.encode_texts([fits, long, longer, long])
        oc.encode_texts([long])
    messages = [str(w.message) for w in caught if issubclass(w.category, TruncationWarning)]
    assert len(messages) == 2
    assert "77-token" in messages[0] and "(78 tokens)" in messages[0]
    assert "'a a a" in messages[0]
    assert oc.truncated_texts == {long, longer}
    # Both cut to the same 77 tokens: identical embeddings.
    np.testing.assert_array_equal(emb[1], emb[2])


@pytest.mark.parametrize(
    ("body", "error", "pattern"),
    [
        ("", ValueError, r"empty open_clip spec"),
        ("ViT-B-32-quickgelo@openai", ValueError, r"unknown open_clip architecture.*ViT-B-32"),
        ("missing/cfg.json@w.safetensors", FileNotFoundError, r"model config not found"),
        (
            "ViT-B-32-quickgelu",
            ValueError,
            r"no weights given.*tags for ViT-B-32-quickgelu.*openai",
        ),
        ("ViT-B-32-quickgelu@nosuchtag", ValueError, r"neither a pretrained tag"),
        ("ViT-B-32-quickgelu@gone.safetensors", FileNotFoundError, r"weights file not found"),
        ("hf-hub:org/repo@openai", ValueError, r"drop the @PRETRAINED"),
        ("local-dir:/no/such/dir", FileNotFoundError, r"directory not found"),
    ],
)
def test_open_clip_bad_specs_name_the_spec(body: str, error: type, pattern: str):
    with pytest.raises(error, match=pattern) as info:
        open_clip_backend.load(body, CPU)
    assert str(info.value).startswith(f"open_clip:{body}")


def test_open_clip_bad_files_name_the_spec(tmp_path: Path, oc_files, oc_sig_files):
    config, weights = oc_files
    _, sig_weights = oc_sig_files
    with pytest.raises(ValueError, match=r"tiny-clip\.safetensors does not fit the architecture"):
        open_clip_backend.load(f"{config}@{sig_weights}", CPU)  # has an extra logit_bias
    wide = json.loads(config.read_text())
    wide["embed_dim"] = 24
    wide_config = tmp_path / "wide.json"
    wide_config.write_text(json.dumps(wide))
    with pytest.raises(ValueError, match=r"does not fit the architecture.*size mismatch"):
        open_clip_backend.load(f"{wide_config}@{weights}", CPU)
    broken = tmp_path / "broken.json"
    broken.write_text('{"embed_dim": 16,\n "vision_cfg": }')
    with pytest.raises(ValueError, match=r"broken\.json:2: invalid JSON"):
        open_clip_backend.load(f"{broken}@{weights}", CPU)
    partial = tmp_path / "partial.json"
    partial.write_text('{"embed_dim": 16}')
    with pytest.raises(ValueError, match=r"missing vision_cfg, text_cfg"):
        open_clip_backend.load(f"{partial}@{weights}", CPU)
    with pytest.raises(ValueError, match=r"needs a local weights file"):
        open_clip_backend.load(f"{config}@openai", CPU)


def test_open_clip_tag_without_network_is_a_short_error(monkeypatch: pytest.MonkeyPatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    spec_body = "ViT-B-32-quickgelu@openai"
    with pytest.raises(OSError, match=r"^open_clip:ViT-B-32-quickgelu@openai: could not fetch"):
        open_clip_backend.load(spec_body, CPU)


def test_split_spec_keeps_at_signs_inside_paths(tmp_path: Path):
    config = tmp_path / "run@3" / "cfg.json"
    config.parent.mkdir()
    config.write_text("{}")

    def known(arch: str) -> bool:
        return arch == "ViT-B-32" or Path(arch).is_file()

    assert open_clip_backend.split_spec("ViT-B-32@openai", known) == ("ViT-B-32", "openai")
    assert open_clip_backend.split_spec(f"{config}@w@2.pt", known) == (str(config), "w@2.pt")
    assert open_clip_backend.split_spec(str(config), known) == (str(config), None)
    assert open_clip_backend.split_spec("x.json@a@b", known) == ("x.json", "a@b")
    at_dir = tmp_path / "ckpt@5"
    at_dir.mkdir()
    assert open_clip_backend.split_spec(f"local-dir:{at_dir}", known) == (
        f"local-dir:{at_dir}",
        None,
    )
    assert open_clip_backend.split_spec("hf-hub:org/repo@tag", known) == ("hf-hub:org/repo", "tag")


def _cached_clip_weights(hub_cache: Path, content: bytes) -> Path:
    """The hub cache as a download of ``clip``'s weights (ViT-B-32 'openai') leaves it."""
    repo = hub_cache / "models--timm--vit_base_patch32_clip_224.openai"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    weights = snapshot / "open_clip_model.safetensors"
    weights.write_bytes(content)
    return weights


def test_cached_tag_file_finds_the_hub_cache_offline(tmp_path: Path):
    weights = _cached_clip_weights(tmp_path, b"w")
    found = open_clip_backend.cached_tag_file(
        "ViT-B-32-quickgelu", "openai", open_clip, cache_dir=str(tmp_path)
    )
    assert found == str(weights)
    assert open_clip_backend.cached_tag_file("ViT-B-32-quickgelu", "nosuch", open_clip) is None


def test_a_cached_tag_is_identified_without_loading_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The embedding cache's namespace of ``clip`` comes from the cached weights' digest: an
    unchanged re-run never builds the model."""
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    _cached_clip_weights(tmp_path, b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    options = ModelOptions("cpu")
    identity = open_clip_backend.identify("ViT-B-32-quickgelu@openai", options, fingerprint_path)
    assert identity is not None
    assert identity.fingerprint == f"open_clip:ViT-B-32-quickgelu@openai:{digest}"
    assert identity.preprocessing == f"open_clip {open_clip.__version__} ViT-B-32-quickgelu"
    no_weights = open_clip_backend.identify("ViT-B-16@openai", options, fingerprint_path)
    assert no_weights is None  # not cached: only loading (or failing to) can say


def test_the_tag_table_loads_without_torch_and_matches_open_clip():
    code = (
        "import json, sys\n"
        "from pytest_vlcheck.models.backends.open_clip_tags import pretrained_table\n"
        "table = pretrained_table()\n"
        "heavy = [m for m in ('torch', 'open_clip', 'safetensors.torch') if m in sys.modules]\n"
        "print(json.dumps([heavy, table.list_pretrained(),"
        " table.get_pretrained_cfg('ViT-B-32-quickgelu', 'OpenAI')]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    heavy, tags, config = json.loads(done.stdout)
    assert heavy == []
    assert [tuple(pair) for pair in tags] == open_clip.list_pretrained()
    expected = open_clip.get_pretrained_cfg("ViT-B-32-quickgelu", "openai")
    assert config == json.loads(json.dumps(expected))


def test_open_clip_bf16_runs_and_returns_fp32(oc_files, oc):
    config, weights = oc_files
    scorer = open_clip_backend.load(f"{config}@{weights}", ModelOptions("cpu", 64, "bf16"))
    got = scorer.encode_texts(TEXTS)
    assert got.dtype == np.float32
    assert np.diag(_cosine(got, oc.encode_texts(TEXTS))).min() > 0.98


# --- transformers ------------------------------------------------------------------------


def test_hf_clip_shapes_dtype_and_eval_mode(hf_clip: hf_backend.HfDualScorer):
    images = _images()
    emb_i = hf_clip.encode_images(images)
    emb_t = hf_clip.encode_texts(TEXTS)
    assert emb_i.shape == (5, 16) and emb_i.dtype == np.float32
    assert emb_t.shape == (5, 16) and emb_t.dtype == np.float32
    assert not hf_clip.model.training
    assert np.array_equal(hf_clip.encode_images(images), emb_i)
    assert np.array_equal(hf_clip.encode_texts(TEXTS), emb_t)
    assert type(hf_clip.image_processor).__name__ == "CLIPImageProcessorPil"
    assert not hasattr(hf_clip, "match_probability")
    assert hf_clip.max_length == 77


def test_hf_images_preprocessed_one_at_a_time_equal_a_batch(hf_clip, hf_sig):
    """The engine runs ``preprocess_image`` per image in its loader pool; the tensors, and so
    the embeddings, are those of the processor's batch."""
    images = _images()
    for scorer in (hf_clip, hf_sig):
        batch = scorer.image_processor(images=images, return_tensors="pt")["pixel_values"]
        one_by_one = [scorer.preprocess_image(image) for image in images]
        assert all(set(pixels) == {"pixel_values"} for pixels in one_by_one)
        assert torch.equal(torch.stack([p["pixel_values"] for p in one_by_one]), batch)
        with torch.inference_mode():
            direct = hf_backend._features(scorer.model.get_image_features(pixel_values=batch))
        assert np.array_equal(scorer.encode_preprocessed(one_by_one), direct.numpy())


def test_hf_clip_cosines_equal_the_models_own_logits(hf_clip, hf_clip_dir: Path):
    model = transformers.CLIPModel.from_pretrained(hf_clip_dir).eval()
    processor = transformers.AutoImageProcessor.from_pretrained(hf_clip_dir, backend="pil")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_clip_dir)
    images = _images()
    with torch.no_grad():
        out = model(
            **tokenizer(TEXTS, padding=True, return_tensors="pt"),
            pixel_values=processor(images=images, return_tensors="pt")["pixel_values"],
        )
    expected = (out.logits_per_image / model.logit_scale.exp()).detach().numpy()
    got = _cosine(hf_clip.encode_images(images), hf_clip.encode_texts(TEXTS))
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.ptp(expected) > 1e-3


def test_hf_results_do_not_depend_on_batch_size(hf_clip_dir: Path, hf_sig_dir: Path):
    images = _images(7)
    texts = [*TEXTS, "a much longer caption that pads the batch"]
    for directory in (hf_clip_dir, hf_sig_dir):
        small = hf_backend.load(str(directory), ModelOptions(device="cpu", batch_size=2))
        large = hf_backend.load(str(directory), ModelOptions(device="cpu", batch_size=64))
        np.testing.assert_allclose(
            small.encode_images(images), large.encode_images(images), atol=1e-5
        )
        np.testing.assert_allclose(small.encode_texts(texts), large.encode_texts(texts), atol=1e-5)


def test_hf_fingerprint_follows_the_directory(tmp_path: Path, hf_clip):
    same = hf_backend.load(str(build_hf_clip(tmp_path / "same", seed=0)), CPU)
    other = hf_backend.load(str(build_hf_clip(tmp_path / "other", seed=1)), CPU)
    assert same.fingerprint == hf_clip.fingerprint
    assert other.fingerprint != hf_clip.fingerprint
    assert same.fingerprint == fingerprint_path(tmp_path / "same")


def test_hf_siglip_probability_is_the_models_sigmoid(hf_sig, hf_sig_dir: Path):
    assert isinstance(hf_sig, hf_backend.HfSigmoidScorer)
    assert hf_sig.logit_scale == pytest.approx(math.exp(2.0), rel=1e-6)
    assert hf_sig.logit_bias == pytest.approx(-3.0)
    images = _images(3)
    cos = _cosine(hf_sig.encode_images(images), hf_sig.encode_texts(TEXTS))
    assert cos.shape == (3, 5)
    by_hand = 1.0 / (1.0 + np.exp(-(math.exp(2.0) * cos.astype(np.float64) - 3.0)))
    np.testing.assert_allclose(hf_sig.match_probability(cos), by_hand, rtol=1e-6)
    # And the model's own forward (max-length padding, ids only) agrees.
    model = transformers.SiglipModel.from_pretrained(hf_sig_dir).eval()
    processor = transformers.AutoImageProcessor.from_pretrained(hf_sig_dir, backend="pil")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_sig_dir)
    ids = tokenizer(TEXTS, padding="max_length", max_length=64, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(
            input_ids=ids,
            pixel_values=processor(images=images, return_tensors="pt")["pixel_values"],
        )
    np.testing.assert_allclose(
        hf_sig.match_probability(cos), torch.sigmoid(out.logits_per_image).numpy(), atol=1e-5
    )


def test_hf_siglip_pads_to_the_full_context(hf_sig):
    # Its text tower pools the last position, so padding must not depend on the batch.
    alone = hf_sig.encode_texts(["x"])
    with_long = hf_sig.encode_texts(["x", "y" * 50])
    np.testing.assert_allclose(alone[0], with_long[0], atol=1e-6)


def test_hf_truncation_warns_once_naming_the_text(hf_clip, hf_sig):
    for scorer, limit, specials in ((hf_clip, 77, 2), (hf_sig, 64, 1)):
        fits = "a" * (limit - specials)
        long = "b" * (limit - specials + 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scorer.encode_texts([fits, long, long])
            scorer.encode_texts([long])
        messages = [str(w.message) for w in caught if issubclass(w.category, TruncationWarning)]
        assert len(messages) == 1, messages
        assert f"{limit}-token" in messages[0] and f"({limit + 1} tokens)" in messages[0]
        assert scorer.truncated_texts == {long}


def test_hf_blip_itm_scores_pairs_with_the_itm_head(hf_blip_dir: Path):
    scorer = hf_backend.load(str(hf_blip_dir), ModelOptions(device="cpu", batch_size=2))
    assert isinstance(scorer, hf_backend.HfItmScorer)
    assert not hasattr(scorer, "encode_images")
    images = _images(5)
    got = scorer.score_pairs(images, TEXTS)
    assert got.shape == (5,) and got.dtype == np.float32
    assert np.array_equal(scorer.score_pairs(images, TEXTS), got)  # dropout is off
    model = transformers.BlipForImageTextRetrieval.from_pretrained(hf_blip_dir).eval()
    processor = transformers.AutoImageProcessor.from_pretrained(hf_blip_dir, backend="pil")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_blip_dir)
    with torch.no_grad():
        tokens = tokenizer(TEXTS, padding=True, return_tensors="pt")
        out = model(
            input_ids=tokens["input_ids"],
            attention_mask=tokens["attention_mask"],
            pixel_values=processor(images=images, return_tensors="pt")["pixel_values"],
        )
    expected = torch.softmax(out.itm_score, dim=-1)[:, 1].numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
    with pytest.raises(ValueError, match="2 images but 1 texts"):
        scorer.score_pairs(images[:2], TEXTS[:1])


def test_hf_refuses_checkpoints_with_missing_weights(tmp_path: Path, hf_clip_dir: Path):
    from safetensors.torch import load_file, save_file

    target = tmp_path / "partial"
    target.mkdir()
    for item in hf_clip_dir.iterdir():
        (target / item.name).write_bytes(item.read_bytes())
    state = load_file(str(target / "model.safetensors"))
    del state["text_projection.weight"]
    save_file(state, str(target / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"no weights for 1 parameter.*text_projection"):
        hf_backend.load(str(target), CPU)


def test_hf_bad_specs_name_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import huggingface_hub.constants

    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    a_file = tmp_path / "model.safetensors"
    a_file.write_bytes(b"x")
    cases = [
        ("", ValueError, "empty spec"),
        ("./no/such/dir", FileNotFoundError, "model directory not found"),
        (str(empty_dir), ValueError, "has no config.json"),
        (str(a_file), ValueError, "is a file"),
    ]
    for body, error, pattern in cases:
        with pytest.raises(error, match=pattern) as info:
            hf_backend.load(body, CPU)
        assert str(info.value).startswith(f"hf:{body}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OSError, match=r"^hf:someorg/somemodel: could not fetch its config"):
        hf_backend.load("someorg/somemodel", CPU)


def test_hf_rejects_models_that_are_not_image_text(tmp_path: Path):
    config = transformers.CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
    )
    transformers.CLIPVisionModel(config).save_pretrained(tmp_path / "vision-only")
    with pytest.raises(ValueError, match=r"CLIPVisionModel is not an image-text model"):
        hf_backend.load(str(tmp_path / "vision-only"), CPU)
