"""A gate never passes on what it could not read: `lint DIR`, `triage DIR` and `verify DIR` on a
folder, or with a sub-folder, that cannot be listed name it and exit non-zero.

Unreadable means what the kernel says: the folder's mode is 000 and the command runs as a user
the mode applies to. The suite may run as root, for whom a mode denies nothing, so each command
runs in a forked child that has given up root (``setuid`` to nobody) after importing everything
it needs; as any other user the command runs in-process. Either way the check is the real one:
the operating system refuses the listing, nothing is simulated.
"""

from __future__ import annotations

import encodings.utf_8_sig  # noqa: F401 - the unprivileged child cannot import it later
import importlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

register_all_commands()
# What the commands import when they run: the child that gave up root cannot read them then.
for _module in (
    "schematic.doctor.triage",
    "schematic.doctor.triage.formats",
    "schematic.doctor.lint",
    "schematic.factory.checks",
    "schematic.factory.client",
    "concurrent.futures.thread",
):
    importlib.import_module(_module)
NOBODY = 65534

NVRM = (
    "[   87.300000] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85) installed in this "
    "system requires use of the NVIDIA open kernel modules.\n"
)


def _invoke(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def run_unprivileged(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of the command, run as a user file modes apply to."""
    if os.geteuid() != 0:
        return _invoke(list(args))
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.close(reading)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            answer = json.dumps(_invoke(list(args)))
        except BaseException as err:
            answer = json.dumps([-1, "", repr(err)])
        with os.fdopen(writing, "w") as pipe:
            pipe.write(answer)
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        answer = pipe.read()
    os.waitpid(child, 0)
    code, out, stderr = json.loads(answer)
    assert code != -1, stderr
    return int(code), str(out), str(stderr)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder another user can reach (pytest's own temporary folders are the owner's only)."""
    folder = Path(tempfile.mkdtemp(prefix="unreadable-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


def _evidence(folder: Path) -> Path:
    (folder / "console.log").write_text(NVRM)
    (folder / "console.log").chmod(0o644)
    hidden = folder / "more"
    hidden.mkdir()
    (hidden / "dmesg.txt").write_text(NVRM)
    hidden.chmod(0)
    return hidden


def test_triage_names_an_unreadable_sub_folder_and_fails(shared_folder: Path) -> None:
    hidden = _evidence(shared_folder)
    code, out, err = run_unprivileged("triage", str(shared_folder))
    assert code == 1, (out, err)
    assert f"{hidden}: cannot read: Permission denied" in err


def test_triage_on_an_unreadable_folder_fails(shared_folder: Path) -> None:
    hidden = _evidence(shared_folder)
    code, _, err = run_unprivileged("triage", str(hidden))
    assert code == 1
    assert str(hidden) in err and "Permission denied" in err


def test_triage_reads_the_same_folder_once_it_is_readable(shared_folder: Path) -> None:
    # The refusal above comes from the mode, not from the folder's shape.
    hidden = _evidence(shared_folder)
    hidden.chmod(0o755)
    (hidden / "dmesg.txt").chmod(0o644)
    code, out, _ = run_unprivileged("triage", str(shared_folder))
    assert code == 3
    assert "TS103" in out


def _manifests(folder: Path) -> Path:
    (folder / "values.yaml").write_text("a: 1\n")
    (folder / "values.yaml").chmod(0o644)
    hidden = folder / "more"
    hidden.mkdir()
    # A machine-config patch: something lint checks, once it can read it.
    (hidden / "patch.yaml").write_text("machine:\n  sysctls:\n    vm.max_map_count: '262144'\n")
    hidden.chmod(0)
    return hidden


def test_lint_names_an_unreadable_sub_folder_and_fails(shared_folder: Path) -> None:
    hidden = _manifests(shared_folder)
    code, out, err = run_unprivileged("lint", str(shared_folder))
    assert code == 1, (out, err)
    assert f"{hidden}: cannot be read (Permission denied)" in err


def test_lint_on_an_unreadable_folder_fails(shared_folder: Path) -> None:
    hidden = _manifests(shared_folder)
    code, _, err = run_unprivileged("lint", str(hidden))
    assert code == 1
    assert str(hidden) in err and "Permission denied" in err


def test_lint_on_a_listable_folder_whose_entries_cannot_be_looked_at_fails(
    shared_folder: Path,
) -> None:
    # Read but not search permission: the names are listed, each file's stat is refused.
    hidden = _manifests(shared_folder)
    hidden.chmod(0o444)
    code, _, err = run_unprivileged("lint", str(shared_folder))
    assert code == 1
    assert "patch.yaml: cannot be read (Permission denied)" in err


def test_lint_reads_the_same_folder_once_it_is_readable(shared_folder: Path) -> None:
    hidden = _manifests(shared_folder)
    hidden.chmod(0o755)
    (hidden / "patch.yaml").chmod(0o644)
    code, _, err = run_unprivileged("lint", str(shared_folder))
    assert code == 0, err


def _schematics(folder: Path) -> Path:
    (folder / "gpu.schematic.yaml").write_text("customization: {}\n")
    (folder / "gpu.schematic.yaml").chmod(0o644)
    hidden = folder / "more"
    hidden.mkdir()
    (hidden / "cpu.schematic.yaml").write_text("customization: {}\n")
    hidden.chmod(0)
    return hidden


def test_verify_names_an_unreadable_sub_folder_and_fails(shared_folder: Path) -> None:
    # Before any factory is asked: the schematics to verify are not all known.
    hidden = _schematics(shared_folder)
    code, out, err = run_unprivileged(
        "verify", str(shared_folder), "--factory", "http://127.0.0.1:9"
    )
    assert code == 1, (out, err)
    assert f"{hidden}: cannot read: Permission denied" in err


def test_verify_on_an_unreadable_folder_fails(shared_folder: Path) -> None:
    # Named on the command line, the folder is refused as an argument (exit 2, usage).
    hidden = _schematics(shared_folder)
    code, _, err = run_unprivileged("verify", str(hidden), "--factory", "http://127.0.0.1:9")
    assert code == 2
    shown = " ".join(err.split())
    assert f"{hidden}' is not readable" in shown, err
