"""Writing the tool's files into a directory it shares with others, and drift comparison.

The index (schematic.output.outdir) records each file the tool wrote with its digest; what the tool
replaces or removes is only what it can prove it wrote, never through a symbolic link.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from schematic.errors import OutputError
from schematic.output import disk as output
from schematic.output.disk import JOURNAL, digest
from schematic.output.outdir import (
    INDEX,
    OutputIndex,
    Tree,
    Written,
    compare_directory,
    parse_index,
    write_directory,
)

FILES = {"a/values.yaml": b"cluster: c\n", "b/urls.yaml": b"x: 1\n"}


def tree_of(files: dict[str, bytes], cluster: str = "c") -> Tree:
    """A rendered tree of these files: one pool per top folder."""
    pools = sorted({name.split("/")[0] for name in files if "/" in name})
    index = OutputIndex(
        cluster=cluster,
        talos="v1.13.9",
        image_factory_url="https://factory.talos.dev",
        layout="osimage",
        kinds=("values", "urls"),
        pools=tuple({"name": pool, "schematicID": "0" * 64} for pool in pools),
        files={},
    )
    return Tree(files, index, covers=lambda path: True)


def write(directory: Path, files: dict[str, bytes], **options: object) -> Written:
    return write_directory(directory, tree_of(files), **options)  # type: ignore[arg-type]


def compare(directory: Path, files: dict[str, bytes]) -> output.Drift:
    return compare_directory(directory, tree_of(files))[0]


def tree(directory: Path) -> dict[str, bytes]:
    """Every regular file under ``directory`` but the index."""
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and not path.is_symlink() and path.name != INDEX
    }


def leftovers(directory: Path) -> list[str]:
    """Temporary files and journals: what a finished run must never leave behind."""
    return [p.name for p in directory.rglob(".*") if p.name.endswith(".tmp") or p.name == JOURNAL]


def test_writes_a_new_directory_with_the_usual_mode(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert write(out, FILES).changed is True
    assert tree(out) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert leftovers(out) == []
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE((out / "a" / "values.yaml").stat().st_mode) == 0o666 & ~mask


def test_the_index_records_each_files_digest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, FILES)
    index = parse_index((out / INDEX).read_bytes())
    assert dict(index.files) == {name: digest(content) for name, content in FILES.items()}


def test_replaces_the_previous_output_and_removes_a_gone_pool(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, {**FILES, "gone/values.yaml": b"old\n"})
    written = write(out, {**FILES, "a/values.yaml": b"new\n"})
    assert tree(out) == {**FILES, "a/values.yaml": b"new\n"}
    assert not (out / "gone").exists()
    assert written.removed_pools == ["gone"]


def test_unchanged_output_is_not_rewritten(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, FILES)
    before = (out / "a" / "values.yaml").stat().st_mtime_ns
    assert write(out, FILES).changed is False
    assert (out / "a" / "values.yaml").stat().st_mtime_ns == before


def test_files_the_tool_did_not_write_survive_and_are_not_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("mine\n")
    (out / ".gitkeep").write_text("")
    write(out, FILES)
    (out / "a" / "notes.txt").write_text("mine too\n")
    write(out, {"b/urls.yaml": b"x: 2\n"})
    assert (out / "README.md").read_text() == "mine\n"
    assert (out / ".gitkeep").exists()
    assert (out / "a" / "notes.txt").read_text() == "mine too\n"
    assert not (out / "a" / "values.yaml").exists()  # the tool's, recorded, no longer written
    assert not compare(out, {"b/urls.yaml": b"x: 2\n"})


def test_a_helm_repository_index_is_not_the_tools(tmp_path: Path) -> None:
    (tmp_path / "index.yaml").write_text("apiVersion: v1\nentries: {}\n")
    (tmp_path / "chart-0.1.0.tgz").write_bytes(b"\x1f\x8b")
    before = tree(tmp_path)
    with pytest.raises(OutputError, match=r"index\.yaml: not written by talos-schematic"):
        write(tmp_path, FILES)
    assert tree(tmp_path) == before
    with pytest.raises(OutputError, match="not written by talos-schematic"):
        compare(tmp_path, FILES)


def test_a_foreign_file_where_the_tool_would_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "values.yaml").write_text("the user's\n")
    with pytest.raises(OutputError, match=r"a/values\.yaml: exists and was not written"):
        write(tmp_path, FILES)
    assert tree(tmp_path) == {"a/values.yaml": b"the user's\n"}


def test_an_edited_file_is_replaced_only_with_force_and_never_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, {**FILES, "gone/values.yaml": b"old\n"})
    (out / "a" / "values.yaml").write_text("edited by hand\n")
    (out / "gone" / "values.yaml").write_text("edited by hand\n")
    with pytest.raises(OutputError, match="changed since talos-schematic wrote it"):
        write(out, {**FILES, "gone/values.yaml": b"old\n"})
    assert (out / "a" / "values.yaml").read_text() == "edited by hand\n"
    written = write(out, FILES, force=True)
    assert (out / "a" / "values.yaml").read_bytes() == FILES["a/values.yaml"]
    # Removing needs the digest even with --force: the edited file is kept, and said so.
    assert (out / "gone" / "values.yaml").read_text() == "edited by hand\n"
    assert [name for name, _ in written.kept] == ["gone/values.yaml"]


def test_another_cluster_is_refused_without_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, FILES)
    with pytest.raises(OutputError, match=r"holds cluster 'c', not 'other'.*--force"):
        write_directory(out, tree_of({"x/values.yaml": b"x\n"}, cluster="other"))
    assert tree(out) == FILES
    write_directory(out, tree_of({"x/values.yaml": b"x\n"}, cluster="other"), force=True)
    assert tree(out) == {"x/values.yaml": b"x\n"}


def test_a_failed_run_leaves_the_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    write(out, {**FILES, "gone/values.yaml": b"old\n"})
    before = tree(out)
    index = (out / INDEX).read_bytes()
    written = 0
    original = os.write

    def fail_on_third(descriptor: int, data: bytes) -> int:
        nonlocal written
        written += 1
        if written == 3:
            raise OSError(28, "No space left on device")
        return original(descriptor, data)

    monkeypatch.setattr(os, "write", fail_on_third)
    with pytest.raises(OutputError, match="No space left on device"):
        write(out, {**FILES, "a/values.yaml": b"new\n", "b/urls.yaml": b"x: 2\n"})
    monkeypatch.undo()
    assert tree(out) == before
    assert (out / INDEX).read_bytes() == index
    assert leftovers(out) == []


def test_a_failed_rename_puts_every_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    write(out, FILES)
    before = tree(out)
    original = os.replace
    calls = 0

    def fail_on_second(source: str, target: str, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(5, "Input/output error")
        original(source, target, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", fail_on_second)
    with pytest.raises(OutputError, match="Input/output error"):
        write(out, {**FILES, "a/values.yaml": b"new\n", "b/urls.yaml": b"x: 2\n"})
    monkeypatch.undo()
    assert tree(out) == before
    assert leftovers(out) == []


def test_a_failed_new_directory_leaves_nothing_but_its_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(descriptor: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OutputError):
        write(tmp_path / "deep" / "out", FILES)
    monkeypatch.undo()
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == ["deep"]


def test_refuses_the_file_system_root_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_walk(*args: object, **kwargs: object) -> None:
        raise AssertionError("walked the disk")

    monkeypatch.setattr(os, "walk", no_walk)
    monkeypatch.setattr(os, "scandir", no_walk)
    with pytest.raises(OutputError, match="refusing to write into /"):
        write(Path("/"), FILES)
    with pytest.raises(OutputError, match="refusing to write into /"):
        compare(Path("/"), FILES)


def test_the_current_directory_is_written_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(Path("."), FILES)
    identity = os.stat(".").st_ino
    write(Path("."), {**FILES, "a/values.yaml": b"new\n"})
    assert os.stat(".").st_ino == identity == tmp_path.stat().st_ino
    assert Path("a/values.yaml").read_bytes() == b"new\n"


def test_a_dangling_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputError, match="does not exist; not followed"):
        write(tmp_path / "out", FILES)
    with pytest.raises(OutputError, match="does not exist; not followed"):
        compare(tmp_path / "out", FILES)
    assert not (tmp_path / "elsewhere").exists()


def test_symbolic_links_inside_are_neither_followed_nor_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, FILES)
    target = tmp_path / "precious"
    target.write_text("keep\n")
    (out / "a" / "values.yaml").unlink()
    (out / "a" / "values.yaml").symlink_to(target)
    with pytest.raises(OutputError, match="not followed"):
        write(out, {**FILES, "a/values.yaml": b"new\n"})
    assert target.read_text() == "keep\n"
    (out / "a" / "values.yaml").unlink()
    os.rename(out / "b", tmp_path / "b-real")
    (out / "b").symlink_to(tmp_path / "b-real")
    with pytest.raises(OutputError, match="not followed"):
        write(out, FILES)
    assert (tmp_path / "b-real" / "urls.yaml").read_bytes() == b"x: 1\n"


def test_a_link_to_a_directory_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")
    write(tmp_path / "out", FILES)
    assert (tmp_path / "out").is_symlink()
    assert tree(tmp_path / "real") == FILES


def test_drift_lists_changed_missing_and_extra(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, {**FILES, "c/values.yaml": b"c\n"})
    (out / "a" / "values.yaml").write_bytes(b"edited\n")
    (out / "b" / "urls.yaml").unlink()
    (out / "b" / "notes.txt").write_text("x")  # the user's: not drift
    drift = compare(out, FILES)
    assert drift.changed == ("a/values.yaml", INDEX)
    assert drift.missing == ("b/urls.yaml",)
    assert drift.extra == ("c/values.yaml",)


def test_refuses_paths_outside_the_directory(tmp_path: Path) -> None:
    for name in ("../x", "/etc/x", "a/./b", "a//b", ""):
        with pytest.raises(OutputError, match="not a path inside the directory"):
            write(tmp_path / "out", {name: b"x"})


def test_leftovers_of_a_killed_run_are_removed_and_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, FILES)
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from schematic.output.outdir import OutputIndex, Tree, write_directory
        count = 0
        real = os.replace
        def killed(source, target, **kwargs):
            global count
            count += 1
            if count == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            real(source, target, **kwargs)
        os.replace = killed
        files = {{"a/values.yaml": b"new\\n", "b/urls.yaml": b"x: 2\\n", "c/values.yaml": b"c\\n"}}
        index = OutputIndex(
            cluster="c", talos="v1.13.9", image_factory_url="https://factory.talos.dev",
            layout="osimage", kinds=("values", "urls"),
            pools=tuple({{"name": p, "schematicID": "0" * 64}} for p in "abc"), files={{}},
        )
        write_directory(Path({str(out)!r}), Tree(files, index, lambda path: True))
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert (out / JOURNAL).exists()
    assert any(p.name.endswith(".tmp") for p in out.rglob("*"))
    (out / ".values.yaml.mine.tmp").write_text("a user's file that looks like one\n")
    # The next run, with another input: what the killed run wrote is provably the tool's.
    assert write(out, FILES).changed is True
    assert tree(out) == {**FILES, ".values.yaml.mine.tmp": b"a user's file that looks like one\n"}
    assert not (out / "c").exists()
    assert leftovers(out) == [".values.yaml.mine.tmp"]


def test_concurrent_runs_are_serialised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second run waits for the first, then sees its output: it never reports "up to date"
    on files the first one then replaces."""
    out = tmp_path / "out"
    write(out, FILES)
    first = {**FILES, "a/values.yaml": b"first\n"}
    inside = threading.Event()
    release = threading.Event()
    original = output.apply

    def slow_apply(*args: object, **kwargs: object) -> output.Applied:
        inside.set()
        release.wait(5)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(output, "apply", slow_apply)
    results: list[bool] = []
    thread = threading.Thread(target=lambda: results.append(write(out, first).changed))
    thread.start()
    assert inside.wait(5)
    monkeypatch.setattr(output, "apply", original)
    started = time.monotonic()
    timer = threading.Timer(0.3, release.set)
    timer.start()
    assert write(out, FILES).changed is True
    assert time.monotonic() - started >= 0.25
    thread.join()
    assert results == [True]
    assert tree(out) == FILES


