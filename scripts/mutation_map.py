"""Which tests run each line of the package: the map `make mutation` picks a mutant's tests from.

``build`` runs every test file once under coverage, each test's lines (and those of the
``python -m schematic`` processes it starts) recorded under its node ID by the
``mutation_context`` plugin. The map keeps each module's lines as they were then, so a module
edited since is still mapped: its lines are matched to the recorded ones, and a line that is
new gets the tests of its whole module.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mutation_context import CONTEXT_VARIABLE, DURATIONS_VARIABLE

REPO = Path(__file__).resolve().parent.parent
MAP_FILE = REPO / ".mutation" / "test-map.json"

# `context` names each process's lines after the test that was running when it started: the
# plugin sets the variable around each test, and the processes a test starts inherit it.
_COVERAGE_CONFIG = f"""\
[run]
source_pkgs = schematic
parallel = true
patch = subprocess
context = ${{{CONTEXT_VARIABLE}-}}
"""


def test_files() -> list[Path]:
    return sorted((REPO / "tests").glob("test_*.py"))


def _selector(context: str) -> str:
    # A parametrized test is run whole: its IDs may hold newlines and quotes no shell keeps.
    return context.split("[", 1)[0]


@dataclass(frozen=True)
class ModuleTests:
    """One module's recorded lines and, per line, the tests that ran it."""

    lines: tuple[str, ...]
    by_line: dict[int, tuple[str, ...]]
    import_time: frozenset[int]

    def whole_module(self) -> tuple[str, ...]:
        """The tests that ran any of the module's code after it was imported."""
        return tuple(sorted({test for tests in self.by_line.values() for test in tests}))

    def tests_for(self, line: int, current_lines: Sequence[str]) -> tuple[str, ...]:
        """The tests for a mutant on ``line`` (1-based) of the module as it is now."""
        recorded = _recorded_line(self.lines, current_lines, line)
        if recorded is None:
            return self.whole_module()
        # Coverage records a statement written over several lines at its first line.
        shape = _shape(self.lines)
        first = shape.starts.get(recorded, recorded)
        tests = self.by_line.get(first, ())
        if first in shape.cached:
            # A cached function runs once per process, its lines recorded under whichever
            # test called it first; every test that reads its answer is a test of it.
            return self.whole_module()
        if first in self.import_time and not (tests and first in shape.in_functions):
            # A line run at import (a table, a signature) is read by every caller of the
            # module; a function run while the tests were collected is still run by its tests.
            return self.whole_module()
        return tests


@dataclass(frozen=True)
class _Shape:
    starts: dict[int, int]  # each line of a statement (or except clause) to its first line
    in_functions: frozenset[int]  # the lines of function bodies
    cached: frozenset[int]  # the lines of functions decorated with a cache


_CACHES = {"cache", "lru_cache", "cached_property"}


@functools.cache
def _shape(lines: tuple[str, ...]) -> _Shape:
    starts: dict[int, int] = {}
    in_functions: set[int] = set()
    cached: set[int] = set()
    # Breadth first: a statement nested in another overwrites the lines it holds.
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.stmt | ast.excepthandler) and node.end_lineno is not None:
            starts.update(dict.fromkeys(range(node.lineno, node.end_lineno + 1), node.lineno))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
            body = range(node.body[0].lineno, node.end_lineno + 1)
            in_functions.update(body)
            if any(_decorator_name(d) in _CACHES for d in node.decorator_list):
                cached.update(body)
    return _Shape(starts, frozenset(in_functions), frozenset(cached))


def _decorator_name(decorator: ast.expr) -> str:
    called = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(called, ast.Attribute):
        return called.attr
    return called.id if isinstance(called, ast.Name) else ""


def _recorded_line(recorded: Sequence[str], current: Sequence[str], line: int) -> int | None:
    if tuple(recorded) == tuple(current):
        return line
    matcher = difflib.SequenceMatcher(a=list(recorded), b=list(current), autojunk=False)
    for old_start, new_start, size in matcher.get_matching_blocks():
        if new_start < line <= new_start + size:
            return old_start + line - new_start
    return None


