"""The command line stays thin and the library's front door small.

A command module parses options, calls :mod:`schematic.api`, prints and maps errors to exit
codes; when one grows past 300 lines, logic has crept into it that belongs to the library. The
entry point itself only chains the stages (pip-audit's ``_audit.py`` is the size to keep).
"""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "schematic"
CLI_LIMIT = 300
API_LIMIT = 150


def _lines(path: Path) -> int:
    return len(path.read_text("utf-8").splitlines())


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_each_command_module_is_thin(path: Path) -> None:
    assert _lines(path) <= CLI_LIMIT, f"{path.name}: move its logic below the command line"


@pytest.mark.parametrize("path", sorted((PACKAGE / "api").glob("*.py")), ids=lambda p: p.name)
def test_each_module_of_the_library_entry_point_is_small(path: Path) -> None:
    # Split by responsibility (requests, planning, a run's notes) when one grows, never squeezed.
    assert _lines(path) <= API_LIMIT, f"api/{path.name}: split it by responsibility"
