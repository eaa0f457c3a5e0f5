"""What a user sees from ``vlcheck validate --images`` for an image over the pixel limit: the
loader's one-line reason, never Pillow's ``DecompressionBombWarning`` as well."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

CHECKLIST = """\
vlcheck: 1
tests:
  - id: t
    capability: object/existence
    task: caption
    threshold: 0.5
    examples:
      - {image: big.png, caption: a cat, negatives: [a dog]}
      - {image: small.png, caption: a cat, negatives: [a dog]}
"""


@pytest.mark.parametrize(
    ("limit", "size"),
    [
        (600_000, "1000x1000 = 1,000,000 pixels"),  # under twice the limit: Pillow warns
        (400_000, "1,000,000 pixels"),  # over twice the limit: Pillow raises
    ],
)
def test_validate_reports_a_too_large_image_as_the_loader_does(
    tmp_path: Path, limit: int, size: str
) -> None:
    Image.new("L", (1000, 1000)).save(tmp_path / "big.png")
    Image.new("RGB", (8, 8)).save(tmp_path / "small.png")
    (tmp_path / "c.yaml").write_text(CHECKLIST)
    args = ["validate", "--images", f"--max-image-pixels={limit}", "c.yaml"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_vlcheck.cli", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == "c.yaml: 1 test, 2 examples, 2 image files checked, 1 unusable\n"
    assert proc.stderr == (
        f"c.yaml:8: big.png: image too large to decode safely ({size}, over the limit of "
        f"{limit:,} pixels that guards against decompression bombs); raise the limit with "
        "--vl-max-image-pixels=N\n"
    )
