"""The wheel `make dist` builds is what a CI image installs: it must hold the package data and run
on its own, not only beside a checkout."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("build") is None,
    reason="the build frontend is not installed (pip install -e '.[dev]')",
)


def _pip() -> list[str]:
    """A pip to install with: this interpreter's, or, where `make` made the venv without one
    (it does when the system pip can install into it), the system Python's, as `make` does."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    system = shutil.which("python3")
    found = system and subprocess.run(
        [system, "-m", "pip", "--version"], capture_output=True, check=False
    )
    if not system or not found or found.returncode != 0:
        pytest.skip("no pip to install the wheel with: neither this venv's nor python3's")
    return [system, "-m", "pip"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A copy without the checkout's build/ and egg-info: setuptools reuses what they hold, which
    # would hide a file the package declarations leave out.
    source = tmp_path_factory.mktemp("source") / "talos-schematic"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".*", "build", "dist", "*.egg-info", "site", "__pycache__", "tests", "benchmarks"
        ),
    )
    out = tmp_path_factory.mktemp("dist")
    # As `make dist` does: the sdist, then the wheel built from the unpacked sdist. No isolation:
    # the dev extra installed the backend, and a test never reaches a package index.
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    assert len(list(out.glob("talos_schematic-*.tar.gz"))) == 1
    (built,) = out.glob("talos_schematic-*-py3-none-any.whl")
    return built


def test_wheel_holds_every_data_file_and_shipped_profile(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [p for p in (REPO / "schematic" / "data").iterdir() if p.suffix in {".tsv", ".json"}]
    assert {p.suffix for p in data} == {".tsv", ".json"}
    assert {f"schematic/data/{p.name}" for p in data} <= names
    profiles = {f"schematic/shipped_profiles/{p.name}" for p in (REPO / "profiles").glob("*.yaml")}
    assert profiles
    assert profiles <= names


def test_installed_wheel_runs_without_the_checkout(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            *_pip(),
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    # The dependencies come from this environment's site-packages as a plain path, listed after
    # the fresh venv's own: its .pth files (the checkout's editable install among them) are not
    # run, so `schematic` can only be the installed wheel's.
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(fresh_site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def installed(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), *args], cwd=elsewhere, env=env, capture_output=True, text=True
        )

    located = installed("-c", "import schematic; print(schematic.__file__)")
    assert located.returncode == 0, located.stderr
    assert Path(located.stdout.strip()).is_relative_to(env_dir)
    helped = installed("-m", "schematic", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "generate" in helped.stdout
    # A command that reads the packaged data and the shipped profiles, not only the help text.
    profiles = installed("-m", "schematic", "profiles")
    assert profiles.returncode == 0, profiles.stderr
    assert "kubevirt-l40s" in profiles.stdout
