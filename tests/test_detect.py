"""Parsers and profile derivation of `schematic.doctor.detect`, on inline dumps in the real formats."""

# Real dump lines are long; they are kept whole so the tests read like the dumps.
# ruff: noqa: E501

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from schematic.doctor.detect import PciDevice, compare_profile, detect, dump_profiles, parse_dump
from schematic.errors import DetectError

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "samples"
DATA = Path(__file__).resolve().parent / "data"

LSPCI_NN_A10 = """\
00:00.0 Host bridge [0600]: Intel Corporation Sky Lake-E DMI3 Registers [8086:2020] (rev 07)
00:05.0 System peripheral [0880]: Intel Corporation Sky Lake-E MM/Vt-d Configuration Registers [8086:2024] (rev 07)
17:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102GL [A10] [10de:2236] (rev a1)
17:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio Controller [10de:1aef] (rev a1)
65:00.0 3D controller [0302]: NVIDIA Corporation GA102GL [A10] [10de:2236] (rev a1)
b3:00.0 Ethernet controller [0200]: Mellanox Technologies MT2892 Family [ConnectX-6 Dx] [15b3:101d]
"""

LSPCI_NNMM_DOMAIN = """\
0000:00:00.0 "Host bridge [0600]" "Advanced Micro Devices, Inc. [AMD] [1022]" "Starship/Matisse Root Complex [1480]" "Advanced Micro Devices, Inc. [AMD] [1022]" "Starship/Matisse Root Complex [1480]"
0000:01:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "GH100 [H100 SXM5 80GB] [2330]" -ra1 "NVIDIA Corporation [10de]" "Device [16c1]"
0000:02:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "GH100 [H100 SXM5 80GB] [2330]" -ra1 -p00 "NVIDIA Corporation [10de]" "Device [16c1]"
0000:81:00.0 "Bridge [0680]" "NVIDIA Corporation [10de]" "GH100 [H100 NVSwitch] [22a3]" -ra1 "NVIDIA Corporation [10de]" ""
0000:82:00.0 "Bridge [0680]" "NVIDIA Corporation [10de]" "GH100 [H100 NVSwitch] [22a3]" -ra1 "NVIDIA Corporation [10de]" ""
"""

TALOSCTL_YAML = """\
node: 10.0.0.11
metadata:
    namespace: hardware
    type: PCIDevices.hardware.talos.dev
    id: "0000:00:00.0"
spec:
    class: Bridge
    subclass: Host bridge
    vendor: Red Hat, Inc.
    product: QEMU PCIe Host bridge
    class_id: "0x06"
    subclass_id: "0x00"
    vendor_id: "0x1b36"
    product_id: "0x0008"
---
node: 10.0.0.11
metadata:
    id: "0000:09:00.0"
spec:
    class: Display controller
    subclass: 3D controller
    vendor: NVIDIA Corporation
    product: GB202GL [RTX PRO 6000 Blackwell Server Edition]
    class_id: "0x03"
    subclass_id: "0x02"
    vendor_id: "0x10de"
    product_id: "0x2bb5"
    driver: nvidia
---
node: 10.0.0.12
metadata:
    id: "0000:00:00.0"
spec:
    class_id: "0x06"
    subclass_id: "0x00"
    vendor_id: "0x1b36"
    product_id: "0x0008"
---
node: 10.0.0.12
metadata:
    id: "0000:09:00.0"
spec:
    class_id: "0x03"
    subclass_id: "0x02"
    vendor_id: "0x10de"
    product_id: "0x2bb5"
"""


def pcidevice(node: str, address: str, klass: str, vendor: str, product: str) -> dict[str, Any]:
    return {
        "node": node,
        "metadata": {"namespace": "hardware", "id": address},
        "spec": {
            "class_id": klass[:4],
            "subclass_id": "0x" + klass[4:],
            "vendor_id": vendor,
            "product_id": product,
            "driver": "",
        },
    }


VM_DEVICES = [
    pcidevice("vm-1", "0000:00:00.0", "0x0600", "0x1b36", "0x0008"),
    pcidevice("vm-1", "0000:01:00.0", "0x0200", "0x1af4", "0x1041"),
    pcidevice("vm-1", "0000:08:00.0", "0x0302", "0x10de", "0x2335"),
]


