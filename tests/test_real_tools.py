"""The tests' one lookup of helm and kubectl (tests/real_tools.py): make's copy first, a copy
on PATH named as such, and a missing one said, never picked silently."""

from __future__ import annotations

from pathlib import Path

import pytest
from real_tools import real_tool


def _executable(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_copy_make_installs_comes_first(tmp_path: Path) -> None:
    installed = _executable(tmp_path / "tools", "kubectl")
    on_path = _executable(tmp_path / "bin", "kubectl")
    found = real_tool("kubectl", tmp_path / "tools", str(on_path.parent))
    assert found.path == str(installed)
    assert found.found == f"kubectl: {installed} (make tools)"


def test_a_copy_on_path_is_used_and_named(tmp_path: Path) -> None:
    on_path = _executable(tmp_path / "bin", "kubectl")
    found = real_tool("kubectl", tmp_path / "tools", str(on_path.parent))
    assert found.path == str(on_path)
    assert (
        found.found == f"kubectl: {on_path} from PATH ({tmp_path / 'tools' / 'kubectl'} is missing)"
    )


def test_a_file_that_cannot_run_is_not_the_tool(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "helm").write_text("half a download")
    found = real_tool("helm", tmp_path / "tools", str(tmp_path / "bin"))
    assert found.path is None


def test_a_missing_tool_skips_naming_what_is_missing(tmp_path: Path) -> None:
    found = real_tool("helm", tmp_path / "tools", str(tmp_path / "bin"))
    assert found.path is None
    assert found.found == (
        f"needs helm: neither {tmp_path / 'tools' / 'helm'} (make tools installs it) "
        "nor one on PATH"
    )
    mark = found.needed.mark
    assert mark.args == (True,)
    assert mark.kwargs["reason"] == found.found


def test_a_found_tool_does_not_skip(tmp_path: Path) -> None:
    _executable(tmp_path / "tools", "helm")
    assert real_tool("helm", tmp_path / "tools", "").needed.mark.args == (False,)


def test_the_run_header_names_each_tool(pytestconfig: pytest.Config) -> None:
    header = pytestconfig.hook.pytest_report_header(config=pytestconfig, start_path=Path())
    lines = [line for lines in header for line in ([lines] if isinstance(lines, str) else lines)]
    assert any(line.startswith(("helm: ", "needs helm: ")) for line in lines)
    assert any(line.startswith(("kubectl: ", "needs kubectl: ")) for line in lines)
