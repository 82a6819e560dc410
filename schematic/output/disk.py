"""The file-system mechanics of the output directory: safe reads, one-step writes, a journal.

What the tool owns is :mod:`schematic.output.outdir`'s to say (its index records every file it wrote
with the file's SHA-256 digest); this module holds the steps that act on it:

- every path is reached from the directory's own descriptor, one folder at a time, with
  ``O_NOFOLLOW``: a symbolic link (or a file) where a folder should be stops the step, so
  nothing is ever read, written or removed outside the directory;
- a file is replaced or removed only when it is a regular file whose digest is one the index
  (or the journal of a killed run) records for it — an edited file, a link, a FIFO, a file the
  index does not list are never touched (``force`` lets an edited file the index lists be
  replaced, never removed);
- every read is bounded by the input-size limit (``--max-input-size``);
- :func:`apply` works in place, so the directory itself (perhaps the shell's current
  directory) is never swapped away: each file is written to a temporary file beside it and
  renamed over the old one; any failure puts back every file as it was. A journal
  (``.talos-schematic-journal``) written first lists each path the run creates, replaces or
  removes with its digest, so the next run cleans up after a killed one. The journal is a file
  anyone with write access can edit, so it is read as untrusted input: only plain paths inside
  the directory, and only files that still have the digest it gives;
- runs on one directory take a lock (``flock`` on the parent directory), so two concurrent
  ``generate`` runs cannot both report success for different outputs, and ``check`` never
  reads a half-replaced tree.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from schematic.errors import OutputError
from schematic.safe_yaml import InputKind, InputTooLargeError, check_file_size, max_input_size

__all__ = [
    "JOURNAL",
    "LOCK_TIMEOUT",
    "Applied",
    "Claims",
    "Drift",
    "apply",
    "compare",
    "digest",
    "left_folders",
    "locked",
    "plain_path",
    "prepare_root",
    "read_file",
    "recover",
    "resolve_root",
    "write_file_atomically",
]

JOURNAL = ".talos-schematic-journal"
_JOURNAL_HEADER = "talos-schematic journal 2"
_JOURNAL_END = "end"
# How long a run waits for another one on the same directory before giving up.
LOCK_TIMEOUT = 120.0

# Path → the digests a file there may have to be the tool's (the index's, a killed run's).
Claims = Mapping[str, frozenset[str]]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_FOLDER_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW
_EMPTY = hashlib.sha256(b"").hexdigest()


def digest(content: bytes) -> str:
    """The digest the index records for a file: SHA-256, lower-case hex."""
    return hashlib.sha256(content).hexdigest()


def plain_path(name: object) -> bool:
    """Whether ``name`` is a relative POSIX path inside the directory (no ``..``, ``.``, empty
    part, leading ``/``, NUL or line break): the only paths the tool writes or believes."""
    if not isinstance(name, str) or not name or name.startswith("/"):
        return False
    if any(char in name for char in "\0\n\r"):
        return False
    return not {"", ".", ".."} & set(name.split("/"))


@dataclass(frozen=True)
class Drift:
    """How a directory differs from the files that should be in it (relative POSIX paths)."""

    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    # Empty folders a killed run left (:func:`left_folders`): the next run removes them.
    left: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.missing or self.extra or self.left)

    def lines(self) -> list[str]:
        """One ``changed: path`` / ``missing: path`` / ``extra: path`` line per file, and one
        ``left by a killed run: folder/`` line per folder."""
        return sorted(
            [f"changed: {path}" for path in self.changed]
            + [f"missing: {path}" for path in self.missing]
            + [f"extra: {path}" for path in self.extra]
            + [f"left by a killed run: {folder}/" for folder in self.left],
            key=lambda line: (line.split(": ", 1)[1], line),
        )


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def resolve_root(directory: Path) -> tuple[Path, bool]:
    """The directory to work in (a symbolic link to a directory followed: the user named it),
    and whether it exists.

    Refused: an empty name (an unset variable), the file-system root, a dangling symbolic link
    (it would create the directory wherever the link points), anything not a directory.
    """
    link = _lstat(str(directory))
    if link is not None and stat.S_ISLNK(link.st_mode) and not directory.exists():
        raise OutputError(
            f"{directory}: a symbolic link to {os.readlink(directory)!s}, which does not exist; "
            "not followed (create the directory or give its real path)"
        )
    try:
        resolved = directory.resolve()
    except (OSError, RuntimeError) as err:  # a loop of symbolic links, a name too long
        raise OutputError(f"{directory}: cannot resolve: {getattr(err, 'strerror', err)}") from None
    if resolved.parent == resolved:
        raise OutputError(
            f"{directory}: refusing to write into {resolved}; give a directory of its own"
        )
    exists = link is not None
    if exists and not resolved.is_dir():
        raise OutputError(f"{directory}: exists and is not a directory")
    return resolved, exists


def prepare_root(directory: Path) -> Path:
    """The resolved directory, with its parents created (safe when another run creates them
    at the same time: a parent that appears meanwhile is no error)."""
    root, _ = resolve_root(directory)
    try:
        os.makedirs(root.parent, exist_ok=True)
    except OSError as err:
        raise OutputError(
            f"{directory}: cannot create its parent directory: {err.strerror or err}"
        ) from None
    return root


@contextlib.contextmanager
def locked(root: Path, *, shared: bool) -> Iterator[None]:
    """Hold an advisory lock for ``root``'s outputs: on its parent directory, so that nothing is
    left on disk for it and a directory not created yet is covered too."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform; runs are not serialised
        yield
        return
    try:
        descriptor = os.open(root.parent, os.O_RDONLY | _DIRECTORY)
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


