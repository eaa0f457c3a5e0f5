"""An open_clip model-config .json that does not fit its .safetensors weights is found from
the file's header before torch is imported: one usage error (exit 4), naming the tensor, the
shapes and the config keys, not an errored item per test after the model was built."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.model_builders import build_open_clip

from pytest_vlcheck.models.backends.weight_shapes import open_clip_shape_problem, safetensors_shapes
from pytest_vlcheck.models.registry import parse_specs
from pytest_vlcheck.models.spec_files import SpecFilesDisagreeError

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "pytest_vlcheck" / "tiny"


@pytest.fixture(scope="module")
def vit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real open_clip ViT's config and weights (tests/model_builders.py)."""
    return build_open_clip(tmp_path_factory.mktemp("vit"))


def _edited(config: Path, tmp_path: Path, tower: str, **changes: object) -> Path:
    doc = json.loads(config.read_text())
    doc[tower] |= changes
    edited = tmp_path / "other.json"
    edited.write_text(json.dumps(doc))
    return edited


def test_the_configs_the_weights_were_saved_with_fit() -> None:
    assert open_clip_shape_problem(TINY / "tiny.json", TINY / "tiny.safetensors") is None


def test_a_real_vit_fits_and_each_size_is_checked(vit: tuple[Path, Path], tmp_path: Path) -> None:
    config, weights = vit
    assert open_clip_shape_problem(config, weights) is None
    wider = open_clip_shape_problem(_edited(config, tmp_path, "vision_cfg", width=64), weights)
    assert wider == (
        "the weights do not fit the model config: visual.conv1.weight: [32, 3, 8, 8] in "
        "tiny-clip.safetensors, other.json (vision_cfg width, patch_size) makes [64, 3, 8, 8] "
        "(and 2 more); expected the model-config .json the weights were saved with"
    )
    deeper = open_clip_shape_problem(_edited(config, tmp_path, "text_cfg", layers=3), weights)
    assert deeper is not None and "the text blocks: [2] in " in deeper
    assert "(text_cfg layers) makes [3];" in deeper
    bigger = open_clip_shape_problem(
        _edited(config, tmp_path, "vision_cfg", image_size=64), weights
    )
    assert bigger is not None and "visual.positional_embedding: [17, 32] in " in bigger
    assert "makes [65, 32]" in bigger


def test_a_resnet_tower_is_checked(tmp_path: Path) -> None:
    other = _edited(TINY / "tiny.json", tmp_path, "vision_cfg", width=32)
    problem = open_clip_shape_problem(other, TINY / "tiny.safetensors")
    assert problem is not None
    assert "visual.attnpool.c_proj.weight: [128, 512] in tiny.safetensors" in problem
    assert "makes [128, 1024]" in problem


def test_towers_of_other_libraries_and_unreadable_headers_are_left_to_the_loader(
    vit: tuple[Path, Path], tmp_path: Path
) -> None:
    config, weights = vit
    timm = _edited(config, tmp_path, "vision_cfg", width=64, timm_model_name="vit_tiny")
    assert open_clip_shape_problem(timm, weights) is None
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    assert safetensors_shapes(junk) is None
    assert open_clip_shape_problem(config, junk) is None


def test_a_config_that_is_not_json_is_left_to_the_backend(
    vit: tuple[Path, Path], tmp_path: Path
) -> None:
    """The backend names the line (``FILE:LINE: invalid JSON ...``, tests/test_backends.py)."""
    bad = tmp_path / "bad.json"
    bad.write_text("{embed_dim: 16")
    assert open_clip_shape_problem(bad, vit[1]) is None


def test_the_spec_is_refused_at_parse_time(
    vit: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, weights = vit
    _edited(config, tmp_path, "text_cfg", width=64)
    monkeypatch.chdir(tmp_path)
    spec = f"open_clip:other.json@{weights}"
    with pytest.raises(SpecFilesDisagreeError) as caught:
        parse_specs([spec])
    assert str(caught.value).startswith(f"{spec}: the weights do not fit the model config: ")


RUN = """
import sys
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", "checks.yaml", sys.argv[1]])
print(int(code), [m for m in ("torch", "open_clip", "transformers") if m in sys.modules])
"""


def test_pytest_stops_with_one_line_before_torch(vit: tuple[Path, Path], tmp_path: Path) -> None:
    config, weights = vit
    _edited(config, tmp_path, "vision_cfg", layers=3)
    (tmp_path / "checks.yaml").write_text((ROOT / "checklists" / "counting.yaml").read_text())
    spec = f"open_clip:other.json@{weights}"
    done = subprocess.run(
        [sys.executable, "-c", RUN, f"--vl-model={spec}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.stdout.split()[-2:] == ["4", "[]"], done.stdout
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert line.startswith(f"ERROR: --vl-model: {spec}: the weights do not fit the model config: ")
    assert "the vision blocks: [2] in tiny-clip.safetensors" in line
