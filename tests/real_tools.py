"""The real consumers the tests run, helm and kubectl, found one way: the copy ``make tools``
installs into ``.venv/tools`` (or ``$TALOS_SCHEMATIC_TOOLS``) first, else the one on PATH.

Which copy runs is never silent: pytest's header names it (a kubectl on PATH is whatever
version that machine has), and a test that needs a missing tool is skipped with a reason naming
what is missing and how to install it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["HELM", "KUBECTL", "TOOLS", "RealTool", "real_tool"]

TOOLS = Path(
    os.environ.get("TALOS_SCHEMATIC_TOOLS", Path(__file__).resolve().parents[1] / ".venv" / "tools")
)


@dataclass(frozen=True)
class RealTool:
    """A tool as found: its path (None: missing) and a sentence saying which copy it is."""

    name: str
    path: str | None
    found: str

    @property
    def needed(self) -> pytest.MarkDecorator:
        """Skip the test where the tool is missing, saying so."""
        return pytest.mark.skipif(self.path is None, reason=self.found)


def real_tool(name: str, tools: Path = TOOLS, search_path: str | None = None) -> RealTool:
    """``name`` from ``tools``, else from the PATH (``search_path``, default the environment's)."""
    installed = tools / name
    if installed.is_file() and os.access(installed, os.X_OK):
        return RealTool(name, str(installed), f"{name}: {installed} (make tools)")
    on_path = shutil.which(name, path=search_path)
    if on_path is not None:
        return RealTool(name, on_path, f"{name}: {on_path} from PATH ({installed} is missing)")
    return RealTool(
        name, None, f"needs {name}: neither {installed} (make tools installs it) nor one on PATH"
    )


HELM, KUBECTL = real_tool("helm"), real_tool("kubectl")
