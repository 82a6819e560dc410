"""Bare-metal and single-board-computer pools are not Cozystack tenant pools: they get their
Talos patch, schematic and URLs, never a KubernetesNodes object, and no kustomization entry."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()

CLUSTER = """\
cluster: lab
namespace: tenant-lab
cozystack: {version: osimage}
talos: {version: v1.13.9}
pools:
  - name: vm
    profile: kubevirt-l40s
  - name: hgx
    profile: metal-hgx-h100-8x
  - name: pi
    profile: metal-rpi5
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def files(directory: Path) -> set[str]:
    return {
        path.relative_to(directory).as_posix() for path in directory.rglob("*") if path.is_file()
    }


def test_out_writes_no_kubernetes_nodes_for_metal_and_board_pools(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    written = files(out)
    assert {"vm/kubernetes-nodes.yaml", "vm/values.yaml"} <= written
    for pool in ("hgx", "pi"):
        assert {
            f"{pool}/machine-config-patch.yaml",
            f"{pool}/schematic.yaml",
            f"{pool}/urls.yaml",
        } <= written
        assert f"{pool}/kubernetes-nodes.yaml" not in written
        assert f"{pool}/values.yaml" not in written
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["vm/kubernetes-nodes.yaml"]
    pi_urls = yaml.safe_load((out / "pi" / "urls.yaml").read_text())
    assert pi_urls["image"].endswith("/metal-arm64.raw.xz")
    # check agrees with what was written.
    assert run("check", str(cluster), "--out", str(out)).exit_code == 0


def test_stdout_kubernetes_nodes_and_values_leave_metal_pools_out(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    objects = list(yaml.safe_load_all(run("generate", str(cluster)).stdout))
    assert [document["metadata"]["name"] for document in objects] == ["lab-vm"]
    values = run("generate", str(cluster), "-f", "values", "--pool", "vm").stdout
    assert values.startswith("# pool vm:")
    metal_values = run("generate", str(cluster), "-f", "values", "--pool", "hgx")
    assert metal_values.stdout.startswith("# no KubeVirt pool")
    patch = run("generate", str(cluster), "-f", "machine-config", "--pool", "hgx").stdout
    assert patch.startswith("# pool hgx:")
    summary = json.loads(run("generate", str(cluster), "-f", "json").stdout)
    values_of = {pool["name"]: pool["values"] for pool in summary["pools"]}
    assert values_of["hgx"] is None and values_of["pi"] is None
    assert values_of["vm"]["cluster"] == "lab"


def test_a_cluster_of_metal_pools_only_has_no_objects_to_print(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.split("  - name: vm")[0] + "  - name: pi\n    profile: metal-rpi5\n")
    result = run("generate", str(cluster))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# no KubeVirt pool")
    out = tmp_path / "out"
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    assert "kustomization.yaml" not in files(out)


def _only(pools: str) -> str:
    head = CLUSTER.split("pools:")[0]
    return f"{head}pools:\n{pools}"


def test_an_empty_gpu_operator_stream_names_the_file_that_serves_the_pools(
    tmp_path: Path,
) -> None:
    # The addon is Cozystack's, the helm values are for the other pools: asked for the one that
    # does not apply, the answer names the other, never "no NVIDIA GPU pool" beside GPU pools.
    cases = {
        "metal-gpu.yaml": ("  - name: hgx\n    profile: metal-hgx-h100-8x\n", "addons"),
        "vm-gpu.yaml": ("  - name: vm\n    profile: kubevirt-l40s\n", "gpu-operator"),
    }
    for name, (pools, asked) in cases.items():
        cluster = tmp_path / name
        cluster.write_text(_only(pools))
        result = run("generate", str(cluster), "--format", asked)
        assert result.exit_code == 0, result.stderr
        other = "gpu-operator" if asked == "addons" else "addons"
        assert result.stdout.startswith("# ") and result.stdout.count("\n") == 1, result.stdout
        assert f"--format {other}" in result.stdout
        assert "no NVIDIA GPU pool" not in result.stdout
    # Without any NVIDIA GPU pool, both say so.
    cluster = tmp_path / "pi.yaml"
    cluster.write_text(_only("  - name: pi\n    profile: metal-rpi5\n"))
    for asked in ("addons", "gpu-operator"):
        result = run("generate", str(cluster), "--format", asked)
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith("# no NVIDIA GPU pool"), result.stdout
