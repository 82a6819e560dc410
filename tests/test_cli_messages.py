"""Warnings and notes as a reader meets them: each once, a note for several pools once naming
them, the cause on one line and the fix on the next, the details on -v, wrapped to the
terminal and never past its edge (schematic/cli/telling.py)."""

from __future__ import annotations

import io
import os
import pty
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.cli.telling import message_lines, width_of
from schematic.messages import Message, merged

register_all_commands()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"
# On this chart every GPU pool of the example gets the same warning: kernelModules may be
# ignored (three pools, one 900-character line each before).
MODULES_WARNING = "kernelModules (nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset) is written"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example copied to a new directory, the run's working directory: paths are
    typed as a user types them, relative."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cluster.yaml").write_bytes(EXAMPLE.read_bytes())
    return tmp_path


def run(*args: str, columns: int | None = None) -> Result:
    env = {"COLUMNS": str(columns)} if columns else {}
    return CliRunner().invoke(app, list(args), env=env)


def test_a_warning_for_every_gpu_pool_is_told_once_naming_them(in_tmp: Path) -> None:
    result = run("generate", "cluster.yaml", "--chart", "v1.7", "-f", "values")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    told = [at for at, line in enumerate(lines) if MODULES_WARNING in line]
    assert len(told) == 1
    assert lines[told[0]].startswith(
        'talos-schematic: warning: cluster.yaml: pools "rtx6000", "l40s", "v100": '
        + MODULES_WARNING
    )
    assert lines[told[0] + 1].startswith("  fix: check before rolling out: `kubectl get")
    # The details (why, the durable way) wait for -v.
    assert "pull request #3571" not in result.stderr


def test_no_line_passes_the_terminals_edge(in_tmp: Path) -> None:
    result = run("generate", "cluster.yaml", "--chart", "v1.7", "--out", "out", columns=80)
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert max(len(line) for line in lines) <= 80
    # Every message starts at the margin, its own continuation indented under it.
    assert all(line.startswith(("talos-schematic: ", "  ", "4 pools")) for line in lines)
    said = " ".join(result.stderr.split())
    assert 'pools "rtx6000", "l40s", "v100": ' + MODULES_WARNING in said
    assert said.count(MODULES_WARNING) == 1


def test_to_a_pipe_each_part_is_one_line_and_the_same_bytes(in_tmp: Path) -> None:
    first = run("generate", "cluster.yaml", "--chart", "v1.7", "-f", "values")
    again = run("generate", "cluster.yaml", "--chart", "v1.7", "-f", "values")
    assert first.stderr == again.stderr
    # One grep finds a whole cause: the warning is one line, its fix the next.
    warning = next(line for line in first.stderr.splitlines() if MODULES_WARNING in line)
    assert warning.endswith("if it does not, the GPUs come up without a driver")
    assert len(warning) > 200  # not wrapped: nothing here is a terminal


def test_verbose_tells_the_details_and_every_pool(in_tmp: Path) -> None:
    result = run("generate", "cluster.yaml", "--chart", "v1.7", "-f", "values", "-v")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    at = next(at for at, line in enumerate(lines) if MODULES_WARNING in line)
    assert lines[at + 1].startswith("  fix: ")
    assert lines[at + 2].startswith("  details: pull request #3571 adds kernelModules")
    assert "a machine-config patch applied by hand is undone" in lines[at + 2]


def test_each_command_of_a_run_tells_a_note_once(in_tmp: Path) -> None:
    commands = [
        ["generate", "cluster.yaml", "--chart", "v1.7", "--out", "out"],
        ["check", "cluster.yaml", "--out", "out"],
        ["upgrade", "cluster.yaml", "--to", "v1.14.0"],
        ["generate", "cluster.yaml", "--chart", "v1.7", "-f", "values", "-v"],
    ]
    for args in commands:
        result = run(*args, columns=100)
        assert result.exit_code == 0, (args, result.stderr)
        said = " ".join(result.stderr.split())
        assert said.count("talos-schematic: facts: the shipped tables") == 1, args
        assert said.count("is unverified") <= 1, args
        assert said.count(MODULES_WARNING) <= 1, args
        assert max(len(line) for line in result.stderr.splitlines()) <= 100, args


def test_many_pools_are_counted_and_listed_on_verbose(in_tmp: Path) -> None:
    pools = "".join(f"  - {{name: gpu{n}, profile: kubevirt-l40s}}\n" for n in range(6))
    (in_tmp / "many.yaml").write_text(
        "cluster: many\nnamespace: tenant-ml\ncozystack: {version: v1.7}\n"
        "talos: {version: v1.13.9}\npools:\n" + pools
    )
    short = run("generate", "many.yaml", "-f", "values")
    assert short.exit_code == 0, short.stderr
    warning = next(line for line in short.stderr.splitlines() if "kernelModules (" in line)
    assert 'many.yaml: pools "gpu0", "gpu1", "gpu2" and 3 more: kernelModules' in warning
    every = run("generate", "many.yaml", "-f", "values", "--verbose")
    warning = next(line for line in every.stderr.splitlines() if "kernelModules (" in line)
    named = ", ".join(f'"gpu{n}"' for n in range(6))
    assert f"many.yaml: pools {named}: kernelModules" in warning


