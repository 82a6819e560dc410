"""`check --diff`: a unified diff of every drifted file, applicable with patch -p0."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.output.disk import Drift, digest
from schematic.output.drift import drift_diff
from schematic.output.outdir import index_text, parse_index

register_all_commands()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def out(tmp_path: Path) -> Path:
    directory = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(directory)).exit_code == 0
    return directory


def test_a_hand_edited_file_diffs_with_its_name(out: Path) -> None:
    values = out / "rtx6000" / "values.yaml"
    values.write_text(values.read_text().replace("maxReplicas: 4", "maxReplicas: 6"))
    result = run("check", str(EXAMPLE), "--out", str(out), "--diff")
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert lines[0] == f"--- {values}\t(in the directory)"
    assert lines[1] == f"+++ {values}\t(as generate writes it)"
    assert lines[2].startswith("@@ ")
    assert [line for line in lines if line[:1] in "+-" and line[:3] not in ("---", "+++")] == [
        "-maxReplicas: 6",
        "+maxReplicas: 4",
    ]
    # The summary stays on stderr, so the diff can be piped alone.
    assert "changed: rtx6000/values.yaml" in result.stderr


def written_for_a_gone_pool(out: Path, content: str) -> None:
    """As an earlier run wrote it when the cluster file still had a pool "gone"."""
    index = parse_index((out / "index.yaml").read_bytes())
    (out / "gone").mkdir()
    (out / "gone" / "values.yaml").write_text(content)
    index = replace(
        index,
        pools=(*index.pools, {"name": "gone", "schematicID": "0" * 64}),
        files={**index.files, "gone/values.yaml": digest(content.encode())},
    )
    (out / "index.yaml").write_text(index_text(index))


def test_missing_and_extra_files_diff_against_dev_null(out: Path) -> None:
    (out / "cpu" / "urls.yaml").unlink()
    written_for_a_gone_pool(out, "kept by hand")
    (out / "notes.txt").write_text("the user's, not the tool's: never drift")
    result = run("check", str(EXAMPLE), "--out", str(out), "--diff")
    assert result.exit_code == 3
    stdout = result.stdout
    assert f"--- /dev/null\n+++ {out}/cpu/urls.yaml\t(as generate writes it)\n" in stdout
    assert f"--- {out}/gone/values.yaml\t(in the directory)\n+++ /dev/null\n" in stdout
    assert "-kept by hand\n\\ No newline at end of file\n" in stdout
    assert "notes.txt" not in stdout


def test_up_to_date_prints_no_diff(out: Path) -> None:
    result = run("check", str(EXAMPLE), "--out", str(out), "--diff")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_without_diff_stdout_stays_empty(out: Path) -> None:
    (out / "cpu" / "values.yaml").write_text("edited: true\n")
    result = run("check", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 3
    assert result.stdout == ""


@pytest.mark.skipif(shutil.which("patch") is None, reason="patch(1) is not installed")
def test_patch_applies_the_diff_and_check_then_passes(out: Path) -> None:
    (out / "l40s" / "machine-config-patch.yaml").write_text("machine: {}\n")
    (out / "v100" / "schematic.yaml").unlink()
    result = run("check", str(EXAMPLE), "--out", str(out), "--diff")
    assert result.exit_code == 3
    done = subprocess.run(
        ["patch", "-p0", "--quiet"],
        input=result.stdout,
        text=True,
        capture_output=True,
        cwd="/",
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0


def test_drift_diff_reads_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(b"key: \xff\n")
    diff = drift_diff(tmp_path, {"a.yaml": b"key: value\n"}, Drift(changed=("a.yaml",)))
    assert "-key: \ufffd\n+key: value\n" in diff


def test_drift_diff_marks_a_generated_file_without_final_newline(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("a\n")
    diff = drift_diff(tmp_path, {"a.yaml": b"a\nb"}, Drift(changed=("a.yaml",)))
    assert diff.endswith("+b\n\\ No newline at end of file\n")


# --- check --format json --------------------------------------------------------------------


def test_json_lists_the_drifted_paths_on_stdout(out: Path) -> None:
    (out / "cpu" / "urls.yaml").unlink()
    written_for_a_gone_pool(out, "written for a pool since removed\n")
    (out / "notes.txt").write_text("the user's file, not drift\n")
    values = out / "rtx6000" / "values.yaml"
    values.write_text(values.read_text() + "extra: true\n")
    result = run("check", str(EXAMPLE), "--out", str(out), "--format", "json")
    assert result.exit_code == 3
    document = json.loads(result.stdout)
    assert document == {
        "directory": str(out),
        "cluster": str(EXAMPLE),
        "upToDate": False,
        "changed": ["index.yaml", "rtx6000/values.yaml"],
        "missing": ["cpu/urls.yaml"],
        "extra": ["gone/values.yaml"],
        "leftFolders": [],
    }


def test_json_with_diff_carries_the_diff(out: Path) -> None:
    up_to_date = json.loads(
        run("check", str(EXAMPLE), "--out", str(out), "-f", "json", "--diff").stdout
    )
    assert (up_to_date["upToDate"], up_to_date["diff"]) == (True, "")
    (out / "cpu" / "values.yaml").write_text("edited: true\n")
    result = run("check", str(EXAMPLE), "--out", str(out), "-f", "json", "--diff")
    assert result.exit_code == 3
    document = json.loads(result.stdout)
    assert document["changed"] == ["cpu/values.yaml"]
    assert document["diff"].startswith(f"--- {out}/cpu/values.yaml\t(in the directory)\n")
    assert "-edited: true\n" in document["diff"]


def test_the_kinds_compared_come_from_the_index(tmp_path: Path) -> None:
    # A directory written with one kind is checked as that kind, whatever --format says.
    directory = tmp_path / "patches"
    written = run("generate", str(EXAMPLE), "--out", str(directory), "-f", "machine-config")
    assert written.exit_code == 0
    result = run("check", str(EXAMPLE), "--out", str(directory), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["upToDate"] is True


def test_the_index_is_diffed_only_when_asked(out: Path) -> None:
    # A pool removed from the cluster file: its file is extra and the index's records change.
    written_for_a_gone_pool(out, "written for a pool since removed\n")
    plain = run("check", str(EXAMPLE), "--out", str(out), "--diff")
    assert plain.exit_code == 3
    assert "changed: index.yaml" in plain.stderr  # still named as drift
    assert f"--- {out}/gone/values.yaml\t(in the directory)" in plain.stdout
    assert "index.yaml" not in plain.stdout
    with_index = run("check", str(EXAMPLE), "--out", str(out), "--diff", "--diff-index")
    assert with_index.exit_code == 3
    assert f"--- {out}/index.yaml\t(in the directory)" in with_index.stdout
    assert with_index.stdout.replace(plain.stdout, "").startswith(f"--- {out}/index.yaml")
