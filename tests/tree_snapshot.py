"""The whole state of a directory tree, for tests that prove a run touched nothing outside
what the tool owns."""

from __future__ import annotations

import os
from pathlib import Path


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under ``directory``: file bytes, link targets, directories."""
    found: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        name = path.relative_to(directory).as_posix()
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "dir"
        elif not path.is_file():
            found[name] = "special"  # a FIFO: reading it would block
        else:
            found[name] = path.read_bytes()
    return found
