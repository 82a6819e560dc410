"""Writing a rendered tree into a directory, and comparing one with a directory.

The tool owns only what it wrote: the files its own index lists (the index carries a marker
key proving it is the tool's). Everything else in the directory — a user's
``kustomization.yaml``, a README, hidden files, a Helm chart repository's charts — is left
alone: never replaced, never deleted, never reported as drift. A file the tool would write
where a file it did not write already stands is refused, naming the file.

:func:`write_outputs` works in place, so the directory itself (perhaps the shell's current
directory) is never swapped away: each file is written to a temporary file beside it and renamed
over the old one, the index last; files the old index listed and the new one does not are
removed. Any failure puts back every file as it was and removes what the run created. A journal
(``.talos-schematic-journal``, written before the first temporary file) lists each path the
run creates or replaces, so that the next run removes exactly what a killed run left — and
nothing it did not create. Runs on one directory take a lock (``flock`` on the parent directory),
so two concurrent ``generate`` runs cannot both report success for different outputs, and
``check`` never reads a half-replaced tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from schematic.errors import OutputError

__all__ = [
    "JOURNAL",
    "Drift",
    "Ownership",
    "compare_outputs",
    "read_tool_file",
    "write_file_atomically",
    "write_outputs",
]

# The index's reader: the paths it lists as the tool's, or None when it is not the tool's index.
Ownership = Callable[[bytes], frozenset[str] | None]

JOURNAL = ".talos-schematic-journal"
_JOURNAL_HEADER = "talos-schematic journal 1"
_JOURNAL_END = "end"
# An index or an owned file larger than this is not one the tool wrote (a 10,000-pool index is
# about 2 MB); reading stops there instead of filling memory.
_MAX_OWNED_FILE = 256 * 1024 * 1024
# How long a run waits for another one on the same directory before giving up.
LOCK_TIMEOUT = 120.0
# Staging directories earlier versions made beside the output (tempfile.mkdtemp names).
_LEGACY_STAGING = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.(?:new|old)")


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
        if (
            not name
            or name.startswith("/")
            or ".." in parts
            or "." in parts
            or "" in parts
            or "\0" in name
            or "\n" in name
            or "\r" in name
        ):
            raise OutputError(f"refusing to write {name!r}: not a path inside the directory")


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


def _root(directory: Path) -> tuple[Path, bool]:
    """The directory to work in (symbolic links to a directory followed), and whether it exists.

    Refused: the file-system root, a dangling symbolic link (it would create the directory
    wherever the link points), anything that is not a directory.
    """
    link = _lstat(str(directory))
    if link is not None and stat.S_ISLNK(link.st_mode) and not directory.exists():
        raise OutputError(
            f"{directory}: a symbolic link to {os.readlink(directory)!s}, which does not exist; "
            "not followed (create the directory or give its real path)"
        )
    try:
        resolved = directory.resolve()
    except (OSError, RuntimeError) as err:  # a loop of symbolic links
        raise OutputError(f"{directory}: cannot resolve: {err}") from None
    if resolved.parent == resolved:
        raise OutputError(
            f"{directory}: refusing to write into {resolved}; give a directory of its own"
        )
    exists = link is not None
    if exists and not resolved.is_dir():
        raise OutputError(f"{directory}: exists and is not a directory")
    return resolved, exists


@contextlib.contextmanager
def _locked(root: Path, *, shared: bool) -> Iterator[None]:
    """Hold an advisory lock for ``root``'s outputs: on its parent directory, so that nothing is
    left on disk for it and a directory not created yet is covered too."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform; runs are not serialised
        yield
        return
    try:
        descriptor = os.open(root.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as err:
        raise OutputError(f"{root.parent}: cannot open: {err.strerror}") from None
    try:
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        timeout = LOCK_TIMEOUT
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(descriptor, mode)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OutputError(
                        f"{root}: another talos-schematic run is writing it (waited "
                        f"{timeout:.0f} s); try again when it has finished"
                    ) from None
                time.sleep(0.05)
            except OSError:
                break  # a file system without locks: go on unserialised
        yield
    finally:
        os.close(descriptor)


def _read_owned_file(path: str) -> bytes:
    """A regular file's bytes; never follows a symbolic link, never blocks on a FIFO, never
    reads past the size limit (``/dev/zero`` swapped in is an error, not a hang)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > _MAX_OWNED_FILE:
            raise OSError(errno.EFBIG, "larger than any file the tool writes")
        chunks = []
        remaining = info.st_size + 1  # one byte more tells a file that grew meanwhile
        while remaining > 0:
            chunk = os.read(descriptor, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _real_folders(root: Path, name: str) -> bool:
    """Whether each directory on the way from ``root`` to ``name`` is a real directory (a
    symbolic link there would lead outside)."""
    parts = name.split("/")[:-1]
    for end in range(1, len(parts) + 1):
        entry = _lstat(os.path.join(root, *parts[:end]))
        if entry is None or not stat.S_ISDIR(entry.st_mode):
            return False
    return True


def read_tool_file(directory: Path, name: str) -> bytes | None:
    """The bytes of ``directory/name`` as the tool wrote it, or None when it is not there.

    Never follows a symbolic link (in the name or on the way to it), never blocks on a FIFO,
    never reads a device: those raise OSError, which the caller reports.
    """
    if not _real_folders(directory, name):
        entry = _lstat(os.path.join(directory, *name.split("/")[:-1]))
        if entry is None:
            return None
        raise OSError(errno.ENOTDIR, "on the way to it is a symbolic link or file, not followed")
    path = os.path.join(directory, name)
    entry = _lstat(path)
    if entry is None:
        return None
    if not stat.S_ISREG(entry.st_mode):
        raise OSError(
            errno.EINVAL, "not a regular file (a symbolic link, FIFO or device); not read"
        )
    return _read_owned_file(path)


def _owned_by_index(root: Path, index: str, ownership: Ownership) -> frozenset[str] | None:
    """What the directory's index lists as the tool's; None when there is no index.

    An index that is not the tool's (no marker: a Helm repository's ``index.yaml``) is refused:
    the directory belongs to someone else.
    """
    path = root / index
    found = _lstat(str(path))
    if found is None:
        return None
    foreign = OutputError(
        f"{path}: not written by talos-schematic (it lacks the tool's marker), so {root} is "
        "not a directory the tool may write; give a new or empty directory, or one an earlier "
        "`generate --out` wrote"
    )
    if not stat.S_ISREG(found.st_mode) or found.st_size > _MAX_OWNED_FILE:
        raise foreign
    try:
        text = _read_owned_file(str(path))
    except OSError as err:
        raise OutputError(f"{path}: cannot read: {err.strerror}") from None
    owned = ownership(text)
    if owned is None:
        raise foreign
    return owned


def _recover(root: Path) -> frozenset[str]:
    """Remove what a killed run left (its temporary files, then its journal); the paths it was
    creating or replacing, which are the tool's although no index lists them yet."""
    path = root / JOURNAL
    found = _lstat(str(path))
    if found is None or not stat.S_ISREG(found.st_mode):
        return frozenset()
    try:
        lines = _read_owned_file(str(path)).decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    if not lines or lines[0] != _JOURNAL_HEADER:
        return frozenset()  # not ours after all: left alone
    complete = len(lines) >= 2 and lines[-2] == _JOURNAL_END and lines[-1] == ""
    owned: set[str] = set()
    folders: list[str] = []
    if complete:
        # A journal is complete before the first temporary file exists: a torn one means the
        # run created nothing yet.
        for line in lines[1:-2]:
            kind, _, name = line.partition(" ")
            if not _plain_relative(name):
                continue
            if kind == "temp":
                target = root / name
                entry = _lstat(str(target))
                if entry is not None and stat.S_ISREG(entry.st_mode):
                    with contextlib.suppress(OSError):
                        os.unlink(target)
            elif kind in ("write", "remove"):
                owned.add(name)
            elif kind == "dir":
                folders.append(str(root / name))
    with contextlib.suppress(OSError):
        os.unlink(path)
    # Directories the killed run created, if it left them empty.
    for folder in folders:
        entry = _lstat(folder)
        if entry is not None and stat.S_ISDIR(entry.st_mode):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
    return frozenset(owned)


