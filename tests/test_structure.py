"""The shape of the package, checked: the layering rules of the design brief as tests.

Imports point one way (no cycle between the package's folders, nor between its files), the
engine renders nothing, the plugin stays a thin layer of hooks, and no class or function
grows past what a reader takes in at once. Only task modules branch on a task kind's name.
The Layout (``docs/layout.md``, else README's section) names every part of the package.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from pytest_vlcheck.tasks import TASK_NAMES

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_vlcheck"
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 250
MAX_PLUGIN_LINES = 300


@functools.cache
def _parsed() -> tuple[tuple[Path, ast.Module], ...]:
    """Every module of the package, parsed once for all the checks here."""
    return tuple(
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    )


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    yield from _parsed()


def _unit(path: Path) -> str:
    """A folder of the package, or a root module by its name."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _imported_units(tree: ast.Module) -> set[str]:
    units = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == "pytest_vlcheck":
                names = [f"pytest_vlcheck.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        units |= {n.split(".")[1] for n in names if n.startswith("pytest_vlcheck.")}
    return units


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path, tree in _modules():
        unit = _unit(path)
        graph.setdefault(unit, set()).update(_imported_units(tree) - {unit})
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path, or None (depth-first search)."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node], _ = "open", stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node], _ = "done", stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_folders_import_each_other_one_way() -> None:
    assert _cycle(_graph()) is None


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (getattr(test, "id", None) or getattr(test, "attr", None)) == "TYPE_CHECKING"


def _outside_type_checking(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            stack.extend(child.orelse if _is_type_checking(child) else [child])


def _lazy_exports(package: str) -> dict[str, str]:
    """Name -> module of a package that resolves names on first use (``lazy``): importing
    one of those names imports that module, not the package's others."""
    return dict(getattr(importlib.import_module(package), "_EXPORTS", {}))


def _imported_modules(
    tree: ast.Module, modules: set[str], lazy: dict[str, dict[str, str]]
) -> set[str]:
    """The ``modules`` a module imports, at its top or inside a function; a name a package
    exports lazily (``lazy``: package -> name -> module) leads to the module defining it."""
    targets: set[str] = set()
    for node in _outside_type_checking(tree):
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            exports = lazy.get(node.module, {})
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                targets.add(full if full in modules else exports.get(alias.name, node.module))
    return targets & modules


@functools.cache
def _file_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    trees = {_module_name(path): (path, tree) for path, tree in _modules()}
    packages = {name for name, (path, _) in trees.items() if path.name == "__init__.py"}
    lazy = {package: _lazy_exports(package) for package in packages}
    return {
        name: _imported_modules(tree, set(trees), lazy) - {name}
        for name, (_, tree) in trees.items()
    }


def test_no_two_files_import_each_other_even_through_others() -> None:
    """Imports inside functions count (a circle there is a type in the wrong file, kept
    working by a late import); imports for annotations only do not."""
    assert _cycle(_file_graph()) is None


def test_the_file_graph_sees_late_imports_and_skips_annotation_ones() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "import p.e\n"
        "from p.a import x\n"
        "from p import c\n"
        "if TYPE_CHECKING:\n"
        "    from p.b import y\n"
        "else:\n"
        "    from p.f import y\n"
        "def late():\n"
        "    from p import lazy_name, plain\n"
    )
    modules = {"p", "p.a", "p.b", "p.c", "p.d", "p.e", "p.f"}
    found = _imported_modules(tree, modules, {"p": {"lazy_name": "p.d"}})
    assert found == {"p", "p.a", "p.c", "p.d", "p.e", "p.f"}


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_engine_renders_nothing_and_knows_no_gate() -> None:
    engine = {u for p, t in _modules() if _unit(p) == "engine" for u in _imported_units(t)}
    assert not engine & {"report", "gates"}


def test_the_plugin_is_a_thin_layer_of_hooks() -> None:
    lines = (PACKAGE / "plugin.py").read_text(encoding="utf-8").splitlines()
    assert len(lines) < MAX_PLUGIN_LINES


def _long_definitions() -> Iterator[str]:
    for path, tree in _modules():
        for node in ast.walk(tree):
            limit = {
                ast.ClassDef: MAX_CLASS_LINES,
                ast.FunctionDef: MAX_FUNCTION_LINES,
                ast.AsyncFunctionDef: MAX_FUNCTION_LINES,
            }.get(type(node))
            if not limit:
                continue
            where = path.relative_to(PACKAGE).as_posix()
            if node.end_lineno - node.lineno + 1 > limit:
                yield f"{where}:{node.lineno} {node.name}"


def test_no_class_or_function_outgrows_a_reading() -> None:
    assert list(_long_definitions()) == []


def _elements(node: ast.expr) -> list[ast.expr]:
    """A literal collection's elements, or the node itself."""
    return list(node.elts) if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]


def _task_name_branches() -> Iterator[str]:
    """Comparisons of a task (or kind) with a task kind's name outside ``tasks/``: the kinds'
    knowledge leaking (a key that happens to share a kind's name, ``"caption" in row``, is
    not one)."""
    for path, tree in _modules():
        if _unit(path) == "tasks":
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            values = [
                element.value
                for operand in (node.left, *node.comparators)
                for element in _elements(operand)
                if isinstance(element, ast.Constant)
            ]
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            }
            if names & {"task", "kind"} and any(value in TASK_NAMES for value in values):
                yield f"{path.relative_to(PACKAGE)}:{node.lineno}"


def test_only_the_task_modules_branch_on_a_task_kind() -> None:
    assert list(_task_name_branches()) == []


