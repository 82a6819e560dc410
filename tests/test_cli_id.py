"""`talos-schematic id`: one file, several, standard input, --canonical, --json, failures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schematic.cli.id_command  # noqa: F401  (registers the command on app)
from schematic.cli import app

runner = CliRunner()

QEMU = (
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)
QEMU_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
EMPTY_ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "qemu": tmp_path / "qemu.yaml",
        "empty": tmp_path / "empty.json",
        "bad": tmp_path / "bad.yaml",
    }
    paths["qemu"].write_text(QEMU)
    paths["empty"].write_text("{}")
    paths["bad"].write_text("customization:\n  bootloader: auto\n")
    return paths


def test_one_file_prints_the_line_several_would(files: dict[str, Path]) -> None:
    # A glob that matches one file must read like one that matches two.
    result = runner.invoke(app, ["id", str(files["qemu"])])
    assert result.exit_code == 0
    assert result.stdout == f"{QEMU_ID}  {files['qemu']}\n"


def test_standard_input(files: dict[str, Path]) -> None:
    assert runner.invoke(app, ["id"], input=QEMU).stdout == QEMU_ID + "\n"
    assert runner.invoke(app, ["id", "-"], input="{}").stdout == EMPTY_ID + "\n"


def test_several_files_like_sha256sum(files: dict[str, Path]) -> None:
    result = runner.invoke(app, ["id", str(files["empty"]), str(files["qemu"])])
    assert result.exit_code == 0
    assert result.stdout == f"{EMPTY_ID}  {files['empty']}\n{QEMU_ID}  {files['qemu']}\n"


def test_canonical(files: dict[str, Path]) -> None:
    result = runner.invoke(app, ["id", "--canonical", str(files["qemu"])])
    assert result.stdout == (
        "customization:\n    systemExtensions:\n        officialExtensions:\n"
        "            - siderolabs/qemu-guest-agent\n"
    )
    several = runner.invoke(app, ["id", "--canonical", str(files["empty"]), str(files["qemu"])])
    assert several.stdout.startswith("customization: {}\n---\ncustomization:\n")


def test_json_is_one_list_of_objects_however_many_inputs(files: dict[str, Path]) -> None:
    empty = {"file": str(files["empty"]), "id": EMPTY_ID, "canonical": "customization: {}\n"}
    one = json.loads(runner.invoke(app, ["id", "--json", str(files["empty"])]).stdout)
    assert one == [empty]
    several = json.loads(
        runner.invoke(app, ["id", "--json", str(files["empty"]), str(files["qemu"])]).stdout
    )
    assert several[0] == empty
    assert [sorted(entry) for entry in several] == [["canonical", "file", "id"]] * 2
    assert [entry["id"] for entry in several] == [EMPTY_ID, QEMU_ID]
    piped = json.loads(runner.invoke(app, ["id", "--json"], input="{}").stdout)
    assert piped == [{**empty, "file": "-"}]
    # A run where every input is refused still prints the list (empty), and exits 1.
    refused = runner.invoke(app, ["id", "--json", str(files["bad"])])
    assert (refused.exit_code, json.loads(refused.stdout)) == (1, [])


@pytest.mark.parametrize(
    "body",
    [
        'customization:\n  extraKernelArgs:\n    - "console=ttyS0",\n',
        "customization:\n  extraKernelArgs:\n    - 'a=1',b=2\n",
    ],
)
def test_a_quote_then_a_comma_outside_a_flow_list_is_refused(tmp_path: Path, body: str) -> None:
    path = tmp_path / "comma.yaml"
    path.write_text(body)
    result = runner.invoke(app, ["id", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"talos-schematic: {path}:3: invalid YAML")


def test_a_refused_file_is_named_and_the_others_still_print(files: dict[str, Path]) -> None:
    result = runner.invoke(app, ["id", str(files["qemu"]), str(files["bad"]), str(files["empty"])])
    assert result.exit_code == 1
    assert result.stdout == f"{QEMU_ID}  {files['qemu']}\n{EMPTY_ID}  {files['empty']}\n"
    assert f"{files['bad']}:2: customization.bootloader: unknown bootloader 'auto'" in result.stderr


def test_a_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["id", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1
    assert "nope.yaml: cannot read" in result.stderr
    assert result.stdout == ""


def test_legacy_quoting(tmp_path: Path) -> None:
    path = tmp_path / "words.yaml"
    path.write_text("customization:\n  extraKernelArgs: ['yes']\n")
    modern = runner.invoke(app, ["id", "--canonical", str(path)]).stdout
    legacy = runner.invoke(app, ["id", "--canonical", "--legacy-quoting", str(path)]).stdout
    assert "- 'yes'" in modern
    assert '- "yes"' in legacy


def test_console_script_and_module_entry_points(files: dict[str, Path]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "schematic", "id", str(files["qemu"])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{QEMU_ID}  {files['qemu']}\n")
    bad = subprocess.run(
        [sys.executable, "-m", "schematic", "id", str(files["bad"])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