def _plain_relative(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and not {"", ".", ".."} & set(parts)


def _legacy_staging(root: Path, vocabulary: frozenset[str]) -> list[Path]:
    """Staging directories an earlier version (which replaced the whole directory) left beside
    ``root`` when it was killed: only those whose every file is one the tool writes."""
    found: list[Path] = []
    try:
        siblings = list(os.scandir(root.parent))
    except OSError:
        return found
    for entry in siblings:
        match = _LEGACY_STAGING.fullmatch(entry.name)
        if not match or match["name"] != root.name:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if _only_tool_files(Path(entry.path), vocabulary):
            found.append(Path(entry.path))
    return found


def _only_tool_files(staging: Path, vocabulary: frozenset[str]) -> bool:
    for folder, dirs, names in os.walk(staging):
        depth = len(Path(folder).relative_to(staging).parts)
        # Hidden entries at the top were carried over by that version (copies): not judged.
        visible_dirs = [name for name in dirs if not (depth == 0 and name.startswith("."))]
        dirs[:] = visible_dirs
        for name in names:
            if depth == 0 and name.startswith("."):
                continue
            if name not in vocabulary or depth > 1:
                return False
            if os.path.islink(os.path.join(folder, name)):
                return False
        if depth >= 1 and visible_dirs:
            return False
    return True


def compare_outputs(
    directory: Path, files: Mapping[str, bytes], *, index: str, ownership: Ownership
) -> Drift:
    """Which of ``files`` differ from or are missing in ``directory``, and which files the
    directory's index lists that ``files`` no longer has. Files the tool did not write are not
    drift."""
    root, exists = _root(directory)
    if not exists:
        return Drift(missing=tuple(sorted(files)))
    with _locked(root, shared=True):
        owned = _owned_by_index(root, index, ownership) or frozenset()
        changed: list[str] = []
        missing: list[str] = []
        folders: dict[str, bool] = {}
        for name, content in sorted(files.items()):
            folder = name.rpartition("/")[0]
            if folder not in folders:
                folders[folder] = _real_folders(root, name)
            path = os.path.join(root, name)
            entry = _lstat(path) if folders[folder] else None
            if not folders[folder] and _lstat(os.path.join(root, folder)) is not None:
                changed.append(name)  # a link or file where the pool's directory belongs
            elif entry is None:
                missing.append(name)
            elif not stat.S_ISREG(entry.st_mode) or entry.st_size != len(content):
                changed.append(name)
            else:
                try:
                    if _read_owned_file(path) != content:
                        changed.append(name)
                except OSError as err:
                    raise OutputError(f"{path}: cannot read: {err.strerror}") from None
        extra = sorted(
            name
            for name in owned - set(files)
            if _plain_relative(name) and _lstat(os.path.join(root, name)) is not None
        )
    return Drift(tuple(changed), tuple(missing), tuple(extra))


@dataclass
class _Change:
    """One path the run writes (``content``) or removes (``content is None``)."""

    name: str
    content: bytes | None
    previous: bytes | None  # None: the path did not exist


def write_outputs(
    directory: Path, files: Mapping[str, bytes], *, index: str, ownership: Ownership
) -> bool:
    """Make ``directory`` hold ``files`` as the tool's files; False when it already did.

    ``index`` is the file (in ``files``) listing what the tool owns, read by ``ownership``.
    Files the tool did not write are kept; one standing where the tool would write is refused.
    """
    _check_paths(files)
    if index not in files:
        raise ValueError(f"the files must include the index {index}")
    listed = ownership(files[index])
    if listed is None or not set(files) <= listed:
        unlisted = sorted(set(files) - (listed or frozenset()))[:3]
        raise ValueError(f"the index {index} does not list every file written: {unlisted}")
    root, exists = _root(directory)
    created: list[str] = []
    try:
        parent = root.parent
        while not parent.exists():
            created.append(str(parent))
            parent = parent.parent
        created.reverse()  # outermost first
        for folder in created:
            os.mkdir(folder)
    except OSError as err:
        _remove_dirs(created)
        raise OutputError(
            f"{directory}: cannot create its parent directory: {err.strerror}"
        ) from None
    try:
        with _locked(root, shared=False):
            exists = _lstat(str(root)) is not None
            return _write_locked(root, files, index, ownership, exists=exists, listed=listed)
    finally:
        _remove_dirs(created)  # only those left empty by a failed run


def _write_locked(
    root: Path,
    files: Mapping[str, bytes],
    index: str,
    ownership: Ownership,
    *,
    exists: bool,
    listed: frozenset[str],
) -> bool:
    recovered = _recover(root) if exists else frozenset()
    try:
        by_index = _owned_by_index(root, index, ownership) if exists else None
    except OutputError:
        if index not in recovered:
            raise
        by_index = None  # an index a killed run was writing: its journal proves it ours
    owned = (by_index or frozenset()) | recovered
    vocabulary = frozenset(name.rpartition("/")[2] for name in listed)
    for staging in _legacy_staging(root, vocabulary):
        shutil.rmtree(staging, ignore_errors=True)
    changes = _plan_changes(root, files, owned) if exists else []
    if not exists:
        changes = [_Change(name, content, None) for name, content in files.items()]
    if not changes:
        return False
    # The index goes last: until it is in place, the old one still describes what is owned.
    changes.sort(key=lambda change: change.name == index)
    _apply(root, changes, fresh=not exists)
    return True


def _plan_changes(root: Path, files: Mapping[str, bytes], owned: frozenset[str]) -> list[_Change]:
    changes: list[_Change] = []
    folders: dict[str, bool] = {"": True}
    for name, content in files.items():
        folder = name.rpartition("/")[0]
        if folder not in folders:
            entry = _lstat(os.path.join(root, folder))
            if entry is not None and not stat.S_ISDIR(entry.st_mode):
                raise OutputError(
                    f"{root / folder}: not a directory (a symbolic link or a file); the tool "
                    "writes its pool files into a directory of that name, so move it away"
                )
            folders[folder] = entry is not None
        path = os.path.join(root, name)
        entry = _lstat(path) if folders[folder] else None
        if entry is None:
            changes.append(_Change(name, content, None))
            continue
        if name not in owned:
            raise OutputError(
                f"{path}: exists and was not written by talos-schematic (its index does not "
                "list it); not replaced — move it away or give another directory"
            )
        if not stat.S_ISREG(entry.st_mode):
            raise OutputError(
                f"{path}: not a regular file (a symbolic link, FIFO, directory or device); not "
                "replaced — move it away"
            )
        if entry.st_size == len(content):
            previous = _read(path)
            if previous == content:
                continue
        else:
            previous = _read(path)
        changes.append(_Change(name, content, previous))
    for name in sorted(owned - set(files)):
        if not _plain_relative(name):
            continue
        path = os.path.join(root, name)
        entry = _lstat(path)
        if entry is not None and stat.S_ISREG(entry.st_mode):
            changes.append(_Change(name, None, _read(path)))
    return changes


def _read(path: str) -> bytes:
    try:
        return _read_owned_file(path)
    except OSError as err:
        raise OutputError(f"{path}: cannot read: {err.strerror}") from None


def _temporary(name: str, token: str) -> str:
    folder, _, base = name.rpartition("/")
    return f"{folder}/.{base}.{token}.tmp" if folder else f".{base}.{token}.tmp"


def _apply(root: Path, changes: list[_Change], *, fresh: bool) -> None:
    """Write and remove as planned, or put everything back and raise OutputError."""
    token = secrets.token_hex(4)
    made_dirs: list[str] = []
    temps: list[str] = []
    done: list[_Change] = []
    journal = os.path.join(root, JOURNAL)
    journal_written = False
    current = str(root)
    try:
        if fresh:
            os.mkdir(root)  # mode 0777 less the umask, as any new directory
            made_dirs.append(str(root))
        lines = [_JOURNAL_HEADER]
        new_folders = sorted(
            {change.name.rpartition("/")[0] for change in changes if change.content is not None}
            - {""}
        )
        if not fresh:
            new_folders = [f for f in new_folders if _lstat(os.path.join(root, f)) is None]
        lines += [f"dir {folder}" for folder in new_folders]
        for change in changes:
            lines.append(f"{'write' if change.content is not None else 'remove'} {change.name}")
            if change.content is not None and not fresh:
                lines.append(f"temp {_temporary(change.name, token)}")
        lines.append(_JOURNAL_END)
        _write_file(journal, ("\n".join(lines) + "\n").encode())
        journal_written = True
        folders = {""}
        for change in changes:
            current = os.path.join(root, change.name)
            if change.content is None:
                continue
            folder = change.name.rpartition("/")[0]
            if folder not in folders:
                path = os.path.join(root, folder)
                if _lstat(path) is None:
                    os.mkdir(path)
                    made_dirs.append(path)
                folders.add(folder)
            if fresh:
                _write_file(current, change.content)
                done.append(change)
            else:
                temp = os.path.join(root, _temporary(change.name, token))
                _write_file(temp, change.content)
                temps.append(temp)
        for change in changes:
            current = os.path.join(root, change.name)
            if fresh:
                break
            if change.content is None:
                os.unlink(current)
            else:
                os.replace(os.path.join(root, _temporary(change.name, token)), current)
                temps.remove(os.path.join(root, _temporary(change.name, token)))
            done.append(change)
        for change in changes:
            if change.content is None:
                folder = change.name.rpartition("/")[0]
                if folder and folder not in folders:
                    # An emptied pool directory of the tool's; one holding other files stays.
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(root, folder))
        os.unlink(journal)
    except OSError as err:
        restored = _undo(root, done, temps, made_dirs, token)
        if restored and journal_written:
            with contextlib.suppress(OSError):
                os.unlink(journal)
        if fresh and restored:
            with contextlib.suppress(OSError):
                os.rmdir(root)
        raise OutputError(f"{current}: cannot write: {err.strerror or err}") from None


