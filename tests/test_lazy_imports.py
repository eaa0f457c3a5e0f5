"""pytest loads the plugin in every run of every project where it is installed: a run that
collects no checklist must not pay for numpy, torch, PIL, PyYAML or the report renderers
(issue 25; ``benchmarks/fixed_costs.py`` times the whole process). Checked in a fresh
interpreter, with only this plugin loaded, since this test process has imported everything."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "numpy",
    "torch",
    "PIL",
    "yaml",
    "pytest_vlcheck.report",
    "pytest_vlcheck.engine.runner.model_runner",
    "pytest_vlcheck.checklist.loader",
)
RUN = """
import json, sys, pytest
code = pytest.main(["-q", "-p", "pytest_vlcheck.plugin", "-p", "no:cacheprovider", *sys.argv[1:]])
heavy = [name for name in json.loads({heavy!r}) if name in sys.modules]
print(json.dumps({{"code": int(code), "plugin": "pytest_vlcheck.plugin" in sys.modules,
                  "heavy": heavy}}))
"""


def _run(project: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    code = RUN.format(heavy=json.dumps(HEAVY))
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [(), ("--vl-model=tiny", "--vl-batch-size=8")])
def test_a_run_without_checklists_imports_nothing_heavy(tmp_path: Path, args: tuple) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert True\n")
    (tmp_path / "data.json").write_text("{}\n")
    out = _run(tmp_path, *args)
    assert out == {"code": 0, "plugin": True, "heavy": []}


def test_an_empty_folder_imports_nothing_heavy(tmp_path: Path) -> None:
    out = _run(tmp_path)
    assert out == {"code": int(pytest.ExitCode.NO_TESTS_COLLECTED), "plugin": True, "heavy": []}


def _typed_names(init: Path) -> dict[str, str]:
    """Name -> module of the ``if TYPE_CHECKING:`` imports of a package ``__init__``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.unparse(imp)
                for alias in imp.names:
                    # ``X as X``: an explicit re-export under mypy's no_implicit_reexport
                    assert alias.asname == alias.name, ast.unparse(imp)
                    found[alias.name] = imp.module
    return found


def test_every_lazy_name_is_typed_from_the_module_that_resolves_it() -> None:
    """A package's lazy names reach mypy through its ``TYPE_CHECKING`` imports (else a
    ``from pytest_vlcheck.engine import ModelRunner`` is ``Any`` to it): the two lists agree."""
    packages = [
        p
        for p in (ROOT / "pytest_vlcheck").rglob("__init__.py")
        if "lazy_exports(" in p.read_text()
    ]
    assert len(packages) >= 5
    for init in packages:
        name = ".".join(init.parent.relative_to(ROOT).parts)
        exports = dict(importlib.import_module(name)._EXPORTS)
        assert _typed_names(init) == exports, init


def test_collecting_a_checklist_imports_no_numpy(tmp_path: Path) -> None:
    """Collection reads, validates and lists every kind's settings but scores nothing: the
    task kinds and their metrics take numpy on first use (at 100,000 examples its import was
    a tenth of ``--collect-only``)."""
    (tmp_path / "checks.yaml").write_text(
        "vlcheck: 1\ntests:\n  - id: big\n    capability: attribute/color\n    task: caption\n"
        "    threshold: 0.5\n    examples:\n      - {image: a.png, caption: a red cat, "
        "negatives: [a blue cat]}\n",
        encoding="utf-8",
    )
    out = _run(tmp_path, "--collect-only", "--vl-model=tiny", "checks.yaml")
    assert out["code"] == 0 and out["plugin"]
    assert "numpy" not in out["heavy"], out
