"""`facts refresh` against a local factory, and the decisions a facts file changes."""

from __future__ import annotations

import datetime
import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from release_factory import FactoryState, release_extensions, release_factory, standard_releases
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.errors import CatalogError
from schematic.factory.client import FactoryClient
from schematic.factory.refresh import refresh_facts
from schematic.facts.release_facts import load_facts

register_all_commands()


@pytest.fixture
def state() -> FactoryState:
    return FactoryState(releases=dict(standard_releases()), broken=["v1.14.1"])


@pytest.fixture
def factory(state: FactoryState) -> Iterator[str]:
    with release_factory(state) as url:
        yield url


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    env = {"TALOS_SCHEMATIC_FACTORY_TOKEN": "", "TALOS_SCHEMATIC_FACTORY_AUTH": ""}
    before = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args), env=env)
    finally:
        os.chdir(before)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def refreshed(factory: str, tmp_path: Path) -> Path:
    out = tmp_path / "talos-facts.yaml"
    code, _, err = run("facts", "refresh", "--factory", factory, "--out", str(out))
    assert code == 0, err
    return out


def test_refresh_writes_releases_withdrawn_extensions_and_drivers(
    factory: str, tmp_path: Path
) -> None:
    out = refreshed(factory, tmp_path)
    facts = load_facts(out)
    assert facts.factory == factory
    assert [str(v) for v in facts.releases] == ["v1.14.0", "v1.14.2", "v1.15.0"]
    assert [str(v) for v in (facts.withdrawn or ())] == ["v1.14.1"]
    assert [str(v) for v in facts.extensions] == ["v1.14.0", "v1.14.2", "v1.15.0"]
    text = out.read_text()
    assert "v1.15.0:\n    lts: 580.190.03\n    production: 600.41.02\n" in text
    assert "    containerToolkit: v1.20.0\n" in text


def test_a_second_run_with_nothing_new_leaves_the_file_untouched(
    factory: str, state: FactoryState, tmp_path: Path
) -> None:
    out = refreshed(factory, tmp_path)
    before, stamp = out.read_bytes(), out.stat().st_mtime_ns
    os.utime(out, ns=(stamp - 10**9, stamp - 10**9))
    code, _, err = run("facts", "refresh", "--factory", factory, "--out", str(out))
    assert code == 0 and "unchanged" in err
    assert out.read_bytes() == before and out.stat().st_mtime_ns == stamp - 10**9
    # Every release's extensions were asked for each run, concurrently.
    asked = [path for path in state.requests if path.endswith("/extensions/official")]
    assert sorted(asked) == sorted(
        2 * [f"/version/{v}/extensions/official" for v in out_releases(out)]
    )


def out_releases(path: Path) -> list[str]:
    return [str(version) for version in load_facts(path).extensions]


def test_a_new_release_rewrites_the_file_with_the_new_date(
    factory: str, state: FactoryState, tmp_path: Path
) -> None:
    out = tmp_path / "facts.yaml"
    with FactoryClient(factory) as client:
        first = refresh_facts(client, out, today=lambda: datetime.date(2026, 12, 1))
        assert first.written and load_facts(out).date == "2026-12-01"
        state.releases["v1.15.1"] = release_extensions(
            "v1.15.1", "580.190.03", "600.50.01", "v1.20.0"
        )
        second = refresh_facts(client, out, today=lambda: datetime.date(2026, 12, 7))
    assert second.written and [str(v) for v in second.added] == ["v1.15.1"]
    assert second.drivers == ("Talos v1.15.1: NVIDIA lts 580.190.03, production 600.50.01",)
    assert load_facts(out).date == "2026-12-07"


def test_a_factory_before_withdrawn_lists_is_not_read_as_withdrawing_all(
    state: FactoryState, tmp_path: Path
) -> None:
    state.old, state.broken = True, []
    with release_factory(state) as url, FactoryClient(url) as client:
        done = refresh_facts(client, tmp_path / "f.yaml")
    assert done.withdrawn is None
    assert "withdrawn" not in (tmp_path / "f.yaml").read_text()
    assert (
        load_facts(tmp_path / "f.yaml").is_withdrawn(load_facts(tmp_path / "f.yaml").releases[0])
        is False
    )


