"""Atomic directory writes and drift comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

from schematic import output
from schematic.errors import OutputError
from schematic.output import compare_outputs, write_outputs

FILES = {"index.yaml": b"pools: []\n", "a/values.yaml": b"cluster: c\n", "b/urls.yaml": b"x: 1\n"}


def tree(directory: Path) -> dict[str, bytes]:
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_writes_a_new_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert write_outputs(out, FILES, marker="index.yaml") is True
    assert tree(out) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging left behind


def test_replaces_the_previous_output_and_drops_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_outputs(out, {**FILES, "gone/values.yaml": b"old\n"}, marker="index.yaml")
    write_outputs(out, FILES, marker="index.yaml")
    assert tree(out) == FILES
    assert not (out / "gone").exists()


def test_unchanged_output_is_not_rewritten(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_outputs(out, FILES, marker="index.yaml")
    before = (out / "a" / "values.yaml").stat().st_mtime_ns
    assert write_outputs(out, FILES, marker="index.yaml") is False
    assert (out / "a" / "values.yaml").stat().st_mtime_ns == before


def test_a_failed_run_leaves_the_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    write_outputs(out, FILES, marker="index.yaml")
    written = 0
    original = output._write_file

    def fail_on_second(path: str, data: bytes) -> None:
        nonlocal written
        written += 1
        if written == 2:
            raise OSError(28, "No space left on device")
        original(path, data)

    monkeypatch.setattr(output, "_write_file", fail_on_second)
    with pytest.raises(OutputError, match="No space left on device"):
        write_outputs(out, {**FILES, "a/values.yaml": b"new\n"}, marker="index.yaml")
    monkeypatch.undo()
    assert tree(out) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_swap_puts_the_old_directory_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    write_outputs(out, FILES, marker="index.yaml")
    original = Path.rename

    def refuse_staging(self: Path, target: Path) -> Path:
        if self.name.endswith(".new"):
            raise OSError(18, "Invalid cross-device link")
        return original(self, target)

    monkeypatch.setattr(Path, "rename", refuse_staging)
    with pytest.raises(OutputError):
        write_outputs(out, {"index.yaml": b"other\n"}, marker="index.yaml")
    monkeypatch.undo()
    assert tree(out) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_refuses_a_directory_that_is_not_its_own(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"not empty and holds no index\.yaml"):
        write_outputs(tmp_path, FILES, marker="index.yaml")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_hidden_files_are_kept_and_not_judged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / ".gitkeep").write_text("")
    write_outputs(out, FILES, marker="index.yaml")
    assert (out / ".gitkeep").exists()
    assert not compare_outputs(out, FILES)


def test_drift_lists_changed_missing_and_extra(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_outputs(out, FILES, marker="index.yaml")
    (out / "a" / "values.yaml").write_bytes(b"edited\n")
    (out / "b" / "urls.yaml").unlink()
    (out / "b" / "notes.txt").write_text("x")
    drift = compare_outputs(out, FILES)
    assert drift.lines() == ["changed: a/values.yaml", "extra: b/notes.txt", "missing: b/urls.yaml"]
    assert compare_outputs(tmp_path / "absent", FILES).missing == tuple(sorted(FILES))


def test_refuses_paths_outside_the_directory(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="not a path inside"):
        write_outputs(tmp_path / "out", {"../escape": b""}, marker="index.yaml")
