"""Hostile arguments end in one message and an exit code, never a traceback or a hang.

FIFOs and devices named on the command line, path components over 255 bytes, symbolic-link
loops, numbers past Python's 4,300-digit conversion limit and sizes past infinity: each case
runs the command in-process and checks the exit code, that stderr is one message naming the
file or option, and that nothing was written where the command was not asked to write.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app

for _module in ("id_command", "generate_command", "check_command", "upgrade_command"):
    importlib.import_module(f"schematic.cli.{_module}")
for _module in ("factory_commands", "lint_command", "detect_command", "gpu_command"):
    importlib.import_module(f"schematic.cli.{_module}")

EXAMPLES = Path(__file__).parent.parent / "examples"
DATA = Path(__file__).parent / "data"
LONG_NAME = "a" * 300
MANY_DIGITS = "9" * 5000
# A factory nothing listens on: no case here may get as far as asking it.
NOWHERE = "http://127.0.0.1:9"


def invoke(*args: str, cwd: Path) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one in-process run in ``cwd``; a traceback fails."""
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            app,
            list(args),
            env={
                "TALOS_SCHEMATIC_FACTORY": NOWHERE,
                "TALOS_SCHEMATIC_FACTORY_TOKEN": "",
                "TALOS_SCHEMATIC_FACTORY_AUTH": "",
                "XDG_CACHE_HOME": str(cwd / ".cache"),
            },
        )
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args}: escaped as {result.exception!r}") from result.exception
    return result.exit_code, result.stdout, result.stderr


def one_message(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("talos-schematic: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every entry below ``root`` (links not followed) with a regular file's bytes."""
    found: dict[str, bytes | None] = {}
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(parent, name)
            regular = path.is_file() and not path.is_symlink()
            found[str(path.relative_to(root))] = path.read_bytes() if regular else None
    return found


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "cluster.yaml").write_text((EXAMPLES / "cluster.yaml").read_text())
    (tmp_path / "s.yaml").write_text((EXAMPLES / "schematic.yaml").read_text())
    (tmp_path / "lspci.txt").write_text((DATA / "lspci-nnvv.hgx-b200.txt").read_text())
    return tmp_path


@pytest.fixture
def fifo(workdir: Path) -> Iterator[Path]:
    """A FIFO; a writer waits on it, so a command that opens it reads an empty file instead of
    hanging the suite (and then fails the assertions on its message)."""
    path = workdir / "pipe.yaml"
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)), daemon=True)
    writer.start()
    yield path
    # Release the writer when nothing opened the FIFO (the expected case).
    os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(timeout=10)


FIFO_COMMANDS = [
    ["id", "pipe.yaml"],
    ["lint", "pipe.yaml"],
    ["detect", "pipe.yaml"],
    ["generate", "pipe.yaml", "--out", "out"],
    ["upgrade", "pipe.yaml", "--to", "v1.13.9"],
    ["register", "pipe.yaml"],
    ["verify", "--out", "pipe.yaml"],
    ["upgrade", "cluster.yaml", "--base", "pipe.yaml"],
    ["lint", "cluster.yaml", "--hardware", "./pipe.yaml"],
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("args", FIFO_COMMANDS, ids=lambda args: " ".join(args))
def test_a_fifo_on_the_command_line_is_refused_unopened(
    workdir: Path, fifo: Path, args: list[str]
) -> None:
    before = tree(workdir)
    code, out, err = invoke(*args, cwd=workdir)
    message = one_message(err)
    assert code == 1, err
    assert "pipe.yaml" in message, message
    assert "not a regular file" in message, message
    assert out == ""
    assert tree(workdir) == before


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero on this platform")
@pytest.mark.parametrize("command", ["id", "lint", "detect", "generate", "register"])
def test_a_device_on_the_command_line_is_refused(workdir: Path, command: str) -> None:
    code, _, err = invoke(command, "/dev/zero", cwd=workdir)
    assert code == 1, err
    assert "/dev/zero: " in one_message(err)
    assert "not a regular file" in err


def _profile_at(workdir: Path, where: str) -> None:
    text = (workdir / "cluster.yaml").read_text()
    text = text.replace("profile: rtx-pro-6000-blackwell-server", f"profile: ./{where}")
    (workdir / "pooled.yaml").write_text(text)


PATH_COMMANDS = [
    ["generate", "pooled.yaml", "--out", "out"],
    ["id", "{p}"],
    ["lint", "{p}"],
    ["lint", "cluster.yaml", "--hardware", "./{p}"],
    ["detect", "lspci.txt", "--against", "./{p}"],
    ["generate", "cluster.yaml", "--out", "{p}/out"],
    ["generate", "cluster.yaml", "--out", "out", "--profiles", "{p}"],
    ["verify", "{p}"],
    ["verify", "--out", "{p}"],
    ["upgrade", "cluster.yaml", "--to", "v1.13.9", "--base", "{p}"],
    ["register", "{p}"],
]


@pytest.mark.parametrize("kind", ["long-name", "link-loop"])
@pytest.mark.parametrize("args", PATH_COMMANDS, ids=lambda args: " ".join(args))
def test_an_impossible_path_is_one_message(workdir: Path, kind: str, args: list[str]) -> None:
    """A component over 255 bytes (ENAMETOOLONG) or a link loop (ELOOP) anywhere a path is taken."""
    if kind == "long-name":
        bad = LONG_NAME
    else:
        bad = "loop"
        (workdir / "loop").symlink_to("loop2")
        (workdir / "loop2").symlink_to("loop")
    _profile_at(workdir, bad)
    before = tree(workdir)
    code, _out, err = invoke(*(arg.format(p=bad) for arg in args), cwd=workdir)
    message = one_message(err)
    assert code in (1, 2), err
    assert bad in message or "pooled.yaml" in message, message
    assert tree(workdir) == before


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["upgrade", "cluster.yaml", "--to", f"v1.{MANY_DIGITS}.0"], "--to"),
        (["upgrade", "cluster.yaml", "--from", f"v1.{MANY_DIGITS}.0", "--to", "v1.13.9"], "--from"),
        (["extensions", "--talos", f"v1.{MANY_DIGITS}.0"], "v1.999"),
        (["gpu", "--talos", f"v1.{MANY_DIGITS}.0", "10de:26b9"], "v1.999"),
        (["id", "--max-input-size", "1e309", "s.yaml"], "--max-input-size"),
        (["lint", "--max-input-size", "inf", "s.yaml"], "--max-input-size"),
    ],
)
def test_an_impossible_number_in_an_option_is_one_message(
    workdir: Path, args: list[str], where: str
) -> None:
    code, out, err = invoke(*args, cwd=workdir)
    assert code in (1, 2), err
    assert "Traceback" not in err + out
    assert where in err, err