RESULT_PARAMETERS = {"row", "rows", "result", "results", "run", "matrix"}
FILE_READERS = {"report/loader.py", "cli/merge.py", "cli/merge_checks.py"}
"""Where JSON is read: the report loader and ``vlcheck merge``'s readers."""


def _untyped_result_parameters() -> Iterator[str]:
    """Parameters named like a result, a row, a run or a matrix but typed as a JSON dict
    (``dict[str, Any]``, ``Mapping[str, Any]``) in report/ and cli/, outside the readers."""
    for path, tree in _modules():
        where = path.relative_to(PACKAGE).as_posix()
        if _unit(path) not in ("report", "cli") or where in FILE_READERS:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for arg in arguments:
                text = "" if arg.annotation is None else ast.unparse(arg.annotation)
                if arg.arg in RESULT_PARAMETERS and re.search(r"(dict|Mapping)\[str, Any\]", text):
                    yield f"{where}:{node.lineno} {node.name}({arg.arg}: {text})"


def test_reports_and_commands_take_typed_results() -> None:
    assert list(_untyped_result_parameters()) == []


def _layout_block() -> str:
    """The package tree of the Layout: ``docs/layout.md`` when it exists, else README's
    ``## Layout`` section; its first fenced block."""
    page = ROOT / "docs" / "layout.md"
    if page.exists():
        text = page.read_text(encoding="utf-8")
    else:
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        text = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return text.split("```", 2)[1]


def _package_parts() -> set[str]:
    """The root modules (``plugin.py``) and folders (``run/``) of the package."""
    return {
        p.name if p.is_file() else p.name + "/"
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.is_file()) or (p.is_dir() and (p / "__init__.py").exists())
    }


def test_the_layout_names_every_root_module_and_folder() -> None:
    block = _layout_block()
    named = set(re.findall(r"(?<![\w/.])(\w+(?:\.py|/))", block))
    assert sorted(_package_parts() - named) == []
    stale = {n for n in named if n.endswith(".py")} - _package_parts()
    assert sorted(stale) == []


FAMILY_SIZE = 3
MAX_FOLDER_MODULES = 20
ONE_MODULE_PER_FORMAT = {"importers"}
"""Folders of one module per format by design: a shared first word there is a format's name."""
SUBJECT_FOLDERS = {
    "models/backends",
    "models/generative",
    "models/live",
    "models/pixels",
    "engine/scores",
    "engine/feed",
    "engine/runner",
    "engine/judging",
    "run/distributed",
    "tasks/caption",
}
"""Folders that hold one subject each (``docs/layout.md``): their modules do not go back to
file-name prefixes beside them."""


def _folders() -> Iterator[Path]:
    """Every package folder of the package, the package itself first."""
    yield from sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def _module_stems(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")


def _prefix_families(stems: list[str]) -> dict[str, list[str]]:
    """First word -> the modules starting with it, for words shared by ``FAMILY_SIZE``
    modules or more: a folder spelled as a file-name prefix."""
    families: dict[str, list[str]] = {}
    for stem in stems:
        families.setdefault(stem.split("_")[0], []).append(stem)
    return {word: found for word, found in families.items() if len(found) >= FAMILY_SIZE}


def _exempt(folder: Path) -> bool:
    return folder.relative_to(PACKAGE).as_posix() in ONE_MODULE_PER_FORMAT


def test_no_folder_holds_a_family_of_modules_sharing_a_first_word() -> None:
    found = {
        folder.relative_to(PACKAGE.parent).as_posix(): families
        for folder in _folders()
        if not _exempt(folder) and (families := _prefix_families(_module_stems(folder)))
    }
    assert found == {}


def test_the_prefix_guard_finds_a_family() -> None:
    stems = ["live", "live_check", "live_guard", "vqa_live", "vqa_backend"]
    assert _prefix_families(stems) == {"live": ["live", "live_check", "live_guard"]}
    assert _prefix_families(["image_feed", "image_store", "scoring"]) == {}


def test_no_folder_outgrows_twenty_modules() -> None:
    crowded = {
        folder.relative_to(PACKAGE.parent).as_posix(): len(_module_stems(folder))
        for folder in _folders()
        if not _exempt(folder) and len(_module_stems(folder)) > MAX_FOLDER_MODULES
    }
    assert crowded == {}


def test_the_subject_folders_are_there() -> None:
    folders = {folder.relative_to(PACKAGE).as_posix() for folder in _folders()}
    assert sorted(SUBJECT_FOLDERS - folders) == []


def test_the_layout_names_every_subfolder() -> None:
    named = set(re.findall(r"(?<![\w/.])(\w+/)", _layout_block()))
    missing = {
        folder.relative_to(PACKAGE).as_posix()
        for folder in _folders()
        if folder != PACKAGE and folder.name + "/" not in named
    }
    assert sorted(missing) == []


TESTS = ROOT / "tests"
TEST_SUPPORT = {"fixtures", "helpers"}
"""Folders of tests/ that hold no tests of a package folder: data files, shared helpers."""


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts)


def test_test_files_have_unique_basenames() -> None:
    """pytest imports a test file by its basename (no ``__init__.py`` in tests/)."""
    names = [p.name for p in _test_files()]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_the_test_folders_mirror_the_package() -> None:
    folders = {p.relative_to(TESTS).parts[0] for p in _test_files() if p.parent != TESTS}
    package = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert sorted(folders - package) == []
    support = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert sorted(support - package - TEST_SUPPORT) == []
