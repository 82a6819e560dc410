"""Writing a rendered tree to a directory atomically, and comparing one with a directory.

:func:`write_outputs` builds the whole tree in a temporary directory beside the target and then
swaps it in, so a failed run leaves the previous output as it was; the directory is the tool's
alone (``check`` reports files it did not write), so a non-empty directory without the tool's
index is refused rather than replaced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from schematic.errors import OutputError

__all__ = ["Drift", "compare_outputs", "write_outputs"]


@dataclass(frozen=True)
class Drift:
    """How a directory differs from the files that should be in it (relative POSIX paths)."""

    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.missing or self.extra)

    def lines(self) -> list[str]:
        """One ``changed: path`` / ``missing: path`` / ``extra: path`` line per file."""
        return sorted(
            [f"changed: {path}" for path in self.changed]
            + [f"missing: {path}" for path in self.missing]
            + [f"extra: {path}" for path in self.extra],
            key=lambda line: (line.split(": ", 1)[1], line),
        )


def _check_paths(files: Mapping[str, bytes]) -> None:
    # Plain string checks: a cluster of 10,000 pools has 50,000 paths to vet.
    for name in files:
        parts = name.split("/")
        if not name or name.startswith("/") or ".." in parts or "" in parts or "\0" in name:
            raise OutputError(f"refusing to write {name!r}: not a path inside the directory")


def _existing(directory: Path) -> dict[str, Path]:
    """Files under ``directory`` by relative POSIX path; hidden names are not ours to judge."""
    found: dict[str, Path] = {}
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            if name.startswith("."):
                continue
            path = Path(root) / name
            found[path.relative_to(directory).as_posix()] = path
    return found


def compare_outputs(directory: Path, files: Mapping[str, bytes]) -> Drift:
    """Which of ``files`` differ from or are missing in ``directory``, and which it has extra."""
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"{directory}: not a directory")
    present = _existing(directory) if directory.is_dir() else {}
    changed: list[str] = []
    missing: list[str] = []
    for name, content in sorted(files.items()):
        path = present.get(name)
        if path is None:
            missing.append(name)
            continue
        try:
            if path.read_bytes() != content:
                changed.append(name)
        except OSError as err:
            raise OutputError(f"{path}: cannot read: {err.strerror}") from None
    extra = sorted(set(present) - set(files))
    return Drift(tuple(changed), tuple(missing), tuple(extra))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_outputs(directory: Path, files: Mapping[str, bytes], *, marker: str) -> bool:
    """Make ``directory`` hold exactly ``files``; False when it already did (nothing written).

    ``marker`` is a file the tool always writes (its index): a non-empty directory without it
    is someone else's and is refused.
    """
    _check_paths(files)
    if directory.exists():
        if not directory.is_dir():
            raise OutputError(f"{directory}: exists and is not a directory")
        if not compare_outputs(directory, files):
            return False
        visible = [entry for entry in directory.iterdir() if not entry.name.startswith(".")]
        if visible and not (directory / marker).is_file():
            raise OutputError(
                f"{directory}: not empty and holds no {marker} from an earlier run; give a new "
                "or empty directory (the whole directory is replaced)"
            )
    parent = directory.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".new", dir=parent))
    except OSError as err:
        raise OutputError(f"{directory}: cannot create a directory beside it: {err}") from None
    try:
        _write_tree(str(staging), files)
        if directory.exists():
            _keep_hidden(directory, staging)
        mode = directory.stat().st_mode if directory.exists() else 0o777 & ~_umask()
        staging.chmod(mode & 0o7777)
        _swap(staging, directory.resolve())
    except OSError as err:
        raise OutputError(f"{directory}: cannot write: {err}") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return True


def _write_tree(root: str, files: Mapping[str, bytes]) -> None:
    # os-level calls on string paths: pathlib objects per file cost more than the writes.
    made = {""}
    for name, content in files.items():
        folder, _, _ = name.rpartition("/")
        if folder not in made:
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            made.add(folder)
        _write_file(os.path.join(root, name), content)


def _write_file(path: str, content: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)


def _keep_hidden(directory: Path, staging: Path) -> None:
    """Carry over hidden entries (``.gitkeep``, ``.gitattributes``): not ours, so kept."""
    for entry in directory.iterdir():
        if entry.name.startswith("."):
            target = staging / entry.name
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, target, symlinks=True)
            else:
                shutil.copy2(entry, target, follow_symlinks=False)


def _swap(staging: Path, directory: Path) -> None:
    """Replace ``directory`` with ``staging``; on failure the old directory is put back."""
    if not directory.exists():
        staging.rename(directory)
        return
    retired = Path(
        tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".old", dir=directory.parent)
    )
    retired.rmdir()
    directory.rename(retired)
    try:
        staging.rename(directory)
    except OSError:
        retired.rename(directory)
        raise
    shutil.rmtree(retired, ignore_errors=True)
