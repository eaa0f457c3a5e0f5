"""Model specs, weights, devices and an unreachable hub: one message each, naming the spec.

Uses the tiny seeded models of ``model_builders`` and files that do not exist; nothing here
touches the network (the hub tests point ``HF_ENDPOINT`` at a closed local port).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.model_builders import build_open_clip

from pytest_vlcheck.errors import (
    DeviceError,
    ModelFileNotFoundError,
    ModelLoadError,
    WeightsUnavailableError,
)
from pytest_vlcheck.models.devices import effective_precision
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import load_scorer, parse_spec

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("transformers")

CPU = ModelOptions(device="cpu")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def oc_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_open_clip(tmp_path_factory.mktemp("oc"))


def _load_message(spec: str, options: ModelOptions = CPU, error: type = ModelLoadError) -> str:
    with pytest.raises(error) as info:
        load_scorer(parse_spec(spec), options)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_weights_file_that_does_not_exist():
    message = _load_message("open_clip:ViT-B-32@/no/such.safetensors", error=ModelFileNotFoundError)
    assert message == (
        "cannot load model 'open_clip:ViT-B-32@/no/such.safetensors': weights file not found: "
        "/no/such.safetensors; expected an existing weights file (.safetensors preferred) "
        "or a pretrained tag of ViT-B-32"
    )


def test_unknown_open_clip_architecture():
    message = _load_message("open_clip:ViT-B-23@openai")
    assert message.startswith(
        "cannot load model 'open_clip:ViT-B-23@openai': unknown open_clip architecture 'ViT-B-23' (did you mean "
        "ViT-B-32, "
    )
    assert message.endswith(
        "?); expected a name from open_clip.list_models() or a path to an open_clip "
        "model-config .json"
    )


def test_corrupt_weights_files(tmp_path: Path, oc_files: tuple[Path, Path]):
    config, weights = oc_files
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(weights.read_bytes()[:100])
    message = _load_message(f"open_clip:{config}@{broken}")
    assert message.startswith(
        f"cannot load model 'open_clip:{config}@{broken}': weights file {broken} is not a readable safetensors file ("
    )
    assert message.endswith(
        "); expected weights saved with safetensors (e.g. safetensors.torch.save_file)"
    )
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00garbage" * 10)
    message = _load_message(f"open_clip:{config}@{garbage}")
    assert message == (
        f"cannot load model 'open_clip:{config}@{garbage}': weights file {garbage} is corrupt or not a torch "
        "checkpoint (it starts with b'\\x00gar'); expected a .safetensors file or a "
        "checkpoint saved with torch.save"
    )


def test_hf_directory_that_does_not_exist():
    message = _load_message("hf:/does/not/exist", error=ModelFileNotFoundError)
    assert message == (
        "cannot load model 'hf:/does/not/exist': model directory not found: /does/not/exist; expected a directory "
        "written by save_pretrained, or a hub name ORG/NAME"
    )


@pytest.mark.parametrize(
    ("device", "message"),
    [
        (
            "cuda:7",
            "device 'cuda:7' (--vl-device) requested but CUDA is not available on this "
            "machine; expected one of: auto, cpu",
        ),
        (
            "cuda",
            "device 'cuda' (--vl-device) requested but CUDA is not available on this "
            "machine; expected one of: auto, cpu",
        ),
        (
            "mps",
            "device 'mps' (--vl-device) requested but MPS is not available on this machine; "
            "expected one of: auto, cpu",
        ),
        (
            "gpu0",
            "invalid device 'gpu0' (--vl-device); expected 'auto', 'cpu', 'cuda', 'cuda:N' "
            "or 'mps'",
        ),
    ],
)
def test_device_errors_when_the_model_loads(
    monkeypatch: pytest.MonkeyPatch, oc_files: tuple[Path, Path], device: str, message: str
):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    config, weights = oc_files
    spec = f"open_clip:{config}@{weights}"
    assert _load_message(spec, ModelOptions(device=device), DeviceError) == (
        f"cannot load model '{spec}': {message}"
    )


def test_a_missing_gpu_index_lists_the_ones_there(monkeypatch: pytest.MonkeyPatch):
    from pytest_vlcheck.models.devices import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(DeviceError) as info:
        resolve_device("cuda:7")
    assert str(info.value) == (
        "device 'cuda:7' (--vl-device) requested but only 2 CUDA device(s) exist here; "
        "expected one of: auto, cpu, cuda, cuda:0, cuda:1"
    )


def test_precision_errors(monkeypatch: pytest.MonkeyPatch, oc_files: tuple[Path, Path]):
    config, weights = oc_files
    spec = f"open_clip:{config}@{weights}"
    assert _load_message(spec, ModelOptions(device="cpu", precision="fp8"), DeviceError) == (
        f"cannot load model '{spec}': invalid precision 'fp8' (--vl-precision); expected one of fp32, fp16, bf16"
    )
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    with pytest.raises(DeviceError) as info:
        effective_precision("bf16", "cuda:0")
    assert str(info.value) == (
        "precision 'bf16' (--vl-precision) is not supported on cuda:0 (this GPU has no "
        "bfloat16); expected fp16 or fp32"
    )


def test_hf_hub_offline_flag_fails_at_once_saying_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    message = _load_message("hf:someorg/somemodel", error=WeightsUnavailableError)
    assert message == (
        "cannot load model 'hf:someorg/somemodel': could not fetch its config: it is not in"
        f" the local cache "
        f"(looked in {tmp_path}) and HF_HUB_OFFLINE is set; download it where the network is "
        "reachable, or point at a local directory: hf:/path/to/dir (written by save_pretrained)"
    )


PROBE = textwrap.dedent(
    """
    import json, sys
    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.models.registry import load_scorer, parse_spec
    out = {}
    for spec in sys.argv[1:]:
        try:
            load_scorer(parse_spec(spec), ModelOptions(device="cpu"))
            out[spec] = ["loaded", []]
        except Exception as exc:
            heavy = [m for m in ("torch", "open_clip", "transformers") if m in sys.modules]
            out[spec] = [f"{type(exc).__name__}: {exc}", heavy]
    print(json.dumps(out))
    """
)


def test_unreachable_hub_fails_fast_without_the_offline_flag(tmp_path: Path):
    """No HF_HUB_OFFLINE, an empty cache, and a hub that refuses connections: each spec fails
    at once, before torch, open_clip or transformers is imported (those imports alone take
    5-8 s; the hub client's retries took ~50 s), and says how to go local."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE")
    }
    env.update(HF_HOME=str(tmp_path), HF_ENDPOINT="http://127.0.0.1:9", PYTHONPATH=str(REPO))
    specs = [
        "clip",
        "hf:someorg/somemodel",
        "open_clip:ViT-B-32@laion2b_s34b_b79k",
        "open_clip:hf-hub:someorg/somerepo",
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *specs],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    cache = tmp_path / "hub"
    unreachable = "http://127.0.0.1:9 cannot be reached ("
    clip_message, clip_imported = results["clip"]
    assert clip_message.startswith(
        "WeightsUnavailableError: cannot load model 'clip' (open_clip:ViT-B-32-quickgelu@openai): "
        "could not fetch "
        f"pretrained weights 'openai': they are not in the local cache (looked in {cache} and "
        f"~/.cache/clip) and {unreachable}"
    )
    assert clip_message.endswith(
        "; download them where the network is reachable, or point at local files: "
        "open_clip:ARCH@/path/to/weights.safetensors"
    )
    hf_message, hf_imported = results["hf:someorg/somemodel"]
    assert hf_message.startswith(
        "WeightsUnavailableError: cannot load model 'hf:someorg/somemodel': could not fetch its "
        "config: it is not "
        f"in the local cache (looked in {cache}) and {unreachable}"
    )
    tag_message, tag_imported = results["open_clip:ViT-B-32@laion2b_s34b_b79k"]
    assert "could not fetch pretrained weights 'laion2b_s34b_b79k'" in tag_message
    repo_message, repo_imported = results["open_clip:hf-hub:someorg/somerepo"]
    assert "could not fetch the weights of this hub repo: they are not in the local" in repo_message
    assert clip_imported == hf_imported == tag_imported == repo_imported == []
