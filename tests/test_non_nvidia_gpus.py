"""GPUs the NVIDIA rules do not cover: refused where they would be dropped (a KubeVirt VM),
kept with a note where the schematic's driver is all they need (bare metal)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()

CLUSTER = """\
cluster: c
cozystack: {{version: osimage}}
talos: {{version: v1.13.9}}
pools:
  - name: accel
    hardware:
      platform: {platform}
{cpu}      gpus: [{{id: "{gpu}", count: 2}}]
"""


def generate(tmp_path: Path, platform: str, gpu: str, *args: str) -> Result:
    cpu = "      cpuVendor: amd\n" if platform == "metal" else ""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.format(platform=platform, cpu=cpu, gpu=gpu))
    return runner.invoke(app, ["generate", str(cluster), *args])


def test_amd_gpu_in_a_kubevirt_pool_is_refused_not_dropped(tmp_path: Path) -> None:
    result = generate(tmp_path, "kubevirt", "1002:74a1", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    message = result.stderr.strip()
    expected = f'talos-schematic: {tmp_path / "cluster.yaml"}:5: pool "accel": gpus:'
    assert message.startswith(expected)
    assert "1002:74a1 is not NVIDIA" in message
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_amd_gpu_on_bare_metal_gets_amdgpu_and_a_note(tmp_path: Path) -> None:
    result = generate(tmp_path, "metal", "1002:74a1", "--format", "json")
    assert result.exit_code == 0, result.stderr
    (pool,) = json.loads(result.stdout)["pools"]
    assert pool["extensions"] == ["siderolabs/amd-ucode", "siderolabs/amdgpu"]
    assert pool["nvidia"] is None
    assert pool["kernelModules"] == []
    assert 'pool "accel": AMD GPU 1002:74a1: siderolabs/amdgpu is in the schematic' in (
        result.stderr
    )


def test_other_vendors_gpu_on_bare_metal_says_what_to_add(tmp_path: Path) -> None:
    result = generate(tmp_path, "metal", "8086:56c0", "--format", "json")
    assert result.exit_code == 0, result.stderr
    (pool,) = json.loads(result.stdout)["pools"]
    assert pool["extensions"] == ["siderolabs/amd-ucode"]
    assert "8086:56c0 is neither NVIDIA nor AMD: no extension was added" in result.stderr