def test_a_held_lock_times_out_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    out = tmp_path / "out"
    holder = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    monkeypatch.setattr(output, "LOCK_TIMEOUT", 0.2)
    try:
        with pytest.raises(OutputError, match="another talos-schematic run"):
            write(out, FILES)
    finally:
        os.close(holder)
    assert not out.exists()


def test_write_file_atomically_replaces_or_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.json"
    output.write_file_atomically(path, b"one\n", mode=0o600)
    assert path.read_bytes() == b"one\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    output.write_file_atomically(path, b"two\n")
    assert path.read_bytes() == b"two\n"

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(OSError):
        output.write_file_atomically(path, b"three\n")
    assert path.read_bytes() == b"two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.json"]


def test_one_module_writes_files_atomically() -> None:
    """Every atomic write goes through schematic.output.disk (one helper, not one per module)."""
    package = Path(__file__).resolve().parents[1] / "schematic"
    writers = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if any(call in path.read_text("utf-8") for call in ("os.replace(", "mkstemp(", "mkdtemp("))
    )
    assert writers == ["output/disk.py"]


def test_a_written_file_check_cannot_read_is_an_error_naming_it(tmp_path: Path) -> None:
    # A disk error while `check` reads a file it wrote: the file is named, no traceback.
    # The fault is injected at the read itself; no permission stops root, who runs CI.
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "values.yaml").write_bytes(b"a: 1\n")

    def failing_read(descriptor: int, size: int) -> bytes:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "read", failing_read)
        with pytest.raises(OutputError) as raised:
            output.compare(tmp_path, {"pool/values.yaml": b"a: 1\n"}, frozenset())
    assert (
        str(raised.value)
        == f"{tmp_path / 'pool/values.yaml'}: cannot read: {os.strerror(errno.EIO)}"
    )
