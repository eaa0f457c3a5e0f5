"""Issue 48, class 4: an environment that cannot import a backend's packages (torch and
torchvision from different builds, simulated by a ``torchvision`` that raises on import) is
one line, once per model, naming the package, the exception and the fix: not a traceback per
item, each longer than the last.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.checklist_text import checklist
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.models.backends.broken_environment import import_failure

CHECKLIST = checklist(ids=("t0", "t1", "t2", "t3"))


def test_a_torchvision_that_cannot_load_is_one_line_once_per_model(tmp_path: Path) -> None:
    shadow = tmp_path / "env" / "torchvision"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    Image.new("RGB", (8, 8), (220, 20, 20)).save(tmp_path / "red.png")
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    (tmp_path / "colour_model.py").write_text(SOURCE)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'env'}:{Path(__file__).parents[2]}"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "checks.yaml",
         "--vl-model=tiny", "--vl-model=py:colour_model:make"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = done.stdout + done.stderr
    assert done.returncode == 10, text  # a model that failed to load (docs/exit-codes.md)
    assert "Traceback" not in text and "site-packages" not in text, text
    lines = [line for line in text.splitlines() if "cannot be used" in line]
    assert len(lines) == 1, text
    assert (
        "model 'tiny' cannot be used: this Python environment cannot import torchvision ("
        in (lines[0])
    )
    assert "RuntimeError: operator torchvision::nms does not exist); torch and torchvision are " \
        "from different builds; expected a matching pair" in lines[0]  # fmt: skip
    assert text.count("model 'tiny' failed to load (see ") == 3
    assert "make: 4 passed" in text  # the other model is unharmed
    assert len(text.splitlines()) < 80


def test_an_import_failure_names_the_package_that_raised(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "outer.py").write_text("import inner\n")
    (tmp_path / "inner.py").write_text("x = 1\nraise OSError('libfoo.so: cannot open')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(OSError) as caught:
        import outer  # noqa: F401
    line = import_failure(caught.value)
    assert line is not None and line.startswith("this Python environment cannot import inner (")
    assert "inner.py:2: OSError: libfoo.so: cannot open); expected a working install, e.g. " \
        "pip install --force-reinstall inner" in line  # fmt: skip
    for name in ("outer", "inner"):
        sys.modules.pop(name, None)


def test_an_error_outside_an_import_is_not_the_environments() -> None:
    with pytest.raises(ValueError) as caught:
        int("x")
    assert import_failure(caught.value) is None
