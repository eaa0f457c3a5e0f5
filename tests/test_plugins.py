"""Plug-ins through entry points: a task kind, an import format, a logger kind and a model
scheme, registered by a package that is not installed, only put on ``sys.path`` as a
hand-written ``*.dist-info`` beside its module (what ``importlib.metadata`` finds for an
installed one). The plug-ins are ``tests/fixtures/plugin/vlcheck_demo.py``, the worked
example of docs/extending.md.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.installed_plugins import install_distribution
from PIL import Image

from pytest_vlcheck import evaluate
from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.checklist.json_schema import checklist_schema
from pytest_vlcheck.cli import main
from pytest_vlcheck.errors import UserCodeError
from pytest_vlcheck.importers import FORMATS
from pytest_vlcheck.loggers import LOGGERS, check_logger_spec, open_logger
from pytest_vlcheck.models.registry import MODELS, parse_spec, parse_specs
from pytest_vlcheck.models.spec_files import SpecFileNotFoundError
from pytest_vlcheck.registry import PluginError, Registry
from pytest_vlcheck.tasks import TASK_NAMES, TASKS, get_task

PLUGIN = Path(__file__).parent / "fixtures" / "plugin" / "vlcheck_demo.py"
ENTRY_POINTS = """\
[pytest_vlcheck.tasks]
pick = vlcheck_demo:PICK

[pytest_vlcheck.importers]
pick-json = vlcheck_demo:PICK_JSON

[pytest_vlcheck.loggers]
lines = vlcheck_demo:LINES

[pytest_vlcheck.models]
colour = vlcheck_demo:load_colour
"""


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    install_distribution(site, ENTRY_POINTS, "vlcheck_demo")
    shutil.copy(PLUGIN, site / "vlcheck_demo.py")
    monkeypatch.syspath_prepend(str(site))
    yield tmp_path
    sys.modules.pop("vlcheck_demo", None)


def _pick_checklist(folder: Path, answer: str = "a red square") -> Path:
    Image.new("RGB", (8, 8), (255, 0, 0)).save(folder / "red.png")
    path = folder / "pick.yaml"
    path.write_text(
        "vlcheck: 1\n"
        "tests:\n"
        "  - id: red\n"
        "    capability: demo/colour\n"
        "    task: pick\n"
        "    threshold: 0.5\n"
        "    examples:\n"
        "      - image: red.png\n"
        "        texts: [a red square, a blue square, a green square]\n"
        f"        answer: {answer}\n",
        encoding="utf-8",
    )
    return path


def test_each_registry_holds_its_builtins_then_the_installed_plugins(demo: Path) -> None:
    assert list(TASKS)[: len(TASK_NAMES)] == list(TASK_NAMES)
    assert "pick" in TASKS and list(TASKS)[-1] == "pick"
    assert "pick-json" in FORMATS and "lines" in LOGGERS and "colour" in MODELS
    assert not TASKS.is_builtin("pick") and TASKS.is_builtin("caption")
    assert "entry point 'vlcheck_demo:PICK'" in TASKS.where("pick")


def test_plugins_leave_with_their_package(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_task("pick").name == "pick"
    monkeypatch.undo()
    assert "pick" not in TASKS
    with pytest.raises(ValueError, match="unknown task kind 'pick'; known: caption, image"):
        get_task("pick")


def test_a_plugin_task_kind_loads_judges_and_joins_the_schema(demo: Path, capsys) -> None:
    (test,) = load_checklist(_pick_checklist(demo)).tests
    assert test.task == "pick"
    assert [e.answer for e in test.examples] == ["a red square"]
    kind = get_task("pick")
    assert kind.grid(test.examples[0])[1] == ("a red square", "a blue square", "a green square")
    judgement = kind.judge({}, test.examples * 2, [np.array([[0.9, 0.1, 0.2]])] * 2, None)
    assert judgement.correct.tolist() == [True, True]
    assert judgement.chance == pytest.approx(1 / 3)
    schema = checklist_schema()
    assert "pick" in schema["$defs"]["test"]["properties"]["task"]["enum"]
    assert schema["$defs"]["pick_example"]["required"] == ["image", "texts", "answer"]
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == schema


def test_a_plugin_task_kind_reports_mistakes_at_their_line(demo: Path) -> None:
    with pytest.raises(Exception, match=r"pick\.yaml:10: 'answer' is 'a pink square'"):
        load_checklist(_pick_checklist(demo, answer="a pink square"))


def test_a_plugin_model_scores_a_plugin_kind_and_a_plugin_logger_logs_it(demo: Path) -> None:
    log = demo / "log.jsonl"
    run = evaluate("colour", _pick_checklist(demo), log=f"lines:{log}", step=3)
    (result,) = run.results
    assert (result.model, result.task, result.status, result.pass_rate) == (
        "colour",
        "pick",
        "passed",
        1.0,
    )
    (line,) = log.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["step"] == 3


def test_a_plugin_logger_is_checked_like_a_builtin_one(demo: Path) -> None:
    with pytest.raises(ValueError, match="lines: no FILE given; expected lines:FILE"):
        check_logger_spec("lines", "--vl-log")
    out = demo / "scalars.jsonl"
    logger = open_logger(f"lines:{out}", "--vl-log")
    logger.log({"pass_rate": 0.5}, 7)
    assert json.loads(out.read_text(encoding="utf-8")) == {"step": 7, "pass_rate": 0.5}


def test_a_plugin_import_format_runs_through_vlcheck_import(demo: Path, capsys) -> None:
    source = demo / "records.json"
    records = [
        {"image": "red.png", "texts": ["a red square", "a blue square"], "answer": "a red square"}
    ]
    source.write_text(json.dumps(records), encoding="utf-8")
    Image.new("RGB", (8, 8), (255, 0, 0)).save(demo / "red.png")
    out = demo / "imported.yaml"
    assert main(["import", "pick-json", str(source), "-o", str(out)]) == 0
    (test,) = load_checklist(out).tests
    assert (test.task, test.capability, test.threshold) == ("pick", "demo/pick", 0.5)


def test_a_plugin_model_scheme_parses_as_a_spec(demo: Path) -> None:
    spec = parse_spec("colour")
    assert (spec.name, spec.scheme) == ("colour", "colour")


FILE_BACKEND = """\
from pathlib import Path

