"""`--quiet` on the commands CI runs: the exit code alone says the verdict, nothing is printed,
and an error that stops the run is still told."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
TRIAGE = ROOT / "tests" / "data" / "triage"

# A rendered cluster with five lint errors; a storage schematic with none; a file of module
# documents alone, which say too little to judge (exit 4).
FAILS_LINT = ROOT / "tests" / "data" / "lint" / "rendered-gpu-cluster.yaml"
PASSES_LINT = ROOT / "tests" / "data" / "lint_corpus" / "schematic-storage.yaml"
JUDGES_NOTHING = ROOT / "tests" / "data" / "lint_corpus" / "kernelmoduleconfig-iscsi-nongpu.yaml"


register_all_commands()
runner = CliRunner()


@dataclass(frozen=True)
class Typed:
    returncode: int
    stdout: str
    stderr: str


def typed(*args: str, cwd: Path) -> Typed:
    """The command run in-process from ``cwd``: what it prints and its exit code are the same
    as a child's (one test below runs real child processes to hold that)."""
    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(app, list(args))
    finally:
        os.chdir(before)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return Typed(result.exit_code, result.stdout, result.stderr)


def typed_in_a_child(*args: str, cwd: Path) -> Typed:
    done = subprocess.run(
        [sys.executable, "-m", "schematic", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Typed(done.returncode, done.stdout, done.stderr)


def assert_silent(done: Typed, code: int) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (code, "", "")


@pytest.mark.parametrize(
    ("manifest", "code"), [(FAILS_LINT, 3), (PASSES_LINT, 0), (JUDGES_NOTHING, 4)]
)
@pytest.mark.parametrize("flag", ["--quiet", "-q"])
def test_lint_quiet_says_only_its_exit_code(
    tmp_path: Path, manifest: Path, code: int, flag: str
) -> None:
    loud = typed("lint", str(manifest), cwd=tmp_path)
    assert loud.returncode == code
    assert "talos-schematic lint:" in loud.stderr  # what --quiet holds back
    assert_silent(typed("lint", flag, str(manifest), cwd=tmp_path), code)


@pytest.mark.parametrize(
    ("bundle", "code"),
    [("paste-fabricmanager-invalid-config-h200", 3), ("class4-healthy-hgx-h100", 0)],
)
def test_triage_quiet_says_only_its_exit_code(tmp_path: Path, bundle: str, code: int) -> None:
    loud = typed("triage", str(TRIAGE / bundle), cwd=tmp_path)
    assert loud.returncode == code
    assert loud.stdout
    assert_silent(typed("triage", "--quiet", str(TRIAGE / bundle), cwd=tmp_path), code)


def test_triage_quiet_keeps_nothing_judged_apart_from_healthy(tmp_path: Path) -> None:
    (tmp_path / "evidence").mkdir()
    assert_silent(typed("triage", "-q", "evidence", cwd=tmp_path), 4)


def test_check_quiet_says_only_its_exit_code(tmp_path: Path) -> None:
    generated = typed("generate", str(EXAMPLE), "--out", "deploy", cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr
    up_to_date = typed("check", str(EXAMPLE), "--out", "deploy", cwd=tmp_path)
    assert "up to date" in up_to_date.stderr
    assert_silent(typed("check", "-q", str(EXAMPLE), "--out", "deploy", cwd=tmp_path), 0)
    with (tmp_path / "deploy" / "APPLY.md").open("a") as edited:
        edited.write("edited by hand\n")
    drifted = ["check", str(EXAMPLE), "--out", "deploy", "--diff", "--format", "json"]
    assert typed(*drifted, cwd=tmp_path).returncode == 3
    assert_silent(typed(*drifted, "--quiet", cwd=tmp_path), 3)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["lint", "-q", "missing.yaml"], "missing.yaml: no such file"),
        (["triage", "-q", "missing"], "missing: no such file"),
        (["check", "-q", "cluster.yaml", "--out", "deploy"], "cluster.yaml:2: not valid YAML"),
    ],
)
def test_quiet_still_tells_the_error_that_stops_the_run(
    tmp_path: Path, args: list[str], named: str
) -> None:
    (tmp_path / "cluster.yaml").write_text("pools: [\n")  # bad input for check: exit 1
    done = typed(*args, cwd=tmp_path)
    loud = typed(*[arg for arg in args if arg != "-q"], cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"talos-schematic: {named}")
    assert done.stderr == loud.stderr  # said once, as without --quiet


def test_quiet_still_tells_a_usage_error(tmp_path: Path) -> None:
    done = typed("lint", "-q", "--format", "yaml", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert "--format" in done.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["triage", "-q", str(TRIAGE / "paste-fabricmanager-invalid-config-h200")], 3),
        (["lint", "--quiet", str(PASSES_LINT)], 0),
        (["triage", "-q", "evidence"], 4),
    ],
)
def test_quiet_in_a_real_process_prints_nothing(tmp_path: Path, args: list[str], code: int) -> None:
    # What a CI job runs: a child process whose streams are pipes; nothing a library writes at
    # start-up or exit may reach them.
    (tmp_path / "evidence").mkdir()
    assert_silent(typed_in_a_child(*args, cwd=tmp_path), code)
