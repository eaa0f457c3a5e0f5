"""pytest end to end with tiny real models: an open_clip config + safetensors file and a
transformers CLIP saved with save_pretrained, side by side in one run."""

from __future__ import annotations

import json

import pytest
from helpers.model_builders import build_hf_clip, build_open_clip
from PIL import Image

CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.0
    examples:
      - {image: red.png, caption: a red square, negatives: [a green square]}
      - {image: green.png, caption: a green square, negatives: [a red square]}
  - id: never
    capability: attribute/impossible
    task: caption
    threshold: 1.0
    examples:
      - {image: red.png, caption: a red square, negatives: [a red square ]}
"""


def test_open_clip_and_hf_models_in_one_run(pytester: pytest.Pytester) -> None:
    config, weights = build_open_clip(pytester.path / "oc", seed=1)
    hf_dir = build_hf_clip(pytester.path / "hf", seed=2)
    Image.new("RGB", (24, 24), (220, 20, 20)).save(pytester.path / "red.png")
    Image.new("RGB", (24, 24), (20, 200, 20)).save(pytester.path / "green.png")
    pytester.makefile(".yaml", checks=CHECKLIST)
    result = pytester.runpytest(
        f"--vl-model=oc=open_clip:{config}@{weights}",
        f"--vl-model=hf=hf:{hf_dir}",
        "--vl-report=rep",
        "--vl-device=cpu",
        "-v",
    )
    # 'never' can only fail: its negative differs from the caption by a trailing space,
    # which both tokenizers drop, so the scores tie and a tie fails.
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*checks.yaml::color[[]oc[]] PASSED*",
            "*checks.yaml::color[[]hf[]] PASSED*",
            "*attribute/impossible: 0.0% (0/1, *) < 100.0% [[]oc[]]*",
        ]
    )
    doc = json.loads((pytester.path / "rep" / "matrix.json").read_text())
    assert [m["name"] for m in doc["models"]] == ["oc", "hf"]
    assert all(m["fingerprint"] for m in doc["models"])
    assert {(r["test"], r["model"]) for r in doc["results"]} == {
        ("color", "oc"),
        ("color", "hf"),
        ("never", "oc"),
        ("never", "hf"),
    }
