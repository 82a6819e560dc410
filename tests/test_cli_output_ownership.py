"""What `generate --out` may delete or replace: only files it can prove it wrote.

Reproducers of the hostile review: a pool folder swapped for a symbolic link, planted journal
and index entries, an empty --out, an index whose pool name is a list, -f keeping the other
kinds, removed pools named, --pool, --force. Each compares the whole tree (the output
directory and a sibling "precious" directory) before and after.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from tree_snapshot import snapshot
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.output.disk import JOURNAL, digest
from schematic.output.outdir import index_text, parse_index

register_all_commands()
runner = CliRunner()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"
WITHOUT_V100 = EXAMPLE.read_text().split("  - name: v100")[0] + (
    "  - name: cpu" + EXAMPLE.read_text().split("  - name: cpu", 1)[1]
)


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def errors(result: Result) -> list[str]:
    """The stderr lines that are not notes or warnings."""
    assert "Traceback" not in result.output
    return [
        line
        for line in result.stderr.splitlines()
        if not line.startswith(("talos-schematic: note:", "talos-schematic: warning:"))
    ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A repository holding a generated directory and a precious sibling directory."""
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "values.yaml").write_text("the user's own\n")
    (tmp_path / "precious" / "a.txt").write_text("a\n")
    (tmp_path / "precious" / "b.txt").write_text("b\n")
    (tmp_path / "README.md").write_text("the user's readme\n")
    (tmp_path / "smaller.yaml").write_text(WITHOUT_V100)
    result = run("generate", str(EXAMPLE), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.stderr
    (tmp_path / "out" / "README.md").write_text("the user's notes\n")
    return tmp_path


def test_a_pool_folder_swapped_for_a_link_is_not_removed_through(home: Path) -> None:
    out = home / "out"
    shutil.rmtree(out / "v100")
    (out / "v100").symlink_to("../precious")
    before = snapshot(home / "precious")
    result = run("generate", str(home / "smaller.yaml"), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert snapshot(home / "precious") == before
    assert (out / "v100").is_symlink()
    assert "v100/values.yaml: not removed (a symbolic link" in result.stderr


def test_a_planted_journal_deletes_nothing_it_cannot_prove(home: Path) -> None:
    out = home / "out"
    (out / "link").symlink_to("../precious")
    planted = "0" * 64
    readme = digest((out / "README.md").read_bytes())
    (out / JOURNAL).write_text(
        "talos-schematic journal 2\n"
        f"write {planted} README.md\n"
        f"remove {readme} ../README.md\n"
        f"temp {digest(b'a' + bytes(1))} link/a.txt\n"
        f"temp {digest(b'b' + chr(10).encode())} link/.b.txt\n"
        "dir link\nend\n"
    )
    before = snapshot(home)
    del before[f"out/{JOURNAL}"]
    result = run("generate", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    after = snapshot(home)
    assert after == before


def test_a_planted_journal_entry_is_not_reported_as_a_file_the_tool_kept(home: Path) -> None:
    # The journal named README.md; the tool never wrote it. Saying it was "not removed" as
    # "changed since talos-schematic wrote it" would tell the user the tool had written it.
    out = home / "out"
    (out / JOURNAL).write_text(f"talos-schematic journal 2\nwrite {'0' * 64} README.md\nend\n")
    result = run("generate", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert (out / "README.md").read_text() == "the user's notes\n"
    assert "not removed" not in result.stderr
    assert "README.md: the journal an interrupted run left names it, but it does not hold" in (
        " ".join(result.stderr.split())
    )


def test_a_planted_index_entry_deletes_nothing_outside(home: Path) -> None:
    out = home / "out"
    (out / "link").symlink_to("../precious")
    index = parse_index((out / "index.yaml").read_bytes())
    planted = {
        "link/b.txt": digest(b"b\n"),
        "README.md": digest((out / "README.md").read_bytes()),
    }
    (out / "index.yaml").write_text(index_text(replace(index, files={**index.files, **planted})))
    before = snapshot(home)
    result = run("generate", str(home / "smaller.yaml"), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert (home / "precious" / "b.txt").read_text() == "b\n"
    assert snapshot(home / "precious") == {
        k[9:]: v for k, v in before.items() if k.startswith("precious/")
    }
    # The planted README entry carries the file's true digest: it is the one file it could
    # remove, inside the directory, and only because the entry names its exact content.
    assert (home / "README.md").read_text() == "the user's readme\n"


def test_an_index_path_outside_the_directory_is_one_message(home: Path) -> None:
    out = home / "out"
    text = (
        (out / "index.yaml")
        .read_text()
        .replace("files:\n", "files:\n  ../README.md: " + "0" * 64 + "\n")
    )
    (out / "index.yaml").write_text(text)
    before = snapshot(home)
    result = run("generate", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 1
    assert errors(result) == [
        f"talos-schematic: {out / 'index.yaml'}: files: '../README.md' is not a path inside "
        "the directory; the index was edited — restore it from version control, or move the "
        "directory away and generate into a new one"
    ]
    assert snapshot(home) == before


def test_a_pool_name_that_is_a_list_is_one_message(home: Path) -> None:
    out = home / "out"
    text = (out / "index.yaml").read_text().replace("- name: rtx6000", "- name: [rtx6000]")
    (out / "index.yaml").write_text(text)
    before = snapshot(home)
    for command in ("check", "generate"):
        result = run(command, str(EXAMPLE), "--out", str(out))
        assert result.exit_code == 1, command
        assert errors(result) == [
            f"talos-schematic: {out / 'index.yaml'}: pools[0].name: must be a pool name, not "
            "a list; the index was edited — restore it from version control, or move the "
            "directory away and generate into a new one"
        ]
    assert snapshot(home) == before


def test_out_empty_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for command in ("generate", "check"):
        result = run(command, str(EXAMPLE), "--out", "")
        assert result.exit_code == 2, command
        assert "--out" in result.stderr and "is empty" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_format_keeps_every_other_file(home: Path) -> None:
    out = home / "out"
    before = snapshot(out)
    result = run("generate", str(EXAMPLE), "--out", str(out), "-f", "urls")
    assert result.exit_code == 0, result.stderr
    assert snapshot(out) == before
    result = run("generate", str(EXAMPLE), "--out", str(out), "-f", "schematic", "-f", "urls")
    assert result.exit_code == 0, result.stderr
    assert snapshot(out) == before
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0


def test_several_kinds_into_a_new_directory_are_all_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("generate", str(EXAMPLE), "--out", str(out), "-f", "schematic", "-f", "urls")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (out / "cpu").iterdir()) == ["schematic.yaml", "urls.yaml"]


def test_a_removed_pool_is_named_on_stderr(home: Path) -> None:
    out = home / "out"
    result = run("generate", str(home / "smaller.yaml"), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert f"talos-schematic: removed pool v100: it is no longer in {home / 'smaller.yaml'}" in (
        result.stderr.splitlines()
    )
    assert not (out / "v100").exists()
    assert (out / "README.md").read_text() == "the user's notes\n"


def test_pool_writes_that_pool_and_keeps_the_others(home: Path) -> None:
    out = home / "out"
    (out / "cpu" / "values.yaml").write_text("edited\n")
    before = snapshot(out)
    result = run("generate", str(home / "smaller.yaml"), "--out", str(out), "--pool", "l40s")
    assert result.exit_code == 0, result.stderr
    after = snapshot(out)
    # v100 and the cluster-wide files are kept: only l40s was asked for. APPLY.md names every
    # pool's IDs, so it is rewritten, and says v100's files are not the cluster file's.
    rewritten = ("index.yaml", "APPLY.md")
    assert {k: v for k, v in after.items() if k not in rewritten} == {
        k: v for k, v in before.items() if k not in rewritten
    }
    assert "(`generate --pool`): `v100`." in (out / "APPLY.md").read_text()
    assert "removed pool" not in result.stderr


def test_machine_config_on_stdout_needs_one_pool() -> None:
    refused = run("generate", str(EXAMPLE), "-f", "machine-config")
    assert refused.exit_code == 2
    assert "--pool" in refused.stderr and "--out" in refused.stderr
    one = run("generate", str(EXAMPLE), "-f", "machine-config", "--pool", "rtx6000")
    assert one.exit_code == 0, one.stderr
    assert one.stdout.startswith("# pool rtx6000: schematic ")
    assert "# pool cpu" not in one.stdout
    unknown = run("generate", str(EXAMPLE), "-f", "machine-config", "--pool", "nope")
    assert unknown.exit_code == 2 and "'nope'" in unknown.stderr


def test_another_cluster_needs_force(home: Path) -> None:
    out = home / "out"
    other = home / "other.yaml"
    other.write_text(EXAMPLE.read_text().replace("cluster: mycluster", "cluster: other"))
    before = snapshot(home)
    result = run("generate", str(other), "--out", str(out))
    assert result.exit_code == 1
    assert "holds cluster 'mycluster', not 'other'" in errors(result)[0]
    assert snapshot(home) == before
    assert run("generate", str(other), "--out", str(out), "--force").exit_code == 0
    assert (out / "README.md").read_text() == "the user's notes\n"


def test_check_after_profiles_needs_no_profiles(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "mine.yaml").write_text(
        (Path(__file__).resolve().parents[1] / "profiles" / "kubevirt-cpu.yaml")
        .read_text()
        .replace("name: kubevirt-cpu", "name: mine")
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
        "talos: {version: v1.13.9}\npools:\n  - {name: a, profile: mine}\n"
    )
    out = tmp_path / "out"
    written = run("generate", str(cluster), "--out", str(out), "--profiles", str(profiles))
    assert written.exit_code == 0, written.stderr
    result = run("check", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr


def test_sibling_directories_under_a_new_parent_do_not_race(tmp_path: Path) -> None:
    def generate(name: str) -> subprocess.Popen[bytes]:
        out = str(tmp_path / "new" / "deeper" / name)
        command = [sys.executable, "-m", "schematic", "generate", str(EXAMPLE), "-f", "urls"]
        return subprocess.Popen([*command, "--out", out], stderr=subprocess.PIPE)

    for attempt in range(4):
        runs = [generate(f"{attempt}-{side}") for side in "ab"]
        for child in runs:
            _, stderr = child.communicate(timeout=60)
            assert child.returncode == 0, stderr.decode()
        shutil.rmtree(tmp_path / "new")


def test_check_pool_compares_that_pool_alone(home: Path) -> None:
    out = home / "out"
    (out / "cpu" / "values.yaml").write_text("edited\n")
    assert run("check", str(EXAMPLE), "--out", str(out), "--pool", "l40s").exit_code == 0
    drifted = run("check", str(EXAMPLE), "--out", str(out), "--pool", "cpu")
    assert drifted.exit_code == 3
    assert "changed: cpu/values.yaml" in drifted.stderr
    assert "--pool cpu" in drifted.stderr.splitlines()[-1]


def test_upgrade_pool_reports_that_pool_alone() -> None:
    result = run("upgrade", str(EXAMPLE), "--to", "v1.14.0", "--pool", "cpu", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert [pool["name"] for pool in json.loads(result.stdout)["pools"]] == ["cpu"]
    unknown = run("upgrade", str(EXAMPLE), "--to", "v1.14.0", "--pool", "nope")
    assert unknown.exit_code == 2 and "'nope'" in unknown.stderr


def test_a_pool_name_with_a_slash_is_one_message(home: Path) -> None:
    # "rtx6000/values" is a plain path inside the directory, yet no pool is named so: the
    # index was edited, and an entry naming a file as a pool must not steer what is kept.
    out = home / "out"
    text = (out / "index.yaml").read_text().replace("- name: rtx6000", "- name: rtx6000/values")
    (out / "index.yaml").write_text(text)
    before = snapshot(home)
    result = run("generate", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 1
    assert errors(result) == [
        f"talos-schematic: {out / 'index.yaml'}: pools[0].name: must be a pool name, not "
        "'rtx6000/values'; the index was edited — restore it from version control, or move the "
        "directory away and generate into a new one"
    ]
    assert snapshot(home) == before


def test_pool_keeps_the_index_entries_of_the_pools_it_does_not_write(home: Path) -> None:
    # l40s changes in the cluster file, but only cpu is asked for: l40s's files stay as they
    # were, so its index entry (its schematic ID, its extensions) must stay with them.
    out = home / "out"
    changed = home / "changed.yaml"
    changed.write_text(
        EXAMPLE.read_text().replace("[siderolabs/iscsi-tools]", "[siderolabs/util-linux-tools]")
    )
    before = parse_index((out / "index.yaml").read_bytes())
    result = run("generate", str(changed), "--out", str(out), "--pool", "cpu")
    assert result.exit_code == 0, result.stderr
    after = parse_index((out / "index.yaml").read_bytes())
    assert after.pool("l40s") == before.pool("l40s")
    full = run("generate", str(changed), "--out", str(out))
    assert full.exit_code == 0, full.stderr
    was, now = before.pool("l40s"), parse_index((out / "index.yaml").read_bytes()).pool("l40s")
    assert was is not None and now is not None
    assert now["schematicID"] != was["schematicID"]


def test_check_notes_profiles_changed_since_generate_and_only_then(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    cpu = (Path(__file__).resolve().parents[1] / "profiles" / "kubevirt-cpu.yaml").read_text()
    (profiles / "mine.yaml").write_text(cpu.replace("name: kubevirt-cpu", "name: mine"))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
        "talos: {version: v1.13.9}\npools:\n  - {name: a, profile: mine}\n"
    )
    out = tmp_path / "out"
    written = run("generate", str(cluster), "--out", str(out), "--profiles", str(profiles))
    assert written.exit_code == 0, written.stderr
    note = f"{profiles}: its profiles changed since generate wrote {out}"
    unchanged = run("check", str(cluster), "--out", str(out))
    assert unchanged.exit_code == 0, unchanged.stderr
    assert note not in unchanged.stderr
    (profiles / "mine.yaml").write_text(
        cpu.replace("name: kubevirt-cpu", "name: mine") + "# edited since\n"
    )
    edited = run("check", str(cluster), "--out", str(out))
    assert note in edited.stderr


@pytest.mark.parametrize("cluster_name", ["mycluster", "other"])
def test_force_never_replaces_a_file_the_index_does_not_list(home: Path, cluster_name: str) -> None:
    # --force replaces edited files the tool wrote and takes over another cluster's directory;
    # a file of the user's where this run would write stays refused and untouched.
    out = home / "out"
    cluster = home / "again.yaml"
    cluster.write_text(
        EXAMPLE.read_text().replace("cluster: mycluster", f"cluster: {cluster_name}")
    )
    (out / "cpu" / "talhelper.yaml").write_text("the user's talhelper keys\n")
    before = snapshot(home)
    result = run("generate", str(cluster), "--out", str(out), "-f", "talhelper", "--force")
    assert result.exit_code == 1
    assert "cpu/talhelper.yaml" in errors(result)[0]
    assert "not written" in errors(result)[0]
    assert snapshot(home) == before
