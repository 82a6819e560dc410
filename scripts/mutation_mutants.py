"""The mutants `make mutation` runs: cosmic-ray's, for the modules and lines asked for.

cosmic-ray (``cosmic-ray init``) lists every mutant of a module: an operator and its
occurrence in the file. Mutants inside type annotations are left out: nothing runs them (the
package's annotations are strings, ``from __future__ import annotations``), mypy checks them.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SESSION = REPO / ".mutation" / "session.sqlite"
CACHE = REPO / ".mutation" / "mutants"

# The pipeline stages a sample is drawn across, the most specific folder first.
AREAS = {
    "render": "schematic/output/render/",
    "output": "schematic/output/",
    "plan": "schematic/plan/",
    "lint": "schematic/doctor/lint/",
    "triage": "schematic/doctor/triage/",
}


def area_of(module: str) -> str | None:
    return next((area for area, folder in AREAS.items() if module.startswith(folder)), None)


def area_modules() -> list[str]:
    return sorted(
        path.relative_to(REPO).as_posix()
        for folder in AREAS.values()
        for path in (REPO / folder).rglob("*.py")
    )


@dataclass(frozen=True, kw_only=True)
class Mutant:
    """One mutation: cosmic-ray's operator, its occurrence in the module, where it applies."""

    module: str
    operator: str
    occurrence: int
    line: int
    column: int
    definition: str
    source: str

    @property
    def where(self) -> str:
        return f"{self.module}:{self.line}"


def enumerate_mutants(modules: Sequence[str]) -> list[Mutant]:
    """Every mutant of ``modules`` outside annotations, in module and operator order."""
    mutants = []
    for module in modules:
        text = (REPO / module).read_text()
        lines = text.splitlines()
        annotations = annotation_spans(text)
        for found in _cosmic_ray_mutants(module, text):
            line, column = found["line"], found["column"]
            if not any(start <= (line, column) < end for start, end in annotations):
                mutants.append(Mutant(module=module, source=lines[line - 1].strip(), **found))
    return sorted(mutants, key=lambda m: (m.module, m.operator, m.occurrence))


def _cosmic_ray_mutants(module: str, text: str) -> list[dict[str, Any]]:
    # Listing a module's mutants takes seconds; they depend only on its text.
    cached = CACHE / f"{hashlib.sha256(text.encode()).hexdigest()}.json"
    if cached.exists():
        found: list[dict[str, Any]] = json.loads(cached.read_text())
        return found
    # Imported here: the tests of these scripts run where cosmic-ray is not installed.
    from cosmic_ray.commands.init import init
    from cosmic_ray.work_db import WorkDB, use_db

    CACHE.mkdir(parents=True, exist_ok=True)
    with use_db(str(SESSION), WorkDB.Mode.create) as work_db:
        init([REPO / module], work_db, {})
        items = list(work_db.work_items)
    found = []
    for item in items:
        (spec,) = item.mutations
        line, column = spec.start_pos
        found.append(
            {
                "operator": spec.operator_name,
                "occurrence": spec.occurrence,
                "line": line,
                "column": column,
                "definition": spec.definition_name or "",
            }
        )
    cached.write_text(json.dumps(found))
    return found


def annotation_spans(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's annotations are: (line, column) from, and up to."""
    spans = []
    for node in ast.walk(ast.parse(text)):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for annotation in found:
            if annotation is not None and annotation.end_lineno is not None:
                start = (annotation.lineno, annotation.col_offset)
                end = (annotation.end_lineno, annotation.end_col_offset or 0)
                spans.append((start, end))
    return spans


def changed_modules(base: str) -> list[str]:
    """The package's modules added or changed since ``base`` (committed or not)."""
    names = _git("diff", "--name-only", "--diff-filter=AMR", base, "--", "schematic/")
    return sorted(name for name in names.splitlines() if name.endswith(".py"))


def changed_lines(base: str, module: str) -> set[int]:
    """The lines of ``module`` as it is now that differ from ``base``."""
    lines: set[int] = set()
    for hunk in re.finditer(
        r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", _git("diff", "-U0", base, "--", module), re.M
    ):
        start, count = int(hunk[1]), int(hunk[2] or 1)
        lines.update(range(start, start + count))
    return lines


def head_commit() -> str:
    return _git("rev-parse", "HEAD").strip()


def _git(*arguments: str) -> str:
    finished = subprocess.run(
        ["git", *arguments], cwd=REPO, capture_output=True, text=True, check=False
    )
    if finished.returncode != 0:
        raise SystemExit(f"git {' '.join(arguments)}: {finished.stderr.strip()}")
    return finished.stdout


def relocate(recorded: Mutant, current: Iterable[Mutant]) -> Mutant | None:
    """The mutant of today's code that is ``recorded``: same operator on the same code, nearest."""
    same = [
        mutant
        for mutant in current
        if (mutant.module, mutant.operator, mutant.definition, mutant.source, mutant.column)
        == (
            recorded.module,
            recorded.operator,
            recorded.definition,
            recorded.source,
            recorded.column,
        )
    ]
    return min(same, key=lambda m: (abs(m.line - recorded.line), m.line), default=None)