def test_lspci_nn_takes_the_last_bracketed_ids() -> None:
    [machine] = parse_dump(LSPCI_NN_A10)
    a10 = machine.devices[2]
    assert a10 == PciDevice("0000:17:00.0", 0x0300, 0x10DE, 0x2236, "GA102GL [A10]")
    nic = machine.devices[-1]
    assert (nic.pci_id, nic.class_code) == ("15b3:101d", 0x0200)
    assert nic.name == "Mellanox Technologies MT2892 Family [ConnectX-6 Dx]"


def test_display_functions_only_count_as_gpus() -> None:
    [profile] = detect(LSPCI_NN_A10)
    assert profile["gpus"] == [{"id": "10de:2236", "count": 2}]
    assert profile["platform"] == "metal"
    assert profile["cpuVendor"] == "intel"
    assert profile["architecture"] == "amd64"
    assert profile["nvswitch"] is False
    assert profile["extensions"] == []
    assert list(profile) == [
        "name", "description", "platform", "architecture", "cpuVendor",
        "gpus", "nvswitch", "extensions", "kernelArgs",
    ]  # fmt: skip


def test_lspci_nnmm_with_domains_flags_and_quoted_brackets() -> None:
    [machine] = parse_dump(LSPCI_NNMM_DOMAIN)
    assert [d.address for d in machine.devices][:2] == ["0000:00:00.0", "0000:01:00.0"]
    assert machine.devices[1] == PciDevice(
        "0000:01:00.0", 0x0302, 0x10DE, 0x2330, "GH100 [H100 SXM5 80GB]"
    )
    [profile] = detect(LSPCI_NNMM_DOMAIN)
    assert profile["gpus"] == [{"id": "10de:2330", "count": 2}]
    assert profile["nvswitch"] is True
    assert profile["cpuVendor"] == "amd"
    assert "2 NVSwitches" in profile["description"]


def test_lspci_numeric_forms_and_kernel_driver() -> None:
    numeric = "00:00.0 0600: 8086:2020 (rev 07)\n3b:00.0 0302: 10de:26b9 (rev a1)\n"
    [machine] = parse_dump(numeric)
    assert [d.pci_id for d in machine.devices] == ["8086:2020", "10de:26b9"]
    nmm = '00:00.0 "0600" "1022" "1480" "1022" "1480"\n01:00.0 "0302" "10de" "20b2" -ra1 "10de" "1463"\n'
    assert detect(nmm)[0]["gpus"] == [{"id": "10de:20b2", "count": 1}]
    with_k = (
        "01:00.0 3D controller [0302]: NVIDIA Corporation AD102GL [L40S] [10de:26b9] (rev a1)\n"
        "\tSubsystem: NVIDIA Corporation Device [10de:1851]\n"
        "\tKernel driver in use: nvidia\n"
        "\tKernel modules: nvidia\n"
    )
    [machine] = parse_dump(with_k)
    assert [(d.pci_id, d.driver) for d in machine.devices] == [("10de:26b9", "nvidia")]


def test_talosctl_yaml_groups_by_node_and_merges_identical_machines() -> None:
    machines = parse_dump(TALOSCTL_YAML)
    assert [(m.node, len(m.devices)) for m in machines] == [("10.0.0.11", 2), ("10.0.0.12", 2)]
    assert machines[0].devices[1].driver == "nvidia"
    [profile] = detect(TALOSCTL_YAML)
    assert profile["name"] == "detected-1"
    assert profile["platform"] == "kubevirt"
    assert "cpuVendor" not in profile
    assert profile["gpus"] == [{"id": "10de:2bb5", "count": 1}]
    assert "10.0.0.11, 10.0.0.12" in profile["description"]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(VM_DEVICES),
        json.dumps({"items": VM_DEVICES}),
        "\n".join(json.dumps(d, indent=4) for d in VM_DEVICES),
        "".join(json.dumps(d) for d in VM_DEVICES),
    ],
    ids=["list", "items", "concatenated", "back-to-back"],
)
def test_talosctl_json_forms(text: str) -> None:
    [profile] = detect(text)
    assert profile["name"] == "vm-1"
    assert profile["platform"] == "kubevirt"
    assert profile["gpus"] == [{"id": "10de:2335", "count": 1}]
    assert "QEMU/KVM guest with passthrough GPU" in profile["description"]


