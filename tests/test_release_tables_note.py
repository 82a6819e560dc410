"""A release the packaged tables have no row for is said wherever its nearest row is used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

register_all_commands()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def cluster(tmp_path: Path, version: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        f"cluster: c\ntalos: {{version: {version}}}\n"
        "pools:\n  - {name: gpu, profile: kubevirt-l40s}\n"
    )
    return path


@pytest.mark.parametrize(("version", "nearest"), [("v1.14.1", "v1.14.0"), ("v1.13.10", "v1.13.9")])
def test_generate_refuses_a_gpu_pool_whose_drivers_are_unknown(
    tmp_path: Path, version: str, nearest: str
) -> None:
    path = cluster(tmp_path, version)
    code, out, err = run("generate", str(path), "--chart", "osimage", "--format", "json")
    assert code == 1 and out == ""
    assert f"the NVIDIA drivers of Talos {version} are unknown" in err
    assert "talos-schematic facts refresh" in err


@pytest.mark.parametrize(("version", "nearest"), [("v1.14.1", "v1.14.0"), ("v1.13.10", "v1.13.9")])
def test_generate_says_the_nearest_release_planned_it_and_the_drivers_assumed(
    tmp_path: Path, version: str, nearest: str
) -> None:
    path = cluster(tmp_path, version)
    assume = ("--assume-drivers-of", nearest)
    code, out, err = run("generate", str(path), "--chart", "osimage", "--format", "json", *assume)
    assert code == 0, err
    assert f"Talos {version} is not in the packaged extension catalogue" in err
    assert f"assuming the NVIDIA drivers of {nearest} for Talos {version}" in err
    pool = json.loads(out)["pools"][0]
    assert pool["talos"] == version and pool["plannedWith"] == nearest
    out_dir = str(tmp_path / "out")
    code, _, err = run(
        "generate", str(path), "--chart", "osimage", "-f", "json", "--out", out_dir, *assume
    )
    assert code == 0 and f"assuming the NVIDIA drivers of {nearest}" in err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["pools"][0]["plannedWith"] == nearest


@pytest.mark.parametrize(("version", "nearest"), [("v1.14.1", "v1.14.0"), ("v1.13.10", "v1.13.9")])
def test_extensions_says_the_nearest_release(version: str, nearest: str) -> None:
    code, out, err = run("extensions", "--talos", version)
    assert code == 0 and "nvidia-container-toolkit-production" in out
    assert f"planned with the nearest release's, {nearest}'s" in err


def test_a_release_with_its_own_row_says_nothing(tmp_path: Path) -> None:
    code, out, err = run(
        "generate", str(cluster(tmp_path, "v1.13.9")), "--chart", "osimage", "-f", "json"
    )
    assert code == 0 and "packaged" not in err and "driver table" not in err
    assert "assuming" not in err
    assert json.loads(out)["pools"][0]["plannedWith"] == "v1.13.9"
    code, _, err = run("extensions", "--talos", "v1.13.9")
    assert code == 0 and err.startswith("talos-schematic: facts: the shipped tables")
    assert "note" not in err
