"""A pool's own talos.version: pools upgrade one at a time, each pool's schematic, driver,
boot image, installer and values following its own release."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()

CLUSTER = """\
cluster: c
cozystack: {version: osimage}
talos: {version: v1.13.9}
pools:
  - name: gpu
    profile: rtx-pro-6000-blackwell-server
    talos: {version: v1.12.6}
  - name: cpu
    profile: kubevirt-cpu
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write(tmp_path: Path, text: str = CLUSTER) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def test_a_pool_on_its_own_release(tmp_path: Path) -> None:
    result = run("generate", str(write(tmp_path)), "-f", "json")
    assert result.exit_code == 0, result.stderr
    gpu, cpu = json.loads(result.stdout)["pools"]
    assert (gpu["talos"], cpu["talos"]) == ("v1.12.6", "v1.13.9")
    # Talos 1.12 pins LTS 580 for an RTX PRO 6000 (production 570 does not know it).
    assert (gpu["nvidia"]["tier"], gpu["nvidia"]["driverBranch"]) == ("lts", 580)
    assert gpu["installer"].endswith(f"/{gpu['schematicID']}:v1.12.6")
    assert f"/{gpu['schematicID']}/v1.12.6/" in gpu["image"]
    assert gpu["values"]["osImage"]["factory"]["version"] == "v1.12.6"
    assert cpu["values"]["osImage"]["factory"]["version"] == "v1.13.9"
    # Talos 1.12 still needs the BPF sysctl; 1.13 does not.
    gpu_patch = run(
        "generate", str(write(tmp_path)), "-f", "machine-config", "--pool", "gpu"
    ).stdout
    assert "net.core.bpf_jit_harden" in gpu_patch
    assert "image: factory.talos.dev/installer/" in gpu_patch and ":v1.12.6\n" in gpu_patch


def test_the_same_pool_shape_on_two_releases_plans_twice(tmp_path: Path) -> None:
    text = CLUSTER.replace("profile: kubevirt-cpu", "profile: rtx-pro-6000-blackwell-server")
    gpu, other = json.loads(run("generate", str(write(tmp_path, text)), "-f", "json").stdout)[
        "pools"
    ]
    assert gpu["nvidia"]["driver"] != other["nvidia"]["driver"]
    assert gpu["schematicID"] != other["schematicID"]


def test_a_pool_release_the_tables_do_not_know_names_the_pool(tmp_path: Path) -> None:
    result = run("generate", str(write(tmp_path, CLUSTER.replace("v1.12.6", "v0.9.0"))))
    assert result.exit_code == 1
    assert 'pool "gpu": talos.version:' in result.stderr
    bad = run("generate", str(write(tmp_path, CLUSTER.replace("v1.12.6", "latest"))))
    assert bad.exit_code == 1
    assert "talos.version" in bad.stderr and "Traceback" not in bad.stderr


def test_a_pool_still_cannot_set_where_images_come_from(tmp_path: Path) -> None:
    text = CLUSTER.replace("{version: v1.12.6}", "{imageFactoryURL: https://f.example}")
    result = run("generate", str(write(tmp_path, text)))
    assert result.exit_code == 1
    assert "talos.imageFactoryURL" in result.stderr


def test_upgrade_moves_the_file_release_and_leaves_a_pinned_pool(tmp_path: Path) -> None:
    result = run("upgrade", str(write(tmp_path)), "--to", "v1.14.0", "--json")
    assert result.exit_code == 0, result.stderr
    pools = {pool["name"]: pool for pool in json.loads(result.stdout)["pools"]}
    assert pools["gpu"]["status"] == "unchanged"
    assert pools["gpu"]["installer"]["after"].endswith(":v1.12.6")
    assert pools["cpu"]["status"] == "changed"
    assert pools["cpu"]["installer"]["after"].endswith(":v1.14.0")


def test_bumping_one_pool_is_an_upgrade_of_that_pool(tmp_path: Path) -> None:
    base = write(tmp_path)
    bumped = tmp_path / "bumped.yaml"
    bumped.write_text(CLUSTER.replace("v1.12.6", "v1.13.9"))
    result = run("upgrade", str(bumped), "--base", str(base), "--json")
    assert result.exit_code == 0, result.stderr
    pools = {pool["name"]: pool for pool in json.loads(result.stdout)["pools"]}
    assert pools["cpu"]["status"] == "unchanged"
    gpu = pools["gpu"]
    assert gpu["status"] == "changed"
    why, roll = gpu["machinesReplaced"]["why"]
    assert "Talos v1.12.6 → v1.13.9" in why and "hash of its content" in roll
    assert gpu["machineConfig"] == [
        "sysctl net.core.bpf_jit_harden=1 removed (not needed on Talos v1.13.9)"
    ]
    assert gpu["driver"]["before"]["driver"].startswith("580.")
