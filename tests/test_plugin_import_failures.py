"""Issue 48, class 1: an installed plug-in (task kind, import format, logger, model scheme)
whose module raises on import breaks nothing that does not name it, and where it is named it
is one line (the entry point, the exception, the plug-in's line), never a traceback, in the
loader, pytest's collection, setup and configure phases, and the ``vlcheck`` command.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.checklist_text import checklist
from helpers.colour_scorer import SOURCE
from helpers.installed_plugins import install_distribution
from PIL import Image

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.checklist.json_schema import checklist_schema
from pytest_vlcheck.cli import main
from pytest_vlcheck.parsing.errors import ChecklistError

BROKEN = """\
[pytest_vlcheck.tasks]
bad = vlcheck_broken:BAD

[pytest_vlcheck.importers]
bad-json = vlcheck_broken:BAD

[pytest_vlcheck.loggers]
badlog = vlcheck_broken:BAD

[pytest_vlcheck.models]
badm = vlcheck_broken:BAD
"""
LINE = (
    "raised RuntimeError: operator torchvision::nms does not exist "
    r"\(at .*vlcheck_broken\.py:2\)"
)


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package whose four plug-ins share a module that raises on import, on ``sys.path``
    (also for subprocesses, through PYTHONPATH); the project folder beside it."""
    site = tmp_path / "site"
    install_distribution(site, BROKEN, "vlcheck_broken")
    (site / "vlcheck_broken.py").write_text(
        "import os\nraise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    monkeypatch.syspath_prepend(str(site))
    paths = [str(site), str(Path(__file__).parents[1])]
    monkeypatch.setenv("PYTHONPATH", ":".join(paths))
    project = tmp_path / "project"
    project.mkdir()
    Image.new("RGB", (8, 8), (220, 20, 20)).save(project / "red.png")
    (project / "colour_model.py").write_text(SOURCE)
    (project / "good.yaml").write_text(checklist())
    (project / "bad.yaml").write_text(checklist(task="bad"))
    return project


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_checklist_that_names_no_broken_kind_loads_and_the_one_that_does_is_one_line(
    broken: Path,
) -> None:
    (test,) = load_checklist(broken / "good.yaml").tests
    assert test.task == "caption"
    with pytest.raises(ChecklistError) as caught:
        load_checklist(broken / "bad.yaml")
    assert caught.value.render().count("\n") == 0
    assert "bad.yaml:5: loading the task kind 'bad'" in caught.value.render()


def test_the_schema_and_every_other_command_survive_a_broken_plugin(broken: Path, capsys) -> None:
    assert "bad" not in checklist_schema()["$defs"]["test"]["properties"]["task"]["enum"]
    assert main(["schema"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the schema leaves 'bad' out" in err
    assert main(["validate", str(broken / "good.yaml")]) == 0
    assert main(["validate", str(broken / "bad.yaml")]) != 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err


def test_the_broken_import_format_is_one_line_when_asked_for(broken: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    assert "bad-json        (cannot be used: loading the import format" in capsys.readouterr().out
    code = main(["import", "bad-json", "x.json", "-o", str(broken / "out.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("vlcheck import: loading the import format 'bad-json'")
    assert re.search(LINE, err)


def test_pytest_runs_without_the_broken_plugins_and_names_each_in_one_line(broken: Path) -> None:
    good = _pytest(broken, "--vl-model=py:colour_model:make", "good.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    collected = _pytest(broken, "--vl-model=py:colour_model:make", "bad.yaml")
    assert collected.returncode == 2
    logged = _pytest(broken, "--vl-model=py:colour_model:make", "--vl-log=badlog:x", "good.yaml")
    assert logged.returncode == 4
    scheme = _pytest(broken, "--vl-model=badm:x", "good.yaml")
    assert scheme.returncode == 1
    for done, kind in ((collected, "task kind"), (logged, "logger"), (scheme, "model scheme")):
        text = done.stdout + done.stderr
        assert "Traceback" not in text and "INTERNALERROR" not in text, text
        assert re.search(f"loading the {kind} '[a-z-]+' .*{LINE}", text), text
