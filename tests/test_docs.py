"""The documentation keeps its promises: README and docs/ examples marked runnable run as
written, every relative link lands on a page (and heading) that exists, and the CI recipes
publish the baseline after a failed gate.

A runnable example is a fenced ``python`` block right after a ``<!-- runnable -->`` line. It
runs as ``python example.py`` would (in a fresh process forked from a server that has imported
torch and open_clip once: helpers/forked_scripts.py), in an empty folder where ``checklists/``
and ``checklists_generative/`` are the repository's (so paths read as they do from a clone),
offline. A ``print(...)  # TEXT`` line of one says what it prints: the example fails when it
prints anything else (``TEXT ...``: what the printed line starts with).
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.forked_scripts import run_forked

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = "<!-- runnable -->"
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _runnable_blocks() -> list[tuple[str, str]]:
    """(``PAGE:LINE``, code) of every block marked runnable."""
    blocks = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if line.strip() != MARKER:
                continue
            where = f"{page.relative_to(ROOT)}:{number}"
            assert lines[number].strip() == "```python", f"{where}: expected ```python next"
            end = lines.index("```", number + 1)
            blocks.append((where, "\n".join(lines[number + 1 : end]) + "\n"))
    return blocks


RUNNABLE = _runnable_blocks()


def test_the_readme_and_the_python_api_page_have_runnable_examples() -> None:
    pages = {where.split(":")[0] for where, _ in RUNNABLE}
    assert {"README.md", "docs/python-api.md"} <= pages


_SAYS = re.compile(r"^(\s*)print\((.*)\)  # (.*)$")
_CHECKER = """\
def __prints(__expected, *args, **kwargs):
    import io
    out = io.StringIO()
    print(*args, **kwargs, file=out)
    said = out.getvalue().rstrip("\\n")
    print(said)
    if __expected.endswith(" ..."):
        assert said.startswith(__expected[:-4]), f"printed {said!r}; the page says {__expected!r}"
    else:
        assert said == __expected, f"printed {said!r}; the page says {__expected!r}"
"""


def _checked(code: str) -> str:
    """``code`` with each ``print(...)  # TEXT`` line checking that it prints TEXT."""
    lines = []
    for line in code.splitlines():
        says = _SAYS.match(line)
        if says:
            indent, arguments, text = says.groups()
            line = f"{indent}__prints({text!r}, {arguments})"
        lines.append(line)
    return _CHECKER + "\n".join(lines) + "\n"


def test_a_print_comment_is_checked() -> None:
    namespace: dict = {}
    exec(_checked('print(1 + 1)  # 2\nprint("a b c")  # a b ...\n'), namespace)
    with pytest.raises(AssertionError, match="printed '3'; the page says '4'"):
        exec(_checked("print(3)  # 4\n"), namespace)