@dataclass(frozen=True)
class CoverageMap:
    """Each module's tests, and how long each test took while the map was made."""

    modules: dict[str, ModuleTests]
    durations: dict[str, float]

    def seconds(self, tests: Iterable[str]) -> float:
        return sum(self.durations.get(test, 1.0) for test in tests)

    def runnable(self, tests: Iterable[str]) -> tuple[str, ...]:
        """The tests that are still there: one renamed since the map would stop pytest."""
        return tuple(test for test in tests if _defined(*test.split("::")))


@functools.cache
def _test_source(path: str) -> str:
    file = REPO / path
    return file.read_text() if file.is_file() else ""


def _defined(path: str, *names: str) -> bool:
    source = _test_source(path)
    return bool(source) and all(
        re.search(rf"^\s*(?:async def|def|class) {re.escape(name)}\b", source, re.M)
        for name in names
    )


def changed_since_map() -> list[str]:
    """Test files written after the map was made: tests they added are not run."""
    made = MAP_FILE.stat().st_mtime
    return [
        path.relative_to(REPO).as_posix() for path in test_files() if path.stat().st_mtime > made
    ]


def load() -> CoverageMap:
    """The map: module path (relative to the repository) to its tests, and their durations."""
    if not MAP_FILE.exists():
        raise SystemExit(f"{MAP_FILE.relative_to(REPO)} is missing: run `make mutation-map`")
    raw = json.loads(MAP_FILE.read_text())
    modules = {
        module: ModuleTests(
            lines=tuple(entry["lines"]),
            by_line={int(line): tuple(tests) for line, tests in entry["by_line"].items()},
            import_time=frozenset(entry["import_time"]),
        )
        for module, entry in raw["modules"].items()
    }
    return CoverageMap(modules=modules, durations=dict(raw["durations"]))


def build(files: Sequence[Path]) -> None:
    """Run the test files under coverage, in one process, and write the map."""
    import coverage

    MAP_FILE.parent.mkdir(exist_ok=True)
    by_module: dict[str, dict[int, set[str]]] = {}
    import_time: dict[str, set[int]] = {}
    durations: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="mutation-map-") as scratch:
        config = Path(scratch) / "coveragerc"
        config.write_text(_COVERAGE_CONFIG)
        data_file = Path(scratch) / "coverage"
        timings = Path(scratch) / "durations.json"
        _run_under_coverage(files, config, data_file, timings)
        for test, seconds in json.loads(timings.read_text()).items():
            durations[_selector(test)] = durations.get(_selector(test), 0.0) + seconds
        combined = coverage.Coverage(data_file=str(data_file), config_file=str(config))
        combined.combine(data_paths=[scratch], strict=True)
        data = combined.get_data()
        for measured in data.measured_files():
            module = Path(measured).resolve().relative_to(REPO).as_posix()
            lines = by_module.setdefault(module, {})
            for line, contexts in data.contexts_by_lineno(measured).items():
                for context in contexts:
                    if context:
                        lines.setdefault(line, set()).add(_selector(context))
                    else:
                        import_time.setdefault(module, set()).add(line)
    modules = {
        module: {
            "lines": (REPO / module).read_text().splitlines(),
            "by_line": {str(line): sorted(tests) for line, tests in sorted(lines.items())},
            "import_time": sorted(import_time.get(module, ())),
        }
        for module, lines in sorted(by_module.items())
    }
    rounded = {test: round(seconds, 3) for test, seconds in sorted(durations.items())}
    document = {"modules": modules, "durations": rounded}
    MAP_FILE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def _run_under_coverage(
    files: Sequence[Path], config: Path, data_file: Path, timings: Path
) -> None:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO / "scripts"), environment.get("PYTHONPATH")])
    )
    environment["COVERAGE_FILE"] = str(data_file)
    environment[DURATIONS_VARIABLE] = str(timings)
    # The property tests replay fixed examples (tests/conftest.py), as in the mutants' runs.
    environment["CI"] = "1"
    environment.pop(CONTEXT_VARIABLE, None)
    command = [
        sys.executable, "-m", "coverage", "run", f"--rcfile={config}",
        "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
        "-p", "mutation_context", *map(str, files),
    ]  # fmt: skip
    finished = subprocess.run(command, cwd=REPO, env=environment, check=False)
    # A failing test still maps what it ran; tests pytest could not run map nothing.
    if finished.returncode not in (0, 1) or not timings.exists():
        raise SystemExit(f"pytest exited {finished.returncode}: the map was not made")