def test_talosctl_single_object_and_integer_codes() -> None:
    device = pcidevice("", "0000:01:00.0", "0x0302", "0x10de", "0x2bb5")
    device["spec"]["vendor_id"] = 0x10DE
    [machine] = parse_dump(json.dumps(device))
    assert machine.node == ""
    assert machine.devices[0].pci_id == "10de:2bb5"


def test_markers_repeated_addresses_and_blank_lines_split_lspci_dumps() -> None:
    gpu = "01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2bb5] (rev a1)\n"
    host = (
        "00:00.0 Host bridge [0600]: Advanced Micro Devices, Inc. [AMD] Root Complex [1022:1480]\n"
    )
    text = (
        "==> gpu-a <==\n" + host + gpu + "\n"
        "# node: gpu-b\n" + host + gpu + gpu.replace("01:00.0", "02:00.0") +
        host + gpu +  # repeated 00:00.0: a new, unnamed machine
        "\n" + gpu.replace("01:00.0", "00:1f.0")  # lower address after a blank line
    )  # fmt: skip
    machines = parse_dump(text)
    assert [(m.node, len(m.devices)) for m in machines] == [
        ("gpu-a", 2),
        ("gpu-b", 3),
        ("", 2),
        ("", 1),
    ]
    profiles = detect(text)
    assert [p["gpus"][0]["count"] for p in profiles] == [1, 2, 1]
    assert profiles[0]["name"] == "detected-1"
    assert "gpu-a, machine 3" in profiles[0]["description"]
    assert profiles[1]["name"] == "gpu-b"


def test_blank_lines_inside_one_dump_do_not_split_it() -> None:
    text = LSPCI_NN_A10.replace("\n17:00.1", "\n\n17:00.1")
    assert len(parse_dump(text)) == 1


def test_host_prefixed_lines_as_pdsh_prints_them() -> None:
    line = "{host}: {addr} 3D controller [0302]: NVIDIA Corporation Device [10de:2bb5] (rev a1)\n"
    text = "".join(
        line.format(host=host, addr=addr)
        for host, addr in [("n1", "01:00.0"), ("n2", "01:00.0"), ("n1", "02:00.0")]
    )
    machines = parse_dump(text)
    assert [(m.node, len(m.devices)) for m in machines] == [("n1", 2), ("n2", 1)]


def test_prompt_and_comment_lines_are_ignored() -> None:
    text = "# collected 2026-11-20\n$ sudo lspci -nn\n" + LSPCI_NN_A10
    assert detect(text)[0]["gpus"] == [{"id": "10de:2236", "count": 2}]


def test_vmware_amd_and_intel_gpus() -> None:
    text = (
        "00:00.0 Host bridge [0600]: Intel Corporation 440BX/ZX/DX - 82443BX/ZX/DX Host bridge [8086:7190] (rev 01)\n"
        "00:0f.0 VGA compatible controller [0300]: VMware SVGA II Adapter [15ad:0405]\n"
        "0b:00.0 Processing accelerators [1200]: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X] [1002:74a1]\n"
        "0c:00.0 VGA compatible controller [0300]: Intel Corporation DG2 [Arc A380] [8086:56a5] (rev 05)\n"
    )
    [profile] = detect(text)
    assert profile["platform"] == "vmware"
    assert "cpuVendor" not in profile
    assert profile["gpus"] == []
    assert profile["extensions"] == ["siderolabs/amdgpu", "siderolabs/i915"]


def test_grace_and_arm_hints_give_arm64() -> None:
    gh200 = (
        "0000:00:00.0 PCI bridge [0604]: NVIDIA Corporation Device [10de:22b2]\n"
        "0009:01:00.0 3D controller [0302]: NVIDIA Corporation GH100 [GH200 120GB] [10de:2342] (rev a1)\n"
    )
    [profile] = detect(gh200)
    assert (profile["architecture"], profile["cpuVendor"]) == ("arm64", "arm")
    ampere = "0000:00:00.0 Host bridge [0600]: Ampere Computing, LLC Altra PCI Express Root Complex A [1def:e100]\n"
    [profile] = detect(ampere)
    assert (profile["architecture"], profile["cpuVendor"], profile["gpus"]) == ("arm64", "arm", [])


