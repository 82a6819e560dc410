"""`generate --out` / `check --out` never lose or misjudge what the tool did not write.

Each case asserts the exit code, one message on stderr, and the directory as it was.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tree_snapshot import snapshot
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def one_message(result: Result) -> str:
    """The one error line (notes, such as the chart target assumed, aside)."""
    lines = [
        line for line in result.stderr.splitlines() if not line.startswith("talos-schematic: note:")
    ]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_a_helm_chart_repository_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "index.yaml").write_text("apiVersion: v1\nentries:\n  app: []\n")
    (tmp_path / "app-1.0.0.tgz").write_bytes(b"\x1f\x8b chart")
    before = snapshot(tmp_path)
    result = run("generate", str(EXAMPLE), "--out", str(tmp_path))
    assert result.exit_code == 1
    assert "index.yaml: not written by talos-schematic" in one_message(result)
    assert snapshot(tmp_path) == before


def test_a_foreign_kustomization_survives_generate_and_is_not_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The user's own kustomization, there before the tool wrote anything (one the tool wrote
    # is the tool's: its index records it, and it is regenerated like the other files).
    out.mkdir()
    (out / "kustomization.yaml").write_text("resources: [rtx6000/kubernetes-nodes.yaml]\n")
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    assert "kustomization" not in (out / "index.yaml").read_text()
    (out / "rtx6000" / "NOTES.md").write_text("ours, not the tool's\n")
    assert run("generate", str(EXAMPLE), "--out", str(out), "--layout", "talos").exit_code == 0
    assert (
        out / "kustomization.yaml"
    ).read_text() == "resources: [rtx6000/kubernetes-nodes.yaml]\n"
    assert (out / "rtx6000" / "NOTES.md").exists()
    result = run("check", str(EXAMPLE), "--out", str(out), "--layout", "talos")
    assert result.exit_code == 0, result.stderr
    assert "up to date" in result.stderr


def test_out_root_is_refused_without_walking_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_walk(*args: object, **kwargs: object) -> None:
        raise AssertionError("walked the disk")

    monkeypatch.setattr(os, "walk", no_walk)
    started = time.monotonic()
    for command in ("generate", "check"):
        result = run(command, str(EXAMPLE), "--out", "/")
        assert result.exit_code == 1
        assert "refusing to write into /" in one_message(result)
    assert time.monotonic() - started < 5


def test_out_dot_keeps_the_shells_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine\n")
    inode = os.stat(".").st_ino
    assert run("generate", str(EXAMPLE), "--out", ".").exit_code == 0
    assert run("generate", str(EXAMPLE), "--out", ".", "--layout", "talos").exit_code == 0
    assert os.stat(".").st_ino == inode == tmp_path.stat().st_ino
    assert Path("index.yaml").is_file() and Path("keep.txt").read_text() == "mine\n"
    assert run("check", str(EXAMPLE), "--out", ".", "--layout", "talos").exit_code == 0


def test_a_dangling_symbolic_link_is_neither_followed_nor_created(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "nowhere")
    before = snapshot(tmp_path)
    result = run("generate", str(EXAMPLE), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "does not exist; not followed" in one_message(result)
    assert snapshot(tmp_path) == before


def _without_override() -> list[str]:
    """A prefix running a command as root without the capability to write where permissions
    forbid it (so a read-only directory is one for it too); [] for another user."""
    import shutil
    import subprocess

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root writes into read-only directories, and setpriv is not here to stop it")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--inh-caps=-all"]
    if subprocess.run([*prefix, "true"], check=False, capture_output=True).returncode != 0:
        pytest.skip(
            "root writes into read-only directories, and its capabilities cannot be dropped"
        )
    return prefix


@pytest.mark.parametrize("read_only", [".", "cpu"])
def test_a_read_only_directory_exits_1_and_leaves_nothing(tmp_path: Path, read_only: str) -> None:
    """A real read-only directory (the output or one pool's), not a simulated one."""
    import subprocess
    import sys

    prefix = _without_override()
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    before = snapshot(tmp_path)
    (out / read_only).chmod(0o555)
    try:
        command = [sys.executable, "-m", "schematic", "generate", str(EXAMPLE), "--out", str(out)]
        done = subprocess.run(
            [*prefix, *command, "--layout", "talos"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        errors = [line for line in done.stderr.splitlines() if ": note:" not in line]
        assert done.returncode == 1, done.stderr
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert "Permission denied" in errors[0]
        assert snapshot(tmp_path) == before
    finally:
        (out / read_only).chmod(0o755)


def test_a_file_in_the_way_is_named_and_kept(tmp_path: Path) -> None:
    (tmp_path / "rtx6000").mkdir()
    (tmp_path / "rtx6000" / "values.yaml").write_text("hand-written\n")
    before = snapshot(tmp_path)
    result = run("generate", str(EXAMPLE), "--out", str(tmp_path))
    assert result.exit_code == 1
    assert "rtx6000/values.yaml: exists and was not written by talos-schematic" in one_message(
        result
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_fifo_or_link_in_place_of_a_tool_file_is_neither_read_nor_followed(
    tmp_path: Path, kind: str
) -> None:
    """generate, check --diff and verify each end with one message (a FIFO would block them, a
    link to a secret would print it into a CI log)."""
    import subprocess
    import sys

    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    for name in ("cpu/values.yaml", "cpu/schematic.yaml"):
        (out / name).unlink()
        if kind == "fifo":
            os.mkfifo(out / name)
        else:
            (out / name).symlink_to(secret)
    before = snapshot(tmp_path)
    for args in (
        ["generate", str(EXAMPLE), "--out", str(out)],
        ["check", str(EXAMPLE), "--out", str(out), "--diff"],
        ["verify", "--out", str(out)],
    ):
        # A subprocess with a timeout: a FIFO read would otherwise hang the test run.
        done = subprocess.run(
            [sys.executable, "-m", "schematic", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "TALOS_SCHEMATIC_FACTORY": "http://127.0.0.1:9"},
        )
        assert done.returncode == 1, (args, done.stderr)
        errors = [line for line in done.stderr.splitlines() if ": note:" not in line]
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert "hunter2" not in done.stdout + done.stderr
        assert "cpu" in errors[0]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("index", "message"),
    [
        # Not YAML and no marker: some other tool's file, never the tool's to replace.
        ("{not: yaml: here\n", "index.yaml: not written by talos-schematic"),
        # The tool's marker, then text that is not YAML: the tool's index, damaged.
        (
            "# Generated by talos-schematic generate; regenerate instead of editing.\n"
            "generator: talos-schematic\npools: [\n",
            "index.yaml: not valid YAML",
        ),
    ],
)
def test_an_index_that_is_not_yaml_is_told_apart_by_the_marker(
    tmp_path: Path, index: str, message: str
) -> None:
    (tmp_path / "index.yaml").write_text(index)
    before = snapshot(tmp_path)
    result = run("generate", str(EXAMPLE), "--out", str(tmp_path))
    assert result.exit_code == 1
    assert message in one_message(result)
    assert snapshot(tmp_path) == before