def _undo(
    root: Path, done: list[_Change], temps: list[str], made_dirs: list[str], token: str
) -> bool:
    """Put back what a failed run changed; False when something could not be put back."""
    restored = True
    for temp in temps:
        with contextlib.suppress(FileNotFoundError):
            try:
                os.unlink(temp)
            except OSError:
                restored = False
    for change in reversed(done):
        path = os.path.join(root, change.name)
        try:
            if change.previous is None:
                os.unlink(path)
            else:
                write_file_atomically(Path(path), change.previous)
        except OSError:
            restored = False
    _remove_dirs(made_dirs)
    return restored


def _remove_dirs(paths: list[str]) -> None:
    for path in reversed(paths):
        with contextlib.suppress(OSError):
            os.rmdir(path)


def _write_file(path: str, content: bytes, mode: int = 0o666) -> None:
    # O_EXCL: never write through a file or symbolic link that appeared meanwhile.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(descriptor)


def write_file_atomically(path: Path, content: bytes, *, mode: int = 0o666) -> None:
    """Replace ``path`` with ``content`` in one step: readers see the old file or the new one,
    never a part; on failure the old file stays and the temporary one is removed. ``mode`` is
    narrowed by the umask, as for any new file. The one way the tool writes a single file."""
    temp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    _write_file(str(temp), content, mode)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