def test_unknown_nvidia_ids_are_still_listed() -> None:
    text = "01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:3fff]\n"
    [profile] = detect(text)
    assert profile["gpus"] == [{"id": "10de:3fff", "count": 1}]
    assert "(10de:3fff)" in profile["description"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "<in>: empty input"),
        ("\n# only a comment\n", "<in>: empty input"),
        ("00:00.0 Host bridge: Intel Corporation Sky Lake-E DMI3 Registers (rev 07)\n", "<in>:1: no [class]"),
        (LSPCI_NN_A10 + "garbage here\n", "<in>:7: not an lspci device line"),
        ('01:00.0 "3D controller [0302]" "NVIDIA\n', "<in>:1: cannot split lspci -mm fields"),
        ("==> a <==\n==> b <==\n" + LSPCI_NN_A10, "<in>:1: machine 'a' lists no PCI devices"),
        ("NODE         NAMESPACE   TYPE         ID   VERSION\n", "<in>:1: talosctl table output"),
        ('{"node": "a", "spec": {}}\n{"node": ', "<in>:2: invalid JSON"),
        ('[{"node": "a", "spec": {"class_id": "0x03"}}]', "<in>:1: a pcidevices resource without spec.subclass_id"),
        ("node: a\nspec: [\n", "<in>:3: not lspci -nn"),
        ("hello world\n", "<in>:1: expected talosctl pcidevices resources"),
        (TALOSCTL_YAML.replace('"0x2bb5"', '"zz"', 1), "<in>:27: spec.product_id must be a hex code"),
    ],
)  # fmt: skip
def test_unparseable_input_names_the_line(text: str, message: str) -> None:
    with pytest.raises(DetectError) as caught:
        detect(text, "<in>")
    assert str(caught.value).startswith(message)


def test_yaml_output_reads_back_and_is_a_stream() -> None:
    profiles = detect(TALOSCTL_YAML) + detect(LSPCI_NN_A10)
    text = dump_profiles(profiles)
    assert text.count("---\n") == 1
    assert list(yaml.safe_load_all(text)) == profiles
    assert "- id: 10de:2bb5\n  count: 1\n" in text
    assert json.loads(dump_profiles(profiles, as_json=True)) == profiles


def test_compare_profile_names_each_difference() -> None:
    [detected] = detect(LSPCI_NNMM_DOMAIN)
    declared = {
        "name": "hgx",
        "platform": "metal",
        "architecture": "amd64",
        "cpuVendor": "intel",
        "gpus": [{"id": "10DE:2330", "count": 8}],
        "nvswitch": False,
    }
    assert compare_profile(detected, declared) == [
        "cpuVendor: profile declares intel, node has amd",
        "gpus: profile declares 10de:2330 x8, node has 10de:2330 x2",
        "nvswitch: profile declares false, node has true",
    ]
    declared.update(cpuVendor="amd", gpus=[{"id": "10de:2330", "count": 2}], nvswitch=True)
    assert compare_profile(detected, declared) == []


def test_compare_skips_a_cpu_vendor_a_vm_cannot_show() -> None:
    [detected] = detect(json.dumps(VM_DEVICES))
    declared = {"platform": "kubevirt", "cpuVendor": "amd", "gpus": [{"id": "10de:2335"}]}
    assert compare_profile(detected, declared) == []
    assert compare_profile(detected, {"platform": "metal", "gpus": []}) == [
        "platform: profile declares metal, node has kubevirt",
        "gpus: profile declares none, node has 10de:2335 x1",
    ]


EXPECTED_SAMPLES = {
    "lspci-nn.l40s-intel.txt": ("metal", "intel", [{"id": "10de:26b9", "count": 2}], False),
    "lspci-nnmm.a100-amd.txt": ("metal", "amd", [{"id": "10de:20b2", "count": 2}], True),
    "talosctl-pcidevices.kubevirt-h200.json": (
        "kubevirt",
        None,
        [{"id": "10de:2335", "count": 1}],
        False,
    ),
}


@pytest.mark.parametrize("sample", sorted(EXPECTED_SAMPLES))
def test_shared_samples(sample: str) -> None:
    path = SAMPLES / sample
    if not path.exists():
        pytest.skip(f"shared sample not present at {path}")
    [profile] = detect(path.read_text(encoding="utf-8"), str(path))
    platform, cpu_vendor, gpus, nvswitch = EXPECTED_SAMPLES[sample]
    assert profile["platform"] == platform
    assert profile.get("cpuVendor") == cpu_vendor
    assert profile["gpus"] == gpus
    assert profile["nvswitch"] is nvswitch
    assert profile["architecture"] == "amd64"