def test_gpu_names_the_factorys_driver_for_a_release_the_tables_lack(
    factory: str, tmp_path: Path
) -> None:
    out = refreshed(factory, tmp_path)
    code, stdout, err = run(
        "gpu", "10de:2bb5", "--talos", "v1.15.0", "--facts", str(out), "-f", "json"
    )
    assert code == 0, err
    decision = json.loads(stdout)
    assert decision["driver"] == "600.41.02" and decision["tier"] == "production"
    assert "assuming" not in stdout + err
    assert decision["facts"].startswith(f"facts: {out} ({factory}, ")


def test_gpu_finds_the_facts_file_in_the_current_directory(factory: str, tmp_path: Path) -> None:
    refreshed(factory, tmp_path)
    code, stdout, _ = run("gpu", "10de:2bb5", "--talos", "v1.15.0", cwd=tmp_path)
    assert code == 0 and "driver 600.41.02" in stdout
    assert "facts: talos-facts.yaml" in stdout


def test_without_facts_an_unknown_release_is_an_error_naming_the_refresh(tmp_path: Path) -> None:
    code, stdout, err = run("gpu", "10de:2bb5", "--talos", "v1.15.0", cwd=tmp_path)
    assert code == 1 and stdout == ""
    assert "`talos-schematic facts refresh`" in err and "v1.15.0" in err
    assert "assuming" not in err


def test_assume_drivers_of_says_so(tmp_path: Path) -> None:
    code, stdout, err = run(
        "gpu", "10de:2bb5", "--talos", "v1.15.0", "--assume-drivers-of", "v1.14.0", cwd=tmp_path
    )
    assert code == 0, err
    assert "driver 595.91.07" in stdout
    assert (
        "assuming the NVIDIA drivers of v1.14.0 for Talos v1.15.0 (--assume-drivers-of)" in stdout
    )


def test_a_release_the_facts_lack_falls_back_to_the_shipped_table(
    factory: str, tmp_path: Path
) -> None:
    out = refreshed(factory, tmp_path)
    code, stdout, err = run("gpu", "10de:2bb5", "--talos", "v1.13.9", "--facts", str(out))
    assert code == 0, err
    assert "driver 595.91.07" in stdout and "assuming" not in stdout


CLUSTER = (
    "cluster: c\ntalos: {{version: {version}}}\npools:\n  - {{name: gpu, profile: kubevirt-l40s}}\n"
)


def test_upgrade_to_a_withdrawn_release_is_refused_naming_the_factory(
    factory: str, tmp_path: Path
) -> None:
    refreshed(factory, tmp_path)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.format(version="v1.14.0"))
    code, _, err = run("upgrade", str(cluster), "--to", "v1.14.1")
    assert code == 1
    assert f"Talos v1.14.1 was withdrawn by the Image Factory {factory}" in err
    assert "use v1.14.2" in err
    code, _, err = run("upgrade", str(cluster), "--to", "v1.14.2")
    assert code == 0, err


@pytest.mark.parametrize("command", ["generate", "check"])
def test_generate_and_check_refuse_a_withdrawn_release(
    factory: str, tmp_path: Path, command: str
) -> None:
    refreshed(factory, tmp_path)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.format(version="v1.14.1"))
    code, _, err = run(command, str(cluster), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "v1.14.1 was withdrawn by the Image Factory" in err
    assert not (tmp_path / "out").exists()


def test_generate_plans_a_new_release_with_the_factorys_extensions_and_drivers(
    factory: str, tmp_path: Path
) -> None:
    refreshed(factory, tmp_path)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.format(version="v1.15.0"))
    code, stdout, err = run("generate", str(cluster), "--chart", "osimage", "-f", "json")
    assert code == 0, err
    pool = json.loads(stdout)["pools"][0]
    assert pool["talos"] == "v1.15.0" and pool["plannedWith"] == "v1.15.0"
    assert "assuming" not in err and f"facts: {tmp_path / 'talos-facts.yaml'} (" in err
    # Without the facts file the GPU pool's drivers are unknown.
    (tmp_path / "talos-facts.yaml").unlink()
    code, _, err = run("generate", str(cluster), "--chart", "osimage", "-f", "json")
    assert code == 1 and "talos-schematic facts refresh" in err