@pytest.mark.parametrize(("where", "code"), RUNNABLE, ids=[where for where, _ in RUNNABLE])
def test_a_runnable_example_runs_as_written(where: str, code: str, tmp_path: Path) -> None:
    for suite in ("checklists", "checklists_generative"):
        (tmp_path / suite).symlink_to(ROOT / suite)
    (tmp_path / "example.py").write_text(_checked(code), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    run_forked(str(tmp_path / "example.py"), [], tmp_path, tmp_path / "logs", 300, env)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_lands(page: Path) -> None:
    broken = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        landing = (page.parent / path).resolve() if path else page
        missing_anchor = anchor and landing.suffix == ".md" and anchor not in _anchors(landing)
        if not landing.exists() or missing_anchor:
            broken.append(target)
    assert broken == []


def _yaml_blocks(page: Path) -> list[object]:
    text = page.read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def _steps(document: object) -> list[dict]:
    """A GitHub Actions document's steps (a whole workflow, or a list of steps)."""
    if isinstance(document, list):
        return [step for step in document if isinstance(step, dict)]
    if isinstance(document, dict) and "jobs" in document:
        return [step for job in document["jobs"].values() for step in job.get("steps", [])]
    return []


def _uploads_a_baseline(step: dict) -> bool:
    path = str((step.get("with") or {}).get("path", ""))
    return "upload-artifact" in str(step.get("uses", "")) and "base" in path


def test_github_recipes_publish_the_baseline_after_a_failed_gate() -> None:
    uploads = [
        step
        for document in _yaml_blocks(ROOT / "docs" / "ci.md")
        for step in _steps(document)
        if _uploads_a_baseline(step)
    ]
    assert len(uploads) >= 3  # the gate recipe, the shards', the merge job's
    for step in uploads:
        # a bare condition carries an implicit success(): skipped after a failing capability
        assert "!cancelled()" in str(step.get("if", "")), step
        if "refs/heads/main" in str(step["if"]):
            assert step["with"].get("if-no-files-found") == "error", step


def test_gitlab_recipes_keep_the_baseline_of_a_failed_gate() -> None:
    jobs = [
        job
        for document in _yaml_blocks(ROOT / "docs" / "ci.md")
        if isinstance(document, dict) and "jobs" not in document
        for job in document.values()
        if isinstance(job, dict) and "script" in job
    ]
    keeping = [job for job in jobs if "base" in str(job.get("artifacts", {}).get("paths", ""))]
    assert len(keeping) >= 3
    for job in keeping:
        # GitLab's default, on_success, drops the artifacts of a job a failed gate ended
        assert job["artifacts"].get("when") == "always" or job.get("when") == "always", job


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (no script folder on sys.path)")
def test_plain_pytest_in_a_clone_finds_the_training_package() -> None:
    """``pytest tests/models/test_tiny.py`` (the console script puts no folder on sys.path, unlike
    ``python -m pytest``) imports ``tiny_training`` through the ini's ``pythonpath``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    quiet = ["--collect-only", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", *quiet, "tests/models/test_tiny.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _extending_paths() -> list[str]:
    """Every ``pytest_vlcheck.X`` path docs/extending.md names, and every name its complete
    example (``tests/fixtures/plugin/vlcheck_demo.py``) imports from the package."""
    page = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"pytest_vlcheck(?:\.\w+)+", page))
    demo = ROOT / "tests" / "fixtures" / "plugin" / "vlcheck_demo.py"
    for node in ast.walk(ast.parse(demo.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_vlcheck"):
            paths |= {f"{node.module}.{alias.name}" for alias in node.names}
    return sorted(paths)


def _resolve(path: str) -> object:
    """The module or attribute a dotted path names: its longest importable prefix, then
    attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(path)


@pytest.mark.parametrize("path", _extending_paths())
def test_the_extending_pages_import_paths_work(path: str) -> None:
    _resolve(path)


def test_the_extending_page_names_paths() -> None:
    paths = _extending_paths()
    assert "pytest_vlcheck.tasks.base.BaseTask" in paths
    assert "pytest_vlcheck.models.protocol.ModelOptions" in paths


def _table_names(page: str, heading: str, *, nth: int = 0) -> set[str]:
    """The backquoted names in the first column of the ``nth`` table under ``heading`` of
    ``page`` (a row may name several: `` `a`, `b` ``)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    tables = re.findall(r"(?:^\|.*\|\n)+", section, re.M)
    rows = tables[nth].splitlines()[2:]  # after the header and its rule
    return {name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])}


def test_every_generate_key_is_documented_and_no_other() -> None:
    from pytest_vlcheck.checklist import generate_spec

    documented = _table_names("docs/checklists.md", "## Generated examples: the `generate:` keys")
    assert documented == set(generate_spec._KEYS)


def test_every_scoring_stats_field_is_documented_and_no_other() -> None:
    import dataclasses

    from pytest_vlcheck.engine.runner.stats import ScoringStats

    fields = {f.name for f in dataclasses.fields(ScoringStats)}
    properties = {n for n, v in vars(ScoringStats).items() if isinstance(v, property)}
    assert _table_names("docs/python-api.md", "## `ScoringStats`") == fields | properties


def test_the_audit_vocabulary_is_documented_and_no_other() -> None:
    """Every blind baseline and every finding ``vlcheck audit`` can print, in docs/cli.md."""
    import numpy as np

    from pytest_vlcheck.audit import checks
    from pytest_vlcheck.audit.baselines import baseline_outcomes
    from pytest_vlcheck.audit.subject import TextChoice

    choices = [TextChoice(str(i), i, f"a red {s}", (f"a blue {s}",), ()) for i, s in
               enumerate(["cube", "ball", "cone"])]  # fmt: skip
    names = set(baseline_outcomes(choices, lambda texts: np.zeros(len(texts))))
    heading = "## What `vlcheck audit` says"
    assert _table_names("docs/cli.md", heading) == names
    source = Path(checks.__file__).read_text(encoding="utf-8")
    codes = set(re.findall(r'Finding\(\s*"([a-z_]+)"', source)) | {"blind_NAME"}
    assert _table_names("docs/cli.md", heading, nth=1) == codes
