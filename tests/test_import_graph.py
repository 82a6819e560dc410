"""The package's imports point one way: no module reaches itself through its imports.

Read from the source (``ast``), not by importing: every ``import`` counts, at module level,
inside functions (the lazy imports that keep start-up fast) and under ``TYPE_CHECKING``, because a
circle through any of them means two modules that cannot be understood, or moved, one without
the other. A submodule's implicit import of its package's ``__init__`` is not counted (Python
runs the package first, whatever it imports), nor are imports by name in a string
(``importlib.import_module``), which only the command registry uses.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "schematic"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """The package's modules that ``module`` imports, anywhere in its text."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                # `from schematic.inputs import documents` imports the submodule itself.
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    yield submodule
                elif source in known:
                    yield source


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {
        module: {target for target in _imported(module, path, known) if target != module}
        for module, path in known.items()
    }


def find_circle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One circle of imports (``[a, b, a]``), or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        # Iterative depth-first search: each frame is a module and its targets still to visit.
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        path.append(start)
        on_path.add(start)
        while stack:
            module, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                stack.pop()
                path.pop()
                on_path.discard(module)
                done.add(module)
            elif target in on_path:
                return [*path[path.index(target) :], target]
            elif target not in done:
                stack.append((target, iter(sorted(graph.get(target, ())))))
                path.append(target)
                on_path.add(target)
    return None


def test_the_graph_is_read() -> None:
    graph = import_graph()
    # Anchors that show the reader sees each kind of import: module level, function level
    # (the fast readers' lazy fallback to the models) and TYPE_CHECKING.
    assert "schematic.inputs.cluster_values" in graph["schematic.inputs.documents"]
    assert "schematic.inputs.documents" in graph["schematic.inputs.cluster_file"]
    assert "schematic.plan.cluster" in graph["schematic.plan.charts"]
    assert len(graph) > 40


def test_no_import_circle_in_the_package() -> None:
    circle = find_circle(import_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_reading_the_input_files_does_not_import_planning() -> None:
    graph = import_graph()
    later = (
        "schematic.plan.cluster",
        "schematic.plan.charts",
        "schematic.output.render",
        "schematic.cli",
    )
    for module, targets in graph.items():
        if module.startswith("schematic.inputs"):
            assert not {t for t in targets if t.startswith(later)}, module


def test_command_modules_import_none_of_each_other() -> None:
    graph = import_graph()
    for module, targets in graph.items():
        if module.startswith("schematic.cli."):
            cli_targets = {t for t in targets if t.startswith("schematic.cli")}
            assert cli_targets <= {"schematic.cli.base"}, module


@pytest.mark.parametrize(
    ("graph", "circle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"b2"}, "b2": {"b"}}, ["b", "b2", "b"]),
    ],
)
def test_find_circle(graph: dict[str, set[str]], circle: list[str] | None) -> None:
    assert find_circle(graph) == circle