def test_detect_works_without_the_device_table(monkeypatch: pytest.MonkeyPatch) -> None:
    import schematic.facts.nvidia

    def broken(id_or_name: str) -> Any:
        raise RuntimeError("table unavailable")

    monkeypatch.setattr(schematic.facts.nvidia, "lookup_gpu", broken)
    [profile] = detect(LSPCI_NN_A10)
    assert profile["description"].startswith("Detected: 2x GA102GL [A10] (10de:2236)")


def test_detected_profiles_validate_as_hardware_profiles() -> None:
    from schematic.inputs.profiles import profile_from_mapping

    for text in (LSPCI_NN_A10, LSPCI_NNMM_DOMAIN, TALOSCTL_YAML, json.dumps(VM_DEVICES)):
        for profile in detect(text):
            dumped = profile_from_mapping(profile, "detected").as_document()
            assert dumped.pop("aliases") == []  # detected machines have no other names
            assert dumped == profile


def test_lspci_vmmnn_records() -> None:
    record = (
        "Slot:\t{slot}\nClass:\t3D controller [0302]\nVendor:\tNVIDIA Corporation [10de]\n"
        "Device:\tGA100 [A100 SXM4 80GB] [20b2]\nSVendor:\tNVIDIA Corporation [10de]\n"
        "SDevice:\tDevice [1463]\nRev:\ta1\nDriver:\tnvidia\n\n"
    )
    host = (
        "Slot:\t0000:00:00.0\nClass:\tHost bridge [0600]\n"
        "Vendor:\tAdvanced Micro Devices, Inc. [AMD] [1022]\n"
        "Device:\tStarship/Matisse Root Complex [1480]\n\n"
    )
    one = host + record.format(slot="0000:01:00.0") + record.format(slot="0000:41:00.0")
    machines = parse_dump(one + one)
    assert len(machines) == 2
    assert [(d.pci_id, d.name, d.driver) for d in machines[0].devices] == [
        ("1022:1480", "Starship/Matisse Root Complex", ""),
        ("10de:20b2", "GA100 [A100 SXM4 80GB]", "nvidia"),
        ("10de:20b2", "GA100 [A100 SXM4 80GB]", "nvidia"),
    ]
    [profile] = detect(one + one)
    assert (profile["cpuVendor"], profile["gpus"]) == ("amd", [{"id": "10de:20b2", "count": 2}])


# --- NVLink-5: the ConnectX-7 NVSwitch bridge of a Blackwell HGX board -------------------------

HGX_B200 = Path(__file__).resolve().parent / "data" / "lspci-nnvv.hgx-b200.txt"


def test_hgx_b200_dump_with_the_bridge_vpd_sets_nvswitch() -> None:
    [machine] = parse_dump(HGX_B200.read_text(), str(HGX_B200))
    bridge = [d for d in machine.devices if d.address.startswith(("0000:05:", "0000:06:"))]
    assert [d.pci_id for d in bridge] == ["15b3:1021"] * 4
    assert [d.switch_management for d in bridge] == [True, False, True, False]
    assert [d.driver for d in bridge] == ["mlx5_core"] * 4
    [profile] = detect(HGX_B200.read_text())
    assert profile["gpus"] == [{"id": "10de:2901", "count": 8}]
    assert profile["nvswitch"] is True
    assert (profile["platform"], profile["cpuVendor"]) == ("metal", "intel")
    assert (
        "NVSwitches behind the ConnectX-7 bridge: 4 Mellanox functions at 0000:05:00, "
        "0000:06:00, VPD SMDL=SW_MNG on 0000:05:00.0, 0000:06:00.0, beside 8 Blackwell HGX GPUs"
    ) in profile["description"]


def test_hgx_b200_without_vpd_names_the_weaker_evidence() -> None:
    plain = "".join(
        line + "\n" for line in HGX_B200.read_text().splitlines() if not line.startswith("\t")
    )
    [profile] = detect(plain)
    assert profile["nvswitch"] is True
    assert (
        "12 ConnectX-7 functions (15b3:1021) beside 8 Blackwell HGX GPUs" in profile["description"]
    )
    no_mellanox = "".join(line + "\n" for line in plain.splitlines() if "[15b3:" not in line)
    [inferred] = detect(no_mellanox)
    assert inferred["nvswitch"] is True
    assert "NVSwitches inferred: 8 Blackwell HGX GPUs" in inferred["description"]


