"""`talos-schematic detect`: profiles on stdout, words on stderr, exit codes 0/1/3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

register_all_commands()

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "samples"

L40S = """\
00:00.0 Host bridge [0600]: Intel Corporation Sky Lake-E DMI3 Registers [8086:2020] (rev 07)
18:00.0 3D controller [0302]: NVIDIA Corporation AD102GL [L40S] [10de:26b9] (rev a1)
3b:00.0 3D controller [0302]: NVIDIA Corporation AD102GL [L40S] [10de:26b9] (rev a1)
"""
A10_VM = (
    '00:00.0 "Host bridge [0600]" "Intel Corporation [8086]" "82G33/G31/P35/P31 Express DRAM '
    'Controller [29c0]" "Red Hat, Inc. [1af4]" "QEMU Virtual Machine [1100]"\n'
    '01:00.0 "Ethernet controller [0200]" "Red Hat, Inc. [1af4]" "Virtio 1.0 network device '
    '[1041]" -r01 "Red Hat, Inc. [1af4]" "Device [1100]"\n'
    '09:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "GA102GL [A10] [2236]" -ra1 '
    '"NVIDIA Corporation [10de]" "GA102GL [A10] [1482]"\n'
)


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["detect", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_prints_a_profile_from_stdin() -> None:
    code, out, err = run(stdin=L40S)
    assert (code, err) == (0, "")
    assert yaml.safe_load(out) == {
        "name": "detected-1",
        "description": "Detected: 2x NVIDIA L40S (10de:26b9); bare metal, Intel CPU",
        "platform": "metal",
        "architecture": "amd64",
        "cpuVendor": "intel",
        "gpus": [{"id": "10de:26b9", "count": 2}],
        "nvswitch": False,
        "extensions": [],
        "kernelArgs": [],
    }


def test_several_machines_as_a_yaml_stream_and_json(tmp_path: Path) -> None:
    dump = tmp_path / "nodes.txt"
    dump.write_text("==> gpu-1 <==\n" + L40S + "==> vm-a10 <==\n" + A10_VM, encoding="utf-8")
    code, out, _ = run(str(dump))
    assert code == 0
    profiles = list(yaml.safe_load_all(out))
    assert [p["name"] for p in profiles] == ["gpu-1", "vm-a10"]
    assert profiles[1]["platform"] == "kubevirt"
    assert profiles[1]["gpus"] == [{"id": "10de:2236", "count": 1}]
    code, out, _ = run(str(dump), "--json")
    assert code == 0
    assert json.loads(out) == profiles


def write_profile(tmp_path: Path, **fields: object) -> str:
    profile = {"name": "l40s-box", "platform": "metal", "cpuVendor": "intel", **fields}
    path = tmp_path / "l40s-box.yaml"
    path.write_text(yaml.safe_dump(profile), encoding="utf-8")
    return str(path)


def test_against_a_matching_profile(tmp_path: Path) -> None:
    profile = write_profile(tmp_path, gpus=[{"id": "10de:26b9", "count": 2}])
    code, out, err = run("--against", profile, stdin=L40S)
    assert (code, out) == (0, "")
    assert "<stdin>: node matches profile l40s-box" in err


def test_against_names_every_difference(tmp_path: Path) -> None:
    profile = write_profile(tmp_path, gpus=[{"id": "10de:2bb5", "count": 2}], nvswitch=True)
    code, out, err = run("--against", profile, stdin=L40S)
    assert (code, out) == (3, "")
    assert err.splitlines() == [
        "<stdin>: node differs from profile l40s-box:",
        "  gpus: profile declares 10de:2bb5 x2, node has 10de:26b9 x2",
        "  nvswitch: profile declares true, node has false",
    ]


def test_against_a_vm_does_not_fail_on_cpu_vendor(tmp_path: Path) -> None:
    profile = write_profile(
        tmp_path, platform="kubevirt", cpuVendor="amd", gpus=[{"id": "10de:2236"}]
    )
    code, _, err = run("--against", profile, stdin=A10_VM)
    assert code == 0
    assert "cpuVendor not checked" in err


def test_against_refuses_several_distinct_machines(tmp_path: Path) -> None:
    profile = write_profile(tmp_path, gpus=[{"id": "10de:26b9", "count": 2}])
    code, out, err = run("--against", profile, stdin=L40S + A10_VM)
    assert (code, out) == (1, "")
    assert "--against checks one machine; the input holds 2" in err


def test_against_accepts_several_identical_nodes(tmp_path: Path) -> None:
    profile = write_profile(tmp_path, gpus=[{"id": "10de:26b9", "count": 2}])
    code, _, err = run("--against", profile, stdin=L40S + L40S)
    assert code == 0
    assert "matches" in err


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "talos-schematic: <stdin>: empty input"),
        (L40S + "what is this\n", "talos-schematic: <stdin>:4: not an lspci device line"),
    ],
)
def test_bad_input_exits_1_with_the_line(stdin: str, message: str) -> None:
    code, out, err = run(stdin=stdin)
    assert (code, out) == (1, "")
    assert err.startswith(message)


def test_missing_file_exits_1(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nope.txt"))
    assert code == 1
    assert "nope.txt: cannot read" in err


def test_shared_kubevirt_sample() -> None:
    path = SAMPLES / "talosctl-pcidevices.kubevirt-h200.json"
    if not path.exists():
        pytest.skip(f"shared sample not present at {path}")
    code, out, _ = run(str(path))
    assert code == 0
    profile = yaml.safe_load(out)
    assert profile["name"] == "node-172-20-0-5"
    assert profile["platform"] == "kubevirt"
    assert profile["gpus"] == [{"id": "10de:2335", "count": 1}]
    assert "172.20.0.5" in profile["description"]


def test_detect_then_generate_on_an_hgx_b200_dump(tmp_path: Path) -> None:
    runner = CliRunner()
    dump = Path(__file__).resolve().parent / "data" / "lspci-nnvv.hgx-b200.txt"
    result = runner.invoke(app, ["detect", str(dump)])
    assert result.exit_code == 0, result.stderr
    profile = yaml.safe_load(result.stdout)
    assert profile["gpus"] == [{"id": "10de:2901", "count": 8}]
    assert profile["nvswitch"] is True
    assert "ConnectX-7 bridge" in profile["description"]
    (tmp_path / "hgx.yaml").write_text(result.stdout)
    (tmp_path / "cluster.yaml").write_text(
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - {name: b200, profile: ./hgx.yaml}\n"
    )
    schematic = runner.invoke(app, ["generate", str(tmp_path / "cluster.yaml"), "-f", "schematic"])
    assert schematic.exit_code == 0, schematic.stderr
    assert "siderolabs/nvidia-fabricmanager-production" in schematic.stdout
    patch = runner.invoke(app, ["generate", str(tmp_path / "cluster.yaml"), "-f", "machine-config"])
    assert patch.exit_code == 0, patch.stderr
    modules = yaml.safe_load(patch.stdout)["machine"]["kernel"]["modules"]
    assert [m["name"] for m in modules] == [
        "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "ib_umad",
    ]  # fmt: skip