@pytest.mark.parametrize(
    ("command", "edit"),
    [
        (
            ["generate", "big.yaml", "--out", "out"],
            ("maxReplicas: 4", f"maxReplicas: {MANY_DIGITS}"),
        ),
        (
            ["upgrade", "big.yaml", "--to", "v1.13.9"],
            ("maxReplicas: 4", f"maxReplicas: {MANY_DIGITS}"),
        ),
        (["generate", "big.yaml", "--out", "out"], ("count: 2", f"count: 0x{'f' * 5000}")),
        (["generate", "big.yaml", "--out", "out"], ("v1.13.9", f"v1.{MANY_DIGITS}.0")),
    ],
)
def test_a_number_past_the_conversion_limit_in_a_cluster_file_is_one_message(
    workdir: Path, command: list[str], edit: tuple[str, str]
) -> None:
    text = (workdir / "cluster.yaml").read_text()
    assert edit[0] in text
    (workdir / "big.yaml").write_text(text.replace(edit[0], edit[1], 1))
    before = tree(workdir)
    code, _out, err = invoke(*command, cwd=workdir)
    assert code == 1, err
    assert one_message(err).startswith("talos-schematic: big.yaml"), err
    assert tree(workdir) == before


def test_lint_reports_a_number_past_the_limit_as_a_finding_at_its_line(workdir: Path) -> None:
    text = (
        (workdir / "cluster.yaml")
        .read_text()
        .replace("maxReplicas: 4", f"maxReplicas: {MANY_DIGITS}")
    )
    (workdir / "big.yaml").write_text(text)
    code, out, err = invoke("lint", "big.yaml", cwd=workdir)
    line = text[: text.index(MANY_DIGITS)].count("\n") + 1
    assert code == 3, err
    assert (
        f"big.yaml:{line}: error TS002: not valid YAML: a number of more than 1,000 digits" in out
    )


def test_id_reads_a_number_past_int64_as_text_as_the_factory_does(workdir: Path) -> None:
    """go-yaml resolves a plain number it cannot hold in 64 bits as a string."""
    body = "overlay:\n  name: rpi_generic\n  image: siderolabs/sbc-raspberrypi\n  options:\n"
    (workdir / "plain.yaml").write_text(body + f"    size: {MANY_DIGITS}\n")
    (workdir / "quoted.yaml").write_text(body + f'    size: "{MANY_DIGITS}"\n')
    code, out, err = invoke("id", "plain.yaml", "quoted.yaml", cwd=workdir)
    assert (code, err) == (0, "")
    plain, quoted = (line.split()[0] for line in out.splitlines())
    assert plain == quoted


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc on this platform")
def test_verify_searching_a_directory_whose_entries_vanish_is_one_message(workdir: Path) -> None:
    """`verify /` walked into /proc, where a process ending mid-walk raised FileNotFoundError.
    A process that ended is passed by; a folder of /proc that cannot be listed (some cannot,
    even by root, in a container) is named, as any unreadable folder is."""
    code, _out, err = invoke("verify", "/proc", cwd=workdir)
    assert code == 1, err
    message = one_message(err)
    assert message.startswith("talos-schematic: /proc"), message
    assert message.endswith(("no *.schematic.yaml files here", "Permission denied")), message
