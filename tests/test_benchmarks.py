"""`make bench` runs on a fresh clone: every benchmark imports only what the project installs."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))
# A benchmark runs as a script, so its own folder is on its path: its siblings import.
SIBLINGS = frozenset(path.stem for path in BENCHMARKS)


def _imported_names(path: Path) -> Iterator[str]:
    """Top-level names of the modules ``path`` imports, by statement or by ``__import__``."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.partition(".")[0]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
        ):
            yield from (
                arg.value.partition(".")[0]
                for arg in node.args[:1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple):
            # `for name in ("typer", "yaml"): __import__(name)`: the names are in the loop.
            calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
            if any(isinstance(c.func, ast.Name) and c.func.id == "__import__" for c in calls):
                yield from (
                    item.value
                    for item in node.iter.elts
                    if isinstance(item, ast.Constant) and isinstance(item.value, str)
                )


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda path: path.name)
def test_every_benchmark_imports_only_installed_modules(path: Path) -> None:
    missing = sorted(
        {
            name
            for name in _imported_names(path)
            if name not in SIBLINGS and importlib.util.find_spec(name) is None
        }
    )
    assert not missing, f"{path.name} imports {missing}, which `make` does not install"


def test_the_check_sees_a_module_a_fresh_install_lacks(tmp_path: Path) -> None:
    script = tmp_path / "bench.py"
    script.write_text('for name in ("yaml", "no_such_module_here"):\n    __import__(name)\n')
    assert "no_such_module_here" in set(_imported_names(script))
    assert importlib.util.find_spec("no_such_module_here") is None