def test_talosctl_dump_of_an_hgx_b200_sets_nvswitch_from_the_connectx7_functions() -> None:
    devices = [pcidevice("hgx", "0000:00:00.0", "0x0600", "0x8086", "0x09a2")]
    devices += [
        pcidevice("hgx", f"0000:{bus:02x}:00.0", "0x0302", "0x10de", "0x2901")
        for bus in (0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF)
    ]
    devices += [
        pcidevice("hgx", f"0000:0{bus}:00.{fn}", "0x0207", "0x15b3", "0x1021")
        for bus in (5, 6)
        for fn in (0, 1)
    ]
    [profile] = detect(json.dumps(devices))
    assert profile["nvswitch"] is True
    assert "4 ConnectX-7 functions (15b3:1021)" in profile["description"]


def test_fewer_blackwell_gpus_or_hopper_get_no_nvlink5_guess() -> None:
    lines = HGX_B200.read_text().splitlines()
    four = [
        line for line in lines if "[10de:2901]" not in line or line[:2] in ("1b", "43", "52", "61")
    ]
    [profile] = detect("\n".join(four) + "\n")
    assert profile["gpus"] == [{"id": "10de:2901", "count": 4}]
    assert profile["nvswitch"] is False
    hopper = [
        line.replace("GB100 [B200] [10de:2901]", "GH100 [H100 SXM5 80GB] [10de:2330]")
        for line in lines
    ]
    [h100] = detect("\n".join(hopper) + "\n")
    assert h100["nvswitch"] is False  # Hopper HGX shows its NVSwitches as 10de bridges


def test_a_vm_with_eight_b200_is_not_an_hgx_host() -> None:
    devices = [
        pcidevice("vm", "0000:00:00.0", "0x0600", "0x8086", "0x29c0"),
        pcidevice("vm", "0000:00:02.0", "0x0200", "0x1af4", "0x1041"),
    ]
    devices += [
        pcidevice("vm", f"0000:{bus:02x}:00.0", "0x0302", "0x10de", "0x2901") for bus in range(1, 9)
    ]
    [profile] = detect(json.dumps(devices))
    assert (profile["platform"], profile["nvswitch"]) == ("kubevirt", False)


def test_identical_nodes_are_worked_out_once_and_listed_briefly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40,000 identical nodes cost one derivation, not one list search per node (which made
    detect quadratic); the description names 20 and counts the rest."""
    import schematic.doctor.detect as detect_module

    line = "00:01.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [L40S] [10de:26b9] (rev a1)"
    text = "".join(f"==> node{i} <==\n{line}\n" for i in range(40_000))
    calls = 0
    original = detect_module._findings

    def counted(machine: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(machine)

    monkeypatch.setattr(detect_module, "_findings", counted)
    (profile,) = detect(text)
    assert calls == 1
    assert profile["gpus"] == [{"id": "10de:26b9", "count": 1}]
    assert profile["description"].startswith(
        "Detected on 40000 machines with identical hardware: node0, node1,"
    )
    assert "node19 and 39980 more: " in profile["description"]


def test_a_desktop_with_the_host_bridge_qemu_emulates_is_metal() -> None:
    # A real Intel G31 desktop: its 8086:29c0 host bridge is the one QEMU's Q35 emulates, and no
    # device only QEMU has (virtio, the QEMU VGA) stands beside it.
    [profile] = detect((DATA / "lspci-nn.dell-530n-g31.txt").read_text())
    assert (profile["platform"], profile["cpuVendor"]) == ("metal", "intel")
    assert "no QEMU device" in profile["description"]


def test_the_emulated_host_bridge_beside_a_virtio_device_is_a_guest() -> None:
    devices = [
        pcidevice("vm", "0000:00:00.0", "0x0600", "0x8086", "0x29c0"),
        pcidevice("vm", "0000:00:02.0", "0x0200", "0x1af4", "0x1041"),
    ]
    [profile] = detect(json.dumps(devices))
    assert profile["platform"] == "kubevirt"
