"""``vqa:`` specs get the early file check and the checkpoint globs ``hf:`` has; a served
model's ``http(s)://`` address names no local file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vlcheck.models.registry import parse_specs
from pytest_vlcheck.models.spec_files import SpecFileNotFoundError


def test_a_missing_vqa_folder_is_named_before_any_backend(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(SpecFileNotFoundError, match=f"model directory not found: {missing}"):
        parse_specs([f"vqa:{missing}"])


@pytest.mark.parametrize(
    "body", ["llava-hf/llava-1.5-7b-hf", "http://localhost:8000/v1", "https://host/a/b/c"]
)
def test_hub_names_and_served_addresses_pass(body: str) -> None:
    (spec,) = parse_specs([f"vqa:{body}"])
    assert spec.body == body


def test_a_vqa_checkpoint_glob_is_one_spec_per_folder(tmp_path: Path) -> None:
    for step in (100, 20):
        (tmp_path / f"checkpoint-{step}").mkdir()
    specs = parse_specs([f"run=vqa:{tmp_path}/checkpoint-*"])
    assert [(s.name, s.step, s.group) for s in specs] == [
        ("run@checkpoint-20", 20, "run"),
        ("run@checkpoint-100", 100, "run"),
    ]
    assert specs[0].body == f"{tmp_path}/checkpoint-20"