def test_an_edited_drivers_section_is_refused(factory: str, tmp_path: Path) -> None:
    out = refreshed(factory, tmp_path)
    out.write_text(out.read_text().replace("production: 600.41.02", "production: 600.99.99"))
    with pytest.raises(CatalogError, match=r"drivers: v1\.15\.0: .* is not what its extensions"):
        load_facts(out)
    code, _, err = run("gpu", "10de:2bb5", "--talos", "v1.15.0", "--facts", str(out))
    assert code == 1 and str(out) in err


def test_a_missing_facts_file_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    code, _, err = run("gpu", "10de:2bb5", "--talos", "v1.13.9", "--facts", str(missing))
    assert code == 1 and f"{missing}: cannot read the facts file" in err


def test_talos_1_15_is_written_in_the_1_14_forms(factory: str, tmp_path: Path) -> None:
    # siderolabs/talos main at ad882317 gates nothing on 1.15 (contract.go, quirks.go).
    from schematic.facts.release_facts import using_facts
    from schematic.plan.release import release_of

    out = refreshed(factory, tmp_path)
    with using_facts(load_facts(out)):
        release = release_of("v1.15.0")
    assert release.kernel_module_documents and release.unattended_install
    assert release.default_installer_repository("metal") == "factory.talos.dev/metal-installer"
    assert release.planned_with == "v1.15.0" and release.tables_note == ""
    assert "siderolabs/nvidia-open-gpu-kernel-modules-production" in release.extensions


def test_extensions_lists_a_new_release_from_the_facts_file(factory: str, tmp_path: Path) -> None:
    out = refreshed(factory, tmp_path)
    code, stdout, err = run("extensions", "--talos", "v1.15.0", "--facts", str(out))
    assert code == 0, err
    assert "siderolabs/nvidia-open-gpu-kernel-modules-production\n" in stdout
    assert f"facts: {out} (" in err and "note" not in err
    (tmp_path / "elsewhere").mkdir()
    code, _, err = run("extensions", "--talos", "v1.15.0", cwd=tmp_path / "elsewhere")
    assert code == 1 and "talos-schematic facts refresh" in err


def _refresh_with_stderr(factory: str, out: Path, stderr: int) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALOS_SCHEMATIC_FACTORY_")}
    command = [sys.executable, "-m", "schematic", "facts", "refresh"]
    return subprocess.run(
        [*command, "--factory", factory, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=env,
        timeout=120,
        check=False,
    ).returncode


def test_the_progress_line_shows_on_a_terminal_and_nowhere_else(
    factory: str, tmp_path: Path
) -> None:
    leader, follower = pty.openpty()
    try:
        code = _refresh_with_stderr(factory, tmp_path / "tty.yaml", follower)
        os.close(follower)
        shown = b""
        while chunk := _read_or_end(leader):
            shown += chunk
    finally:
        os.close(leader)
    assert code == 0, shown
    # One line that overwrites itself as releases arrive, ending at the whole count.
    assert b"\rreading releases: 3/3\r\n" in shown
    piped = tmp_path / "piped.err"
    with piped.open("wb") as err:
        assert _refresh_with_stderr(factory, tmp_path / "pipe.yaml", err.fileno()) == 0
    assert b"reading releases" not in piped.read_bytes()


def _read_or_end(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal's other side closed: everything was read
        return b""