LOADED = []


class Folder:
    def check_files(self, body):
        if body == "raise":
            raise RuntimeError("cannot look")
        return None if Path(body).is_dir() else f"no folder {body}; expected a folder"

    def load(self, body, options):
        LOADED.append(body)
        raise AssertionError("parsing must not load the model")


FOLDER = Folder()
"""


@pytest.fixture
def folder_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    install_distribution(
        site, "[pytest_vlcheck.models]\nfolder = folder_backend:FOLDER\n", "folder_backend"
    )
    (site / "folder_backend.py").write_text(FILE_BACKEND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    yield tmp_path
    sys.modules.pop("folder_backend", None)


def test_a_plugin_backend_declares_its_local_files(folder_backend: Path) -> None:
    (spec,) = parse_specs([f"folder:{folder_backend}"])
    assert spec.scheme == "folder"
    with pytest.raises(SpecFileNotFoundError, match=r"^folder:/nowhere: no folder /nowhere;"):
        parse_specs(["folder:/nowhere"])
    with pytest.raises(UserCodeError, match=r"checking its files with .* raised RuntimeError"):
        parse_specs(["folder:raise"])
    assert sys.modules["folder_backend"].LOADED == []


def test_a_plugin_backend_with_missing_files_is_one_usage_error(
    folder_backend: Path, pytester: pytest.Pytester
) -> None:
    pytester.makefile(".yaml", checks="vlcheck: 1\ntests: []\n")
    result = pytester.runpytest("--vl-model=folder:/nowhere", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "folder:/nowhere: no folder /nowhere; expected a folder" in result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_plugin_that_is_not_its_kind_is_one_message(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    install_distribution(site, "[pytest_vlcheck.tasks]\nhalf = half_kind:HALF\n", "half_kind")
    (site / "half_kind.py").write_text(
        "class Half:\n    name = 'half'\n    example_keys = ()\nHALF = Half()\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(PluginError, match=r"task kind 'half' \(entry point 'half_kind:HALF'"):
        get_task("half")
    with pytest.raises(PluginError, match="lacks optional_example_keys, setting_keys"):
        get_task("half")
    sys.modules.pop("half_kind", None)


def test_a_plugin_whose_import_fails_is_the_third_partys_error(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    install_distribution(
        site, "[pytest_vlcheck.loggers]\nbroken = broken_logger:KIND\n", "broken_logger"
    )
    (site / "broken_logger.py").write_text("raise RuntimeError('no config')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(UserCodeError, match=r"loading the logger 'broken' .* raised RuntimeError"):
        LOGGERS["broken"]
    sys.modules.pop("broken_logger", None)


def test_a_builtin_name_wins_over_a_plugin_of_the_same_name(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    install_distribution(site, "[pytest_vlcheck.tasks]\ncaption = nowhere:NOTHING\n", "shadow")
    monkeypatch.syspath_prepend(str(site))
    assert TASKS.is_builtin("caption") and get_task("caption").name == "caption"
    assert list(TASKS).count("caption") == 1


def test_builtins_are_imported_on_first_use_only() -> None:
    registry: Registry[object] = Registry(
        "thing", {"json": "json:dumps", "nowhere": "no_such_module:x"}
    )
    assert list(registry) == ["json", "nowhere"]
    assert registry["json"] is json.dumps
    with pytest.raises(ModuleNotFoundError):
        registry["nowhere"]