class _Folders:
    """Descriptors of the directory's folders, each opened from its parent without following a
    symbolic link: what is reached through them is inside the directory, whatever was planted."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.open: dict[str, int] = {"": os.open(root, os.O_RDONLY | _DIRECTORY)}

    def get(self, folder: str, *, create: bool = False) -> int | None:
        """The folder's descriptor; None when it does not exist (and ``create`` is false).

        OSError (ELOOP, ENOTDIR) when a symbolic link or a file stands on the way."""
        if folder in self.open:
            return self.open[folder]
        parent, _, base = folder.rpartition("/")
        above = self.get(parent, create=create)
        if above is None:
            return None
        try:
            descriptor = os.open(base, _FOLDER_FLAGS, dir_fd=above)
        except FileNotFoundError:
            if not create:
                return None
            with contextlib.suppress(FileExistsError):  # made meanwhile by another process
                os.mkdir(base, dir_fd=above)
            descriptor = os.open(base, _FOLDER_FLAGS, dir_fd=above)
        self.open[folder] = descriptor
        return descriptor

    def close(self) -> None:
        for descriptor in self.open.values():
            os.close(descriptor)
        self.open.clear()

    def __enter__(self) -> _Folders:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _read_at(folder: int, base: str, limit: int, kind: InputKind = InputKind.OTHER) -> bytes | None:
    """A regular file's bytes, read from ``folder``; None when absent. Never follows a symbolic
    link, never blocks on a FIFO, never reads past ``limit`` (``kind``'s, for the message)."""
    try:
        descriptor = os.open(base, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or directory)")
        check_file_size(info, limit, kind)
        chunks = []
        remaining = limit + 1  # one byte more tells a file that grew meanwhile
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise InputTooLargeError(limit, kind)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _link_error(err: OSError) -> OSError:
    # O_NOFOLLOW answers ELOOP for a link; O_DIRECTORY answers ENOTDIR for a file.
    if err.errno in (errno.ELOOP, errno.ENOTDIR):
        return OSError(err.errno, "a symbolic link or file on the way to it; not followed")
    return err


def read_file(
    directory: Path, name: str, limit: int | None = None, kind: InputKind = InputKind.OTHER
) -> bytes | None:
    """The bytes of ``directory/name``, or None when it is not there.

    Never follows a symbolic link (in the name or on the way to it), never blocks on a FIFO,
    never reads a device, never reads more than ``limit`` (by default the input-size limit of
    ``kind``): those raise OSError (InputTooLargeError for size), which the caller reports.
    """
    if not plain_path(name):
        raise OSError(errno.EINVAL, "not a path inside the directory")
    cap = max_input_size(kind) if limit is None else limit
    folder, _, base = name.rpartition("/")
    try:
        with _Folders(directory) as folders:
            descriptor = folders.get(folder)
            return None if descriptor is None else _read_at(descriptor, base, cap, kind)
    except InputTooLargeError:
        raise
    except OSError as err:
        raise _link_error(err) from None


def _owned_digest(folders: _Folders, name: str, claims: Claims) -> tuple[bytes | None, bool]:
    """The file's bytes (None: absent) and whether it still has a digest ``claims`` gives it."""
    folder, _, base = name.rpartition("/")
    descriptor = folders.get(folder)
    if descriptor is None:
        return None, False
    content = _read_at(descriptor, base, max_input_size())
    return content, content is not None and digest(content) in claims.get(name, frozenset())


def _folders_made(lines: list[str]) -> dict[str, str]:
    """Folder → the device and inode a journal's run recorded making it."""
    made: dict[str, str] = {}
    if lines[:1] == [_JOURNAL_HEADER]:
        for line in lines[1:]:
            kind, _, rest = line.partition(" ")
            identity, _, folder = rest.partition(" ")
            if kind == "made" and plain_path(folder):
                made[folder] = identity
    return made


def left_folders(root: Path) -> list[str]:
    """The empty folders a killed run left, proven its own by the identity its journal
    recorded: what the next run removes, and `check` reports. Reads, changes nothing."""
    try:
        text = read_file(root, JOURNAL, kind=InputKind.OUTPUT_RECORD)
    except OSError:
        return []
    if text is None:
        return []
    left: list[str] = []
    with _Folders(root) as folders:
        for folder, identity in sorted(
            _folders_made(text.decode("utf-8", "replace").split("\n")).items()
        ):
            with contextlib.suppress(OSError):
                descriptor = folders.get(folder)
                if descriptor is not None and _identity_of(folders, folder) == identity:
                    left += [] if os.listdir(descriptor) else [folder]
    return left


def _identity_of(folders: _Folders, folder: str) -> str | None:
    """The device and inode of ``folder`` itself (a link's own, never its target's); None when
    it is not there."""
    parent, _, base = folder.rpartition("/")
    above = folders.get(parent)
    return None if above is None else _identity(os.stat(base, dir_fd=above, follow_symlinks=False))


def recover(root: Path, listed: Collection[str] = ()) -> dict[str, frozenset[str]]:
    """Clean up after a killed run from its journal; the digests it proves the tool's.

    The journal is untrusted: entries that are not plain paths are ignored, and nothing is
    removed unless it is one of the tool's own temporary files (``.NAME.TOKEN.tmp`` beside a
    ``write`` entry for ``NAME``), reached through real folders, that still has the digest the
    journal gives or is empty (killed before its first byte). An empty file is claimed for a
    ``write`` or ``remove`` entry only where the old index ``listed`` names it: a planted
    journal cannot make a user's empty ``.gitkeep`` or ``__init__.py`` the tool's. A folder the
    journal says the run created is removed only when it is empty and either a temporary file
    of the run was removed from it or it is still the folder the run recorded making (its
    device and inode: a planted journal cannot give those of a folder of another checkout).
    """
    try:
        # Read as the index is: a record of the directory, bounded as one.
        text = read_file(root, JOURNAL, kind=InputKind.OUTPUT_RECORD)
    except OSError:
        return {}
    if text is None:
        return {}
    lines = text.decode("utf-8", "replace").split("\n")
    claims: dict[str, set[str]] = {}
    folders_made: list[str] = []
    identities = _folders_made(lines)
    temps: list[tuple[str, str]] = []
    writes: set[str] = set()
    if lines[:1] == [_JOURNAL_HEADER]:
        for line in lines[1:]:
            kind, _, rest = line.partition(" ")
            if kind == "dir" and plain_path(rest):
                folders_made.append(rest)
                continue
            recorded, _, name = rest.partition(" ")
            if not plain_path(name) or len(recorded) != 64:
                continue
            if kind in ("write", "remove"):
                claims.setdefault(name, set()).add(recorded)
                if name in listed:
                    # A listed file cut off before its first byte: nothing of the user's to lose.
                    claims[name].add(_EMPTY)
                if kind == "write":
                    writes.add(name)
            elif kind == "temp":
                temps.append((name, recorded))
    emptied: set[str] = set()
    with _Folders(root) as folders:
        for name, recorded in temps:
            written = _temporary_of(name)
            if written is None or written not in writes:
                continue
            with contextlib.suppress(OSError):
                content, _ = _owned_digest(folders, name, {})
                if content is not None and (not content or digest(content) == recorded):
                    folder, _, base = name.rpartition("/")
                    os.unlink(base, dir_fd=folders.get(folder))
                    emptied.add(folder)
        with contextlib.suppress(OSError):
            os.unlink(JOURNAL, dir_fd=folders.get(""))
        for folder in sorted(folders_made, reverse=True):
            parent, _, base = folder.rpartition("/")
            with contextlib.suppress(OSError):
                identity = _identity_of(folders, folder)
                # The run's own: emptied of its temporary files, or still the very folder it
                # recorded making (a run killed before writing in it left it empty).
                if identity is not None and (
                    folder in emptied or identities.get(folder) == identity
                ):
                    os.rmdir(base, dir_fd=folders.get(parent))  # a link or full folder: refused
                    emptied.add(parent)
    return {name: frozenset(found) for name, found in claims.items()}


_TEMPORARY = re.compile(r"\.(?P<base>.+)\.[0-9a-f]{8}\.tmp")


def _temporary_of(name: str) -> str | None:
    """The path whose temporary file (:func:`_temporary`) ``name`` is, or None."""
    folder, _, base = name.rpartition("/")
    found = _TEMPORARY.fullmatch(base)
    if found is None:
        return None
    return f"{folder}/{found['base']}" if folder else found["base"]


def compare(root: Path, files: Mapping[str, bytes], listed: frozenset[str]) -> Drift:
    """Which of ``files`` differ from or are missing in ``root``, and which of the paths the
    index ``listed`` the tool no longer writes but still stand there."""
    changed: list[str] = []
    missing: list[str] = []
    extra: list[str] = []
    with _Folders(root) as folders:
        for name, content in sorted(files.items()):
            folder, _, base = name.rpartition("/")
            try:
                descriptor = folders.get(folder)
            except OSError:
                changed.append(name)  # a link or file where the pool's directory belongs
                continue
            info = None
            if descriptor is not None:
                with contextlib.suppress(FileNotFoundError):
                    info = os.stat(base, dir_fd=descriptor, follow_symlinks=False)
            if descriptor is None or info is None:
                missing.append(name)
            elif not stat.S_ISREG(info.st_mode) or info.st_size != len(content):
                changed.append(name)  # told apart without reading it
            else:
                try:
                    if _read_at(descriptor, base, max_input_size()) != content:
                        changed.append(name)
                except OSError as err:
                    raise OutputError(f"{root / name}: cannot read: {err.strerror}") from None
        for name in sorted(listed - set(files)):
            folder, _, base = name.rpartition("/")
            with contextlib.suppress(OSError):
                descriptor = folders.get(folder)
                if descriptor is not None:
                    os.stat(base, dir_fd=descriptor, follow_symlinks=False)
                    extra.append(name)
    return Drift(tuple(changed), tuple(missing), tuple(extra), tuple(left_folders(root)))


@dataclass
class _Change:
    """One path the run writes (``content``) or removes (``content is None``)."""

    name: str
    content: bytes | None
    previous: bytes | None  # None: the path did not exist
    recorded: str = ""  # the digest the journal gives: the new content's, or the removed one's


@dataclass
class Applied:
    """What :func:`apply` did: whether anything changed, what it removed, and the files it kept
    because they changed since the tool wrote them."""

    changed: bool = False
    removed: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # path, why it was not removed


def apply(
    root: Path,
    files: Mapping[str, bytes],
    remove: list[str],
    claims: Claims,
    *,
    last: str,
    force: bool = False,
) -> Applied:
    """Make ``root`` hold ``files`` and lose ``remove``, the file ``last`` written last.

    A file standing where one of ``files`` goes is replaced only when ``claims`` gives its
    digest (with ``force``: when ``claims`` lists it at all); one of ``remove`` is removed only
    when it still has a digest ``claims`` gives it, and kept (reported) otherwise. Any other
    file in the way is refused, naming it. Raises OutputError, with everything put back.
    """
    for name in files:
        if not plain_path(name):
            raise OutputError(f"refusing to write {name!r}: not a path inside the directory")
    exists = _lstat(str(root)) is not None
    result = Applied()
    if not exists:
        changes = [_Change(name, content, None, digest(content)) for name, content in files.items()]
    else:
        changes = _plan(root, files, remove, claims, force=force, result=result)
    if not changes:
        return result
    # The index goes last: until it is in place, the old one still describes what is owned.
    changes.sort(key=lambda change: change.name == last)
    _apply(root, changes, fresh=not exists)
    result.changed = True
    result.removed = [change.name for change in changes if change.content is None]
    return result


def _plan(
    root: Path,
    files: Mapping[str, bytes],
    remove: list[str],
    claims: Claims,
    *,
    force: bool,
    result: Applied,
) -> list[_Change]:
    changes: list[_Change] = []
    with _Folders(root) as folders:
        for name, content in files.items():
            path = root / name
            try:
                previous, owned = _owned_digest(folders, name, claims)
            except InputTooLargeError:
                previous, owned = b"", False  # larger than the limit: not one the tool wrote
            except OSError as err:
                raise OutputError(
                    f"{path}: {_link_error(err).strerror}; not replaced — move it away"
                ) from None
            if previous is None:
                changes.append(_Change(name, content, None, digest(content)))
                continue
            if previous == content:
                continue
            if not owned and not (force and name in claims):
                if name in claims:
                    raise OutputError(
                        f"{path}: changed since talos-schematic wrote it (its digest is not the "
                        "one index.yaml records); not replaced — see `check --diff`, move it "
                        "away, or pass --force to replace it"
                    )
                raise OutputError(
                    f"{path}: exists and was not written by talos-schematic (its index does "
                    "not list it); not replaced — move it away or give another directory"
                )
            changes.append(_Change(name, content, previous, digest(content)))
        for name in sorted(set(remove) - set(files)):
            if not plain_path(name):
                continue
            try:
                previous, owned = _owned_digest(folders, name, claims)
                why = "it changed since talos-schematic wrote it"
            except OSError as err:
                previous, owned = b"", False  # a link, FIFO, or a link on the way: not ours
                why = str(_link_error(err).strerror or err)
            if previous is None:
                continue
            if owned:
                changes.append(_Change(name, None, previous, digest(previous)))
            else:
                result.kept.append((name, why))
    return changes


def _temporary(name: str, token: str) -> str:
    folder, _, base = name.rpartition("/")
    return f"{folder}/.{base}.{token}.tmp" if folder else f".{base}.{token}.tmp"


def _apply(root: Path, changes: list[_Change], *, fresh: bool) -> None:
    """Write and remove as planned, or put everything back and raise OutputError."""
    token = secrets.token_hex(4)
    made_dirs: list[str] = []
    temps: list[str] = []
    done: list[_Change] = []
    current = str(root)
    journal_written = False
    if fresh:
        try:
            os.mkdir(root)  # mode 0777 less the umask, as any new directory
        except FileExistsError:
            raise OutputError(f"{root}: appeared while this run was writing it") from None
        except OSError as err:
            raise OutputError(f"{root}: cannot create: {err.strerror or err}") from None
    folders = _Folders(root)
    try:
        lines = [_JOURNAL_HEADER]
        new_folders = sorted(
            {change.name.rpartition("/")[0] for change in changes if change.content is not None}
            - {""}
        )
        new_folders = [f for f in new_folders if folders.get(f) is None]
        lines += [f"dir {folder}" for folder in new_folders]
        # Made before the journal, which records each one's identity: a run killed after it
        # leaves folders the next run can prove its own (a planted journal cannot name the
        # device and inode a folder of another checkout will have) and so remove.
        for folder in new_folders:
            current = str(root / folder)
            made_dirs.append(folder)
            made = folders.get(folder, create=True)
            assert made is not None  # made, or OSError
            lines.append(f"made {_identity(os.fstat(made))} {folder}")
        for change in changes:
            kind = "write" if change.content is not None else "remove"
            lines.append(f"{kind} {change.recorded} {change.name}")
            if change.content is not None and not fresh:
                lines.append(f"temp {change.recorded} {_temporary(change.name, token)}")
        lines.append(_JOURNAL_END)
        _write_at(folders.open[""], JOURNAL, ("\n".join(lines) + "\n").encode())
        journal_written = True
        for change in changes:
            if change.content is None:
                continue
            current = str(root / change.name)
            folder, _, base = change.name.rpartition("/")
            at = folders.get(folder, create=True)
            assert at is not None
            if fresh:
                _write_at(at, base, change.content)
                done.append(change)
            else:
                temp = _temporary(change.name, token)
                _write_at(at, temp.rpartition("/")[2], change.content)
                temps.append(temp)
        if not fresh:
            for change in changes:
                current = str(root / change.name)
                folder, _, base = change.name.rpartition("/")
                at = folders.get(folder)
                assert at is not None
                if change.content is None:
                    os.unlink(base, dir_fd=at)
                else:
                    temp = _temporary(change.name, token)
                    os.replace(temp.rpartition("/")[2], base, src_dir_fd=at, dst_dir_fd=at)
                    temps.remove(temp)
                done.append(change)
        for change in changes:
            folder, _, base = change.name.rpartition("/")
            if change.content is None and folder:
                # An emptied pool directory of the tool's; one holding other files stays.
                parent, _, name = folder.rpartition("/")
                with contextlib.suppress(OSError):
                    above = folders.get(parent)
                    if above is not None:
                        os.rmdir(name, dir_fd=above)
        if journal_written:
            os.unlink(JOURNAL, dir_fd=folders.get(""))
    except OSError as err:
        restored = _undo(folders, done, temps, made_dirs)
        if restored and journal_written:
            with contextlib.suppress(OSError):
                os.unlink(JOURNAL, dir_fd=folders.get(""))
        folders.close()
        if fresh and restored:
            with contextlib.suppress(OSError):
                os.rmdir(root)
        raise OutputError(f"{current}: cannot write: {_link_error(err).strerror or err}") from None
    folders.close()


def _identity(info: os.stat_result) -> str:
    return f"{info.st_dev}:{info.st_ino}"


def _undo(folders: _Folders, done: list[_Change], temps: list[str], made_dirs: list[str]) -> bool:
    """Put back what a failed run changed; False when something could not be put back."""
    restored = True
    for temp in temps:
        folder, _, base = temp.rpartition("/")
        try:
            os.unlink(base, dir_fd=folders.get(folder))
        except FileNotFoundError:
            pass
        except OSError:
            restored = False
    for change in reversed(done):
        folder, _, base = change.name.rpartition("/")
        try:
            at = folders.get(folder)
            assert at is not None
            if change.previous is None:
                os.unlink(base, dir_fd=at)
            else:
                temp = f".{base}.{secrets.token_hex(4)}.tmp"
                _write_at(at, temp, change.previous)
                os.replace(temp, base, src_dir_fd=at, dst_dir_fd=at)
        except OSError:
            restored = False
    for folder in reversed(made_dirs):
        parent, _, base = folder.rpartition("/")
        with contextlib.suppress(OSError):
            os.rmdir(base, dir_fd=folders.get(parent))
    return restored


def _write_at(folder: int, base: str, content: bytes, mode: int = 0o666) -> None:
    # O_EXCL: never write through a file or symbolic link that appeared meanwhile.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    descriptor = os.open(base, flags, mode, dir_fd=folder)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(base, dir_fd=folder)
        raise
    os.close(descriptor)


def write_file_atomically(path: Path, content: bytes, *, mode: int = 0o666) -> None:
    """Replace ``path`` with ``content`` in one step: readers see the old file or the new one,
    never a part; on failure the old file stays and the temporary one is removed. ``mode`` is
    narrowed by the umask, as for any new file. The one way the tool writes a single file."""
    folder = os.open(path.parent, os.O_RDONLY | _DIRECTORY)
    try:
        temp = f".{path.name}.{secrets.token_hex(4)}.tmp"
        _write_at(folder, temp, content, mode)
        try:
            os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
    finally:
        os.close(folder)