def test_a_note_that_differs_per_pool_stays_per_pool(in_tmp: Path) -> None:
    (in_tmp / "mixed.yaml").write_text(
        "cluster: demo\ncozystack: {version: osimage}\ntalos: {version: v1.13.9}\npools:\n"
        "  - {name: gpu, profile: kubevirt-l40s, kernelModules: []}\n"
        "  - {name: twin, profile: kubevirt-l40s, kernelModules: []}\n"
        "  - {name: part, profile: kubevirt-l40s, kernelModules: [{name: nvidia}]}\n"
    )
    result = run("generate", "mixed.yaml", "-f", "values")
    assert result.exit_code == 0, result.stderr
    unloaded = [line for line in result.stderr.splitlines() if "does not load" in line]
    assert unloaded == [
        'talos-schematic: note: mixed.yaml: pools "gpu", "twin": kernelModules [] does not '
        "load nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset",
        'talos-schematic: note: mixed.yaml: pool "part": kernelModules as listed does not '
        "load nvidia_uvm, nvidia_drm, nvidia_modeset",
    ]


def test_a_real_terminal_gets_lines_of_its_width(in_tmp: Path) -> None:
    """The run as in a terminal 60 columns wide: stderr is the terminal, no COLUMNS set."""
    import fcntl
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "schematic", "generate", "cluster.yaml", "--chart", "v1.7"],
            stdout=subprocess.DEVNULL,
            stderr=follower,
            env=env,
            timeout=120,
            check=False,
        )
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: all was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    lines = seen.decode().splitlines()
    assert max(len(line) for line in lines) <= 60
    assert "warning: cluster.yaml: pools" in " ".join(seen.decode().split())


# --- the parts, one message at a time --------------------------------------------------------


def _note(pools: tuple[str, ...], cause: str = "x is so") -> Message:
    return Message(level="note", source="c.yaml", pools=pools, cause=cause, fix="do y")


def test_merged_joins_what_differs_only_by_pools_and_keeps_the_order() -> None:
    told = merged(
        [_note(("a",)), _note((), "other"), _note(("b", "a")), _note(("c",)), _note(("a",))]
    )
    assert told == [_note(("a", "b", "c")), _note((), "other")]
    assert merged([_note(("a",), "one"), _note(("b",), "two")]) == [
        _note(("a",), "one"),
        _note(("b",), "two"),
    ]


def test_a_message_on_one_line_for_a_library_caller() -> None:
    message = Message(
        level="warning", source="c.yaml", pools=("a", "b"), cause="c", fix="f", details="d"
    )
    assert str(message) == 'warning: c.yaml: pools "a", "b": c; d; f'
    assert str(Message(level="", cause="removed pool a")) == "removed pool a"


@pytest.mark.parametrize("width", [40, 80, 120])
def test_message_lines_fit_their_width_and_keep_every_word(width: int) -> None:
    path = "deploy/" + "a-very-long-folder-name/" * 3 + "cluster.yaml"
    message = Message(
        level="warning",
        source=path,
        pools=("gpu",),
        cause="kernelModules is written, but whether the chart reads it is not settled",
        fix="check with `kubectl get applicationdefinitions kubernetes-nodes -o jsonpath=...`",
        details="the details",
    )
    lines = message_lines(message, width)
    assert max(len(line) for line in lines) <= width
    assert lines[0].startswith("talos-schematic: warning: ")
    assert all(line.startswith("    ") for line in lines[1:] if not line.startswith("  fix: "))
    whole = "".join(line.strip() for line in lines)
    for part in (message.cause, message.fix):
        assert part.replace(" ", "") in whole.replace(" ", "")
    assert "the details" not in whole
    assert "the details" in " ".join(message_lines(message, width, verbose=True))
    # Unwrapped: the head and the fix, a line each.
    assert message_lines(message, None) == [
        f'talos-schematic: warning: {path}: pool "gpu": {message.cause}',
        f"  fix: {message.fix}",
    ]


def test_a_module_change_of_several_pools_is_one_note(in_tmp: Path) -> None:
    # Two CPU pools of one shape: a kernelModules change that keeps their schematic reaches
    # their running workers the same way, said once for both.
    def cluster(modules: str) -> str:
        return (
            "cluster: demo\nnamespace: tenant-ml\ncozystack: {version: v1.6}\n"
            "talos: {version: v1.13.9}\npools:\n"
            + "".join(
                f"  - {{name: {name}, profile: kubevirt-cpu{modules}}}\n"
                for name in ("web", "db", "cache")
            )
        )

    (in_tmp / "two.yaml").write_text(cluster(""))
    assert run("generate", "two.yaml", "--out", "out").exit_code == 0
    (in_tmp / "two.yaml").write_text(cluster(", kernelModules: [{name: dm_thin_pool}]"))
    result = run("generate", "two.yaml", "--out", "out", "--allow-ignored-keys")
    assert result.exit_code == 0, result.stderr
    changed = [line for line in result.stderr.splitlines() if "kernelModules change" in line]
    assert changed == [
        'talos-schematic: note: two.yaml: pools "web", "db", "cache": kernelModules change and '
        "the schematic does not: " + changed[0].split("does not: ", 1)[1]
    ]


def test_no_command_prints_a_warning_or_note_of_its_own() -> None:
    """Every warning and note goes through the one printer (cli/telling.py), so each is told
    once, split and wrapped alike; a command printing one itself would bypass all three."""
    cli = Path(__file__).resolve().parents[1] / "schematic" / "cli"
    itself = re.compile(r"""print\(\s*f?["']talos-schematic: (note|warning)""")
    printing = [path.name for path in cli.glob("*.py") if itself.search(path.read_text())]
    assert printing == []


@pytest.mark.parametrize(
    ("columns", "width"),
    [("80", 80), ("20", 20), ("19", None), ("0", None), ("-3", None), ("wide", None)],
)
def test_a_width_too_narrow_or_not_a_number_leaves_lines_whole(
    columns: str, width: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert width_of(io.StringIO()) == width
