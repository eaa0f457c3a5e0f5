"""The shape of the package, checked: the layering rules of the design brief as tests.

Folder imports point one way (no cycle between the package's folders), the engine renders
nothing, the plugin stays a thin layer of hooks, and no class or function grows past what a
reader takes in at once. Only task modules branch on a task kind's name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from pytest_vlcheck.tasks import TASK_NAMES

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_vlcheck"
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 300
MAX_PLUGIN_LINES = 300


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


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
            if limit and node.end_lineno - node.lineno + 1 > limit:
                yield f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"


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
