"""The package's imports point one way, down the pipeline, and no module reaches itself.

The folders are layers, each importing only its own layer or those below it:

    base < core < facts < inputs < plan < output < factory < doctor < api < cli

(base is ``errors``, ``safe_yaml``, ``redact`` and the package itself). An import from a lower
layer into a higher one is an arrow up; running ``python tests/test_import_graph.py`` prints the
measure.

Read from the source (``ast``), not by importing: every ``import`` counts, at module level,
inside functions (the lazy imports that keep start-up fast) and under ``TYPE_CHECKING``, because a
circle through any of them means two modules that cannot be understood, or moved, one without
the other. A submodule's implicit import of its package's ``__init__`` is not counted (Python
runs the package first, whatever it imports), nor are imports by name in a string
(``importlib.import_module``), which only the command registry uses.
"""

from __future__ import annotations

import ast
import functools
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "schematic"

# Bottom to top; a module belongs to the layer of its longest matching name.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "schematic",
            "schematic.errors",
            "schematic.messages",
            "schematic.safe_yaml",
            "schematic.redact",
            "schematic.data",
        ),
    ),
    ("core", ("schematic.core",)),
    ("facts", ("schematic.facts",)),
    ("inputs", ("schematic.inputs",)),
    ("plan", ("schematic.plan",)),
    ("output", ("schematic.output",)),
    ("factory", ("schematic.factory",)),
    ("doctor", ("schematic.doctor",)),
    ("api", ("schematic.api",)),
    ("cli", ("schematic.cli", "schematic.__main__")),
)


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


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Every module's imports of the package's modules (read once a run; callers only read)."""
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


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of the module's layer; None for a module in none."""
    matches = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        # `schematic` alone is the package's own module, not everything below it.
        if module == prefix or (prefix != "schematic" and module.startswith(prefix + "."))
    ]
    return max(matches)[1] if matches else None


def arrows_up(graph: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """Every import from a module into a higher layer than its own."""
    found = []
    for module in sorted(graph):
        here = layer_of(module)
        for target in sorted(graph[module]):
            there = layer_of(target)
            if here is not None and there is not None and there > here:
                found.append((module, target))
    return found


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


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


def test_every_module_is_in_a_layer() -> None:
    # A new module or folder is placed in the pipeline's order, not left beside it.
    assert [m for m in import_graph() if layer_of(m) is None] == []


def test_no_import_runs_up_the_layers() -> None:
    up = sorted(arrows_up(import_graph()))
    assert up == [], "imports into a higher layer: " + ", ".join(f"{a} -> {b}" for a, b in up)


def test_no_group_of_modules_imports_each_other() -> None:
    assert circles(import_graph()) == []


def test_every_package_is_installed() -> None:
    # A folder left out of pyproject's package list is missing from a non-editable install.
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text("utf-8"))
    listed = set(pyproject["tool"]["setuptools"]["packages"]) - {"schematic.shipped_profiles"}
    folders = {_module_name(init) for init in PACKAGE.rglob("__init__.py")}
    assert folders == listed


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


# What the command modules share; none of them imports a command module.
SHARED_BY_COMMANDS = {
    "schematic.cli.base",
    "schematic.cli.group",
    "schematic.cli.options",
    "schematic.cli.telling",
}


def test_command_modules_import_none_of_each_other() -> None:
    graph = import_graph()
    for module, targets in graph.items():
        if module.startswith("schematic.cli."):
            cli_targets = {t for t in targets if t.startswith("schematic.cli")}
            assert cli_targets <= SHARED_BY_COMMANDS, module


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
    assert bool(circles(graph)) == (circle is not None)


def test_circles_names_each_group_once() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}, "e": {"a"}}
    assert circles(graph) == [["a", "b"], ["c", "d"]]


def test_an_import_into_a_higher_layer_is_an_arrow_up() -> None:
    graph = {
        "schematic.inputs.reading": {"schematic.plan.cluster", "schematic.errors"},
        "schematic.cli.base": {"schematic.doctor.lint", "schematic"},
        "schematic.output.outdir": {"schematic.output.disk"},
    }
    assert arrows_up(graph) == [("schematic.inputs.reading", "schematic.plan.cluster")]
    assert layer_of("schematic.safe_yaml") == 0
    assert layer_of("schematic.coreish") is None


def main() -> int:
    """Print the structure as measured: modules, imports, arrows up, circles."""
    graph = import_graph()
    up = arrows_up(graph)
    groups = circles(graph)
    print(f"modules {len(graph)}, imports {sum(len(t) for t in graph.values())}")
    print(f"layers  {' < '.join(name for name, _ in LAYERS)}")
    print(f"arrows up {len(up)}" + "".join(f"\n  {a} -> {b}" for a, b in up))
    print(f"circles {len(groups)}" + "".join(f"\n  {' <-> '.join(g)}" for g in groups))
    return 1 if up or groups else 0


if __name__ == "__main__":
    sys.exit(main())
