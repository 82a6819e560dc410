"""`talos-schematic gpu` and `talos-schematic schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def gpu_json(*args: str) -> dict[str, Any]:
    result = run("gpu", *args, "--json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_json_document_for_rtx_pro_6000_on_talos_1_12() -> None:
    document = gpu_json("10de:2bb5", "--talos", "v1.12.0")
    assert document.pop("facts").startswith("facts: the shipped tables (snapshot 2026-08)")
    assert {key: document[key] for key in document if key != "reasons"} == {
        "gpus": [
            {
                "id": "10de:2bb5",
                "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "chip": "GB202",
                "architecture": "Blackwell",
            }
        ],
        "flavour": "open",
        "tier": "lts",
        "driver": "580.105.08",
        "extensions": [
            "siderolabs/nvidia-container-toolkit-lts",
            "siderolabs/nvidia-open-gpu-kernel-modules-lts",
        ],
        "kernelModules": [
            {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
            {"name": "nvidia_uvm", "parameters": []},
            {"name": "nvidia_drm", "parameters": []},
            {"name": "nvidia_modeset", "parameters": []},
        ],
        "sysctls": {"net.core.bpf_jit_harden": "1"},
        "kernelArgs": [],
        "notes": [],
        "doesNotWork": [],
    }
    assert any("570.195.03 does not know 10de:2bb5" in reason for reason in document["reasons"])


@pytest.mark.parametrize(
    ("args", "flavour", "tier", "driver"),
    [
        (["0x26b9", "--talos", "1.13.9"], "open", "production", "595.91.07"),
        (["L40S", "--talos", "v1.11.6"], "open", "production", "570.172.08"),
        (["1DB1", "--talos", "v1.13.9"], "proprietary", "lts", "580.178.04"),
        (["1db4", "1eb8", "--talos", "v1.12.6"], "proprietary", "lts", "580.126.20"),
        (["T4", "--talos", "v1.7.7"], "open", None, "535.129.03"),
        (["T4", "--talos", "v1.3.0"], "open", None, "515.65.01"),
        (
            ["L4", "--talos", "v1.13.9", "--flavour", "proprietary", "--tier", "lts"],
            "proprietary",
            "lts",
            "580.178.04",
        ),
        (["L4", "--talos", "v1.13.9", "--flavor", "open"], "open", "production", "595.91.07"),
    ],
)
def test_choices(args: list[str], flavour: str, tier: str | None, driver: str) -> None:
    document = gpu_json(*args)
    assert (document["flavour"], document["tier"], document["driver"]) == (flavour, tier, driver)


def test_bare_metal_hgx_with_an_nvswitch_id_gets_the_fabric_manager() -> None:
    document = gpu_json("10de:2330", "10de:22a3", "--talos", "v1.13.9", "--metal")
    assert [gpu["id"] for gpu in document["gpus"]] == ["10de:2330"]
    assert document["extensions"] == [
        "siderolabs/nvidia-container-toolkit-production",
        "siderolabs/nvidia-fabricmanager-production",
        "siderolabs/nvidia-open-gpu-kernel-modules-production",
    ]
    assert document["kernelModules"][0] == {"name": "nvidia", "parameters": []}
    assert document["sysctls"] == {}
    flagged = gpu_json("10de:2330", "--talos", "v1.13.9", "--metal", "--nvswitch")
    assert flagged["extensions"] == document["extensions"]
    vm = gpu_json("10de:2330", "10de:22a3", "--talos", "v1.13.9")
    assert not any("fabricmanager" in name for name in vm["extensions"])


def test_gb10_infers_arm64_and_needs_bti_off() -> None:
    document = gpu_json("10de:2e12", "--talos", "v1.13.9", "--metal")
    assert document["flavour"] == "proprietary"
    assert document["kernelArgs"] == ["arm64.nobti"]
    assert document["reasons"][0].startswith("architecture arm64")
    refused = run("gpu", "10de:2e12", "--talos", "v1.13.9", "--arch", "amd64")
    assert refused.exit_code == 1 and "arm64" in refused.stderr


def test_gdrdrv_is_opt_in() -> None:
    document = gpu_json("10de:2330", "--talos", "v1.12.0", "--gdrdrv")
    assert "siderolabs/nvidia-gdrdrv-device" in document["extensions"]
    assert document["kernelModules"][-1] == {"name": "gdrdrv", "parameters": []}


def test_only_non_gpu_functions_means_no_nvidia_extensions() -> None:
    document = gpu_json("10de:22ba", "10de:1aef", "--talos", "v1.13.9")
    assert (
        document["gpus"] == [] and document["extensions"] == [] and document["kernelModules"] == []
    )
    assert (document["flavour"], document["tier"], document["driver"]) == (None, None, None)
    assert "no NVIDIA GPU" in document["reasons"][-1]


def test_declared_architecture_for_an_unlisted_id() -> None:
    document = gpu_json("10de:3f00=Blackwell", "--talos", "v1.13.9")
    assert document["gpus"] == [
        {"id": "10de:3f00", "name": "NVIDIA GPU 10de:3f00", "chip": "", "architecture": "Blackwell"}
    ]
    assert document["flavour"] == "open"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["10de:2bb5", "--talos", "v1.13.9", "--flavour", "proprietary"], "needs open"),
        (["10de:1b06", "--talos", "v1.13.9", "--flavour", "open"], "needs proprietary"),
        (["10de:1db1", "--talos", "v1.13.9", "--tier", "production"], "set tier to lts"),
        (
            ["10de:1b06", "10de:2bb5", "--talos", "v1.13.9"],
            "no NVIDIA kernel-module flavour drives every GPU",
        ),
        (["10de:2bb5", "--talos", "v1.11.0"], "use Talos v1.12.0 or newer"),
        (["10de:ffff", "--talos", "v1.13.9"], "not in the NVIDIA device table"),
        (["RTX PRO 6000 Blackwell", "--talos", "v1.13.9"], "10de:2bb1"),
        (["10de:1004", "--talos", "v1.13.9"], "Kepler"),
        (["10de:26b9", "--talos", "latest"], "not a Talos version"),
        (["10de:26b9", "--talos", "v1.7.0", "--tier", "production"], "no production tier"),
        (["1002:740f", "--talos", "v1.13.9"], "not NVIDIA"),
    ],
)
def test_refusals_exit_1_with_the_reason_on_stderr(args: list[str], message: str) -> None:
    for extra in ([], ["--json"]):
        result = run("gpu", *args, *extra)
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr.startswith("talos-schematic: ")
        assert message in result.stderr


def test_usage_errors_exit_2() -> None:
    assert run("gpu", "10de:26b9").exit_code == 2  # --talos missing
    assert run("gpu", "10de:26b9", "--talos", "v1.13.9", "--tier", "beta").exit_code == 2
    assert run("gpu", "--talos", "v1.13.9").exit_code == 2


def test_human_output_explains_the_choice() -> None:
    result = run("gpu", "L40S", "L40S", "--talos", "v1.12.6")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("platform: KubeVirt VM")
    assert lines[1] == "2x 10de:26b9  NVIDIA L40S  (AD102, Ada Lovelace)"
    assert lines[2] == "Talos v1.12.6: open kernel modules, tier lts, driver 580.126.20"
    assert "  siderolabs/nvidia-open-gpu-kernel-modules-lts" in lines
    assert (
        "kernel modules: nvidia (NVreg_NvLinkDisable=1), nvidia_uvm, nvidia_drm, nvidia_modeset"
        in lines
    )
    assert "sysctls: net.core.bpf_jit_harden=1" in lines
    assert any(
        line.startswith("  - tier lts: driver 580.126.20 is newer than production")
        for line in lines
    )


def test_schema_profile_prints_the_json_schema() -> None:
    result = run("schema", "profile")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"] == "talos-schematic hardware profile"
    assert set(schema["properties"]) == {
        "name",
        "aliases",
        "description",
        "platform",
        "architecture",
        "cpuVendor",
        "gpus",
        "nvswitch",
        "nvidia",
        "extensions",
        "kernelArgs",
        "secureboot",
        "overlay",
        "meta",
        "bootloader",
        "diskImage",
    }


def test_schema_unknown_name_is_a_usage_error() -> None:
    result = run("schema", "nonsense")
    assert result.exit_code == 2
    assert "known: profile" in result.stderr


# --- bare-metal HGX: NVLink-5 -------------------------------------------------------------------


@pytest.mark.parametrize("pci_id", ["10de:2901", "10de:3182"])  # B200, B300 SXM6
def test_nvlink5_hgx_on_metal_gets_fabric_manager_and_ib_umad(pci_id: str) -> None:
    document = gpu_json(*[pci_id] * 8, "--talos", "v1.13.9", "--metal", "--nvswitch")
    tier = document["tier"]
    assert tier == "production"
    assert f"siderolabs/nvidia-fabricmanager-{tier}" in document["extensions"]
    assert f"siderolabs/nvidia-open-gpu-kernel-modules-{tier}" in document["extensions"]
    assert [m["name"] for m in document["kernelModules"]] == [
        "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "ib_umad",
    ]  # fmt: skip
    assert any(reason.startswith("ib_umad: NVLink-5") for reason in document["reasons"])
    lts = gpu_json(pci_id, "--talos", "v1.13.9", "--metal", "--nvswitch", "--tier", "lts")
    assert "siderolabs/nvidia-fabricmanager-lts" in lts["extensions"]
    assert lts["kernelModules"][-1]["name"] == "ib_umad"


def test_h100_hgx_on_metal_is_unchanged() -> None:
    document = gpu_json(*["10de:2330"] * 8, "--talos", "v1.13.9", "--metal", "--nvswitch")
    assert "siderolabs/nvidia-fabricmanager-production" in document["extensions"]
    assert [m["name"] for m in document["kernelModules"]] == [
        "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset",
    ]  # fmt: skip


def test_gb10_prints_the_verify_on_hardware_note() -> None:
    result = run("gpu", "10de:2e12", "--talos", "v1.13.9", "--metal")
    assert result.exit_code == 0, result.stderr
    assert "note: verify on hardware (gb10-flavour): conflicting evidence" in result.stdout


def test_gb10_on_1_14_says_cuda_cannot_start_and_why() -> None:
    result = run("gpu", "10de:2e12", "--talos", "v1.14.0")
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("does not work:"))
    assert "CUDA cannot start on GB10" in line
    assert "CONFIG_ARM_SMMU_V3_SVA" in line and "siderolabs/talos#14087" in line


def test_gds_and_peermem_options() -> None:
    refused = run("gpu", "10de:2330", "--talos", "v1.13.9", "--metal", "--gds")
    assert refused.exit_code == 1
    assert "has no nvidia-fs module (it arrives in v1.14.0" in refused.stderr
    gds = run("gpu", "10de:2330", "--talos", "v1.14.0", "--metal", "--gds")
    assert gds.exit_code == 0, gds.stderr
    assert "kernel modules: nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset, nvidia_fs" in gds.stdout
    assert "nvidia-fs" not in gds.stdout.split("kernel modules:")[0]
    document = gpu_json("10de:2330", "--talos", "v1.13.9", "--metal", "--peermem")
    assert document["kernelModules"][-1] == {"name": "nvidia_peermem", "parameters": []}


def test_geforce_on_the_535_driver_gets_the_unsupported_gpus_parameter() -> None:
    document = gpu_json("10de:2204", "--talos", "v1.11.6", "--metal", "--tier", "lts")
    assert document["kernelModules"][0] == {
        "name": "nvidia",
        "parameters": ["NVreg_OpenRmEnableUnsupportedGpus=1"],
    }


def test_generate_warns_per_gb10_pool_that_cuda_cannot_start(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ncozystack: {version: v1.6}\ntalos: {version: v1.14.0}\npools:\n"
        "  - name: spark\n    profile: metal-dgx-spark\n"
    )
    result = run("generate", str(cluster), "-f", "machine-config")
    assert result.exit_code == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "does not work" in line]
    assert warning.startswith("talos-schematic: warning: ")
    assert 'pool "spark": does not work: CUDA cannot start on GB10' in warning
