"""Hardware profiles: the shipped set, validation, user directories and the JSON Schema."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from schematic.errors import ProfileError
from schematic.facts.nvidia import GpuRequest, decide, lookup_gpu
from schematic.inputs.profile_values import HardwareProfile
from schematic.inputs.profiles import (
    list_profiles,
    load_profile,
    profile_from_mapping,
    profile_json_schema,
)

REPO = Path(__file__).resolve().parents[1]

# Cozystack's default KubeVirt passthrough list, plus the other GPU machines the project ships.
PASSTHROUGH_GPUS = {
    "kubevirt-h200-sxm": ("10de:2335", "nvidia.com/GH100_H200_SXM_141GB"),
    "kubevirt-h100-sxm5": ("10de:2330", "nvidia.com/GH100_H100_SXM5_80GB"),
    "kubevirt-h100-pcie": ("10de:2331", "nvidia.com/GH100_H100_PCIE"),
    "kubevirt-h100-nvl": ("10de:2321", "nvidia.com/GH100_H100L_94GB"),
    "kubevirt-l40s": ("10de:26b9", "nvidia.com/AD102GL_L40S"),
    "kubevirt-l40": ("10de:26b5", "nvidia.com/AD102GL_L40"),
    "kubevirt-l4": ("10de:27b8", "nvidia.com/AD104GL_L4"),
    "kubevirt-a100-sxm4-40gb": ("10de:20b0", "nvidia.com/GA100_A100_SXM4_40GB"),
    "kubevirt-a100-sxm4-80gb": ("10de:20b2", "nvidia.com/GA100_A100_SXM4_80GB"),
    "kubevirt-a100-pcie-40gb": ("10de:20f1", "nvidia.com/GA100_A100_PCIE_40GB"),
    "kubevirt-a100-pcie-80gb": ("10de:20b5", "nvidia.com/GA100_A100_PCIE_80GB"),
    "kubevirt-a30": ("10de:20b7", "nvidia.com/GA100GL_A30_PCIE"),
    "kubevirt-a40": ("10de:2235", "nvidia.com/GA102GL_A40"),
    "kubevirt-a10": ("10de:2236", "nvidia.com/GA102GL_A10"),
    "kubevirt-t4": ("10de:1eb8", "nvidia.com/TU104GL_TESLA_T4"),
    "kubevirt-v100-sxm2-16gb": ("10de:1db1", "nvidia.com/GV100GL_TESLA_V100_SXM2_16GB"),
    "kubevirt-v100-sxm2-32gb": ("10de:1db5", "nvidia.com/GV100GL_TESLA_V100_SXM2_32GB"),
    "kubevirt-v100-pcie-16gb": ("10de:1db4", "nvidia.com/GV100GL_TESLA_V100_PCIE_16GB"),
    "kubevirt-v100s-pcie": ("10de:1df6", "nvidia.com/GV100GL_TESLA_V100S_PCIE_32GB"),
    "kubevirt-rtx-pro-6000-blackwell-server": (
        "10de:2bb5",
        "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION",
    ),
    "kubevirt-b200": ("10de:2901", "nvidia.com/GB100_B200"),
}
OTHER_PROFILES = {
    "kubevirt-cpu",
    "metal-intel",
    "metal-amd",
    "metal-hgx-h100-8x",
    "metal-hgx-b200-8x",
    "metal-dgx-spark",
    "metal-rpi5",
    "metal-rock5b",
    "metal-jetson-nano",
    "metal-jetson-orin-nano",
}


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return path


def test_shipped_profiles_are_exactly_the_promised_set() -> None:
    names = {profile.name for profile in list_profiles()}
    assert names == set(PASSTHROUGH_GPUS) | OTHER_PROFILES
    stems = {path.stem for path in (REPO / "profiles").glob("*.yaml")}
    assert stems == names


@pytest.mark.parametrize("name", sorted(PASSTHROUGH_GPUS))
def test_passthrough_profiles_hold_one_known_gpu(name: str) -> None:
    profile = load_profile(name)
    pci_id, resource = PASSTHROUGH_GPUS[name]
    assert profile.platform == "kubevirt" and profile.passthrough
    assert profile.architecture == "amd64" and not profile.nvswitch
    assert [(gpu.id, gpu.count) for gpu in profile.gpus] == [(pci_id, 1)]
    assert lookup_gpu(pci_id).kubevirt_resource_name == resource
    decision = decide(
        [GpuRequest(id=gpu.id, count=gpu.count) for gpu in profile.gpus],
        "v1.13.9",
        passthrough=profile.passthrough,
    )
    assert decision is not None
    expected = "proprietary" if "v100" in name else "open"
    assert decision.flavour == expected


def test_machines_without_gpus() -> None:
    cpu = load_profile("kubevirt-cpu")
    assert cpu.gpus == () and cpu.passthrough
    intel, amd = load_profile("metal-intel"), load_profile("metal-amd")
    assert (intel.platform, intel.cpu_vendor, intel.passthrough) == ("metal", "intel", False)
    assert (amd.platform, amd.cpu_vendor, amd.gpus) == ("metal", "amd", ())


def test_hgx_node_gets_the_fabric_manager() -> None:
    hgx = load_profile("metal-hgx-h100-8x")
    assert [(gpu.id, gpu.count) for gpu in hgx.gpus] == [("10de:2330", 8)]
    assert hgx.nvswitch and not hgx.passthrough
    decision = decide(
        [GpuRequest(id=gpu.id, count=gpu.count) for gpu in hgx.gpus],
        "v1.12.6",
        passthrough=hgx.passthrough,
        nvswitch=hgx.nvswitch,
    )
    assert decision is not None
    assert "siderolabs/nvidia-fabricmanager-lts" in decision.extensions
    assert decision.kernel_modules[0].parameters == ()


def test_hgx_b200_gets_the_fabric_manager_and_ib_umad() -> None:
    hgx = load_profile("hgx-b200")
    assert hgx.name == "metal-hgx-b200-8x"
    assert [(gpu.id, gpu.count) for gpu in hgx.gpus] == [("10de:2901", 8)]
    assert hgx.nvswitch and not hgx.passthrough
    decision = decide(
        [GpuRequest(id=gpu.id, count=gpu.count) for gpu in hgx.gpus],
        "v1.13.9",
        passthrough=hgx.passthrough,
        nvswitch=hgx.nvswitch,
    )
    assert decision is not None
    assert "siderolabs/nvidia-fabricmanager-production" in decision.extensions
    assert [m.name for m in decision.kernel_modules][-1] == "ib_umad"


def test_dgx_spark() -> None:
    spark = load_profile("metal-dgx-spark")
    assert (spark.architecture, spark.cpu_vendor, spark.platform) == ("arm64", "arm", "metal")
    decision = decide(
        [GpuRequest(id=gpu.id) for gpu in spark.gpus],
        "v1.13.9",
        arch=spark.architecture,
        passthrough=False,
    )
    assert decision is not None
    assert (decision.flavour, decision.kernel_args) == ("proprietary", ("arm64.nobti",))


def test_a_minimal_profile_gets_defaults_and_its_file_name(tmp_path: Path) -> None:
    path = write(tmp_path, "tiny", "platform: nocloud\n")
    profile = load_profile(str(path))
    assert profile == HardwareProfile(name="tiny", platform="nocloud")
    assert (profile.architecture, profile.cpu_vendor, profile.extensions, profile.kernel_args) == (
        "amd64",
        None,
        (),
        (),
    )


def test_full_profile_with_camel_case_keys(tmp_path: Path) -> None:
    text = """\
name: storage-gpu
description: bare metal with DRBD and two L4
platform: metal
architecture: amd64
cpuVendor: amd
gpus:
  - id: 27b8
    count: 2
extensions: [siderolabs/drbd, siderolabs/amd-ucode]
kernelArgs: [console=ttyS0, "net.ifnames=0"]
"""
    profile = load_profile(str(write(tmp_path, "storage-gpu", text)))
    # An unquoted 27b8 is text to YAML (not a decimal number), so it reads as written.
    assert profile.gpus[0].id == "10de:27b8" and profile.gpus[0].count == 2
    assert profile.extensions == ("siderolabs/drbd", "siderolabs/amd-ucode")
    assert profile.kernel_args == ("console=ttyS0", "net.ifnames=0")
    assert profile.cpu_vendor == "amd" and profile.as_document()["cpuVendor"] == "amd"


def test_an_id_that_yaml_reads_as_a_number_is_refused_with_a_hint(tmp_path: Path) -> None:
    # One typing rule for profile files and a cluster file's inline hardware: 2330 is a number.
    path = write(tmp_path, "n", "platform: metal\ngpus:\n  - id: '2330'\n  - id: 2330\n")
    with pytest.raises(ProfileError) as caught:
        load_profile(str(path))
    assert str(caught.value) == (
        f"{path}:4: gpus[1].id: write the PCI ID as quoted text, e.g. '10de:2330'"
    )
    hex_written = write(tmp_path, "h", "platform: metal\ngpus:\n  - id: 0x2331\n")
    assert load_profile(str(hex_written)).gpus[0].id == "10de:2331"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("platform: metal\ngpu: []\n", r"bad\.yaml:2: gpu: unknown key; did you mean gpus\?"),
        ("platform: metal\ngpus:\n  - id: 10de:2330\n    cnt: 2\n", r"gpus\[0\]\.cnt: unknown key"),
        ("platform: mainframe\n", r"platform: 'mainframe' is not one of metal, kubevirt, "),
        ("platform: KubeVirt\n", r"platform: 'KubeVirt' is not one of .*; did you mean kubevirt\?"),
        (
            "platform: metal\narchitecture: riscv64\n",
            r"architecture: 'riscv64' is not one of amd64, arm64$",
        ),
        (
            "platform: metal\ngpus:\n  - id: 10de:2330\n    count: 0\n",
            r"bad\.yaml:4: gpus\[0\]\.count: must be 1 or more, not 0$",
        ),
        (
            "platform: metal\ngpus:\n  - id: 10de:ffff\n",
            r"gpus\[0\]: 10de:ffff is not in the NVIDIA device table; add its architecture",
        ),
        (
            "platform: metal\ngpus:\n  - id: 10de:22a3\n",
            r"10de:22a3 is an NVIDIA nvswitch function, not a GPU; set nvswitch: true",
        ),
        ("platform: metal\ngpus:\n  - id: GPU-1\n", r"gpus\[0\]\.id: 'GPU-1' is not a PCI ID"),
        (
            "platform: metal\ngpus:\n  - id: 10de:ffff\n    architecture: Voodoo\n",
            r"unknown GPU architecture 'Voodoo'",
        ),
        (
            "platform: metal\narchitecture: arm64\ncpuVendor: intel\n",
            r"cpuVendor intel does not make arm64 CPUs",
        ),
        ("platform: metal\ncpuVendor: arm\n", r"set architecture: arm64"),
        ("platform: metal\nnvswitch: true\n", r"nvswitch: true needs NVIDIA GPUs"),
        ("platform: metal\nnvswitch: maybe\n", r"bad\.yaml:2: nvswitch: write true or false, not"),
        ("platform: metal\ngpus:\n  - id: 10de:2330\n    count: '2'\n", r"count: must be a whole"),
        ("platform: metal\ndescription: 12\n", r"bad\.yaml:2: description: must be text, not the"),
        ("platform: metal\ngpus: {id: 10de:2330}\n", r"bad\.yaml:2: gpus: must be a list of GPUs"),
        ("platform: metal\nextensions: ['']\n", r"extensions: .*must not be empty"),
        ("name: Big GPU\nplatform: metal\n", r"name: .*lowercase"),
        ("- platform: metal\n", r"bad\.yaml: a hardware profile must be a YAML mapping"),
        ("platform: [metal\n", r"bad\.yaml:2: not valid YAML: while parsing a flow sequence"),
    ],
)
def test_invalid_profiles_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "bad", text)
    with pytest.raises(ProfileError, match=message):
        load_profile(str(path))


def test_unknown_id_with_declared_architecture_is_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "future",
        "platform: metal\ngpus:\n  - id: 10de:3f00\n    architecture: blackwell\n",
    )
    assert load_profile(str(path)).gpus[0].architecture == "Blackwell"


def test_other_vendors_gpus_are_kept_but_not_nvidia(tmp_path: Path) -> None:
    path = write(tmp_path, "mi300", "platform: metal\ngpus:\n  - id: '1002:74a1'\n    count: 8\n")
    profile = load_profile(str(path))
    assert profile.gpus[0].id == "1002:74a1" and profile.nvidia_gpus == ()


def test_user_directories_shadow_shipped_profiles(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    write(
        first,
        "kubevirt-l40s",
        "description: ours\nplatform: kubevirt\ngpus:\n  - id: 10de:26b9\n    count: 2\n",
    )
    write(second, "kubevirt-l40s", "platform: metal\n")
    write(second, "lab-box", "platform: proxmox\n")
    ours = load_profile("kubevirt-l40s", [first, second])
    assert ours.description == "ours" and ours.gpus[0].count == 2
    assert load_profile("lab-box", [first, second]).passthrough
    listed = {profile.name: profile for profile in list_profiles([first, second])}
    assert listed["kubevirt-l40s"].description == "ours"
    assert "lab-box" in listed and "kubevirt-t4" in listed
    assert load_profile("kubevirt-l40s").description != "ours"


def test_unknown_profile_names_the_closest_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ProfileError,
        match=r"no hardware profile named 'kubevirt-h300'; did you mean kubevirt-.*\? "
        r"\(`talos-schematic profiles` lists them all\)$",
    ):
        load_profile("kubevirt-h300")
    with pytest.raises(ProfileError, match="not a directory"):
        load_profile("x", [tmp_path / "missing"])
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(str(tmp_path / "missing.yaml"))


def test_profile_from_mapping_for_inline_blocks() -> None:
    profile = profile_from_mapping(
        {"name": "gpu", "platform": "kubevirt", "gpus": [{"id": "10de:2bb5"}]},
        "cluster.yaml: pool gpu: hardware",
    )
    assert profile.passthrough and profile.gpus[0].id == "10de:2bb5"
    with pytest.raises(
        ProfileError,
        match=r"^cluster\.yaml: pool gpu: hardware: gpus\[0\]\.id: write the PCI ID as quoted",
    ):
        profile_from_mapping(
            {"name": "gpu", "platform": "kubevirt", "gpus": [{"id": 2330}]},
            "cluster.yaml: pool gpu: hardware",
        )
    with pytest.raises(ProfileError, match=r"^inline: name: missing; add it, e\.g\. name: my-"):
        profile_from_mapping({"platform": "metal"}, "inline")


def test_json_schema_accepts_every_shipped_profile_and_rejects_unknown_keys() -> None:
    schema = profile_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert "cpuVendor" in schema["properties"] and "kernelArgs" in schema["properties"]
    assert schema["required"] == ["platform"]
    # Imported by name: jsonschema ships no type stubs.
    jsonschema = importlib.import_module("jsonschema")
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted((REPO / "profiles").glob("*.yaml")):
        validator.validate(yaml.safe_load(path.read_text()))
    assert not validator.is_valid({"platform": "metal", "gpuz": []})
    assert not validator.is_valid({"platform": "metal", "gpus": [{"id": "10de:2330", "count": 0}]})


def test_shipped_profiles_answer_to_their_aliases() -> None:
    # The names a cluster file is likely to use, without the platform prefix.
    assert load_profile("rtx-pro-6000-blackwell-server").name == (
        "kubevirt-rtx-pro-6000-blackwell-server"
    )
    assert load_profile("l40s").name == "kubevirt-l40s"
    assert load_profile("dgx-spark").name == "metal-dgx-spark"
    with pytest.raises(ProfileError, match="did you mean kubevirt-l40, kubevirt-l40s"):
        load_profile("kubevirt-l40x")


def test_every_alias_a_shipped_profile_gives_finds_it() -> None:
    # Every alias a parsed shipped profile gives finds that profile.
    parsed = {alias: p for p in list_profiles() for alias in p.aliases}
    assert "rtx-pro-6000-blackwell-server" in parsed
    for alias, profile in parsed.items():
        assert load_profile(alias) == profile, alias


def test_a_user_profile_answers_to_its_aliases(tmp_path: Path) -> None:
    (tmp_path / "rack-a-gpu.yaml").write_text(
        'aliases: [rack-a, l40s]\nplatform: kubevirt\ngpus:\n  - id: "10de:2330"\n'
    )
    found = load_profile("rack-a", [tmp_path])
    assert found.name == "rack-a-gpu" and found.gpus[0].id == "10de:2330"
    # The user's directories are searched first, their aliases too.
    assert load_profile("l40s", [tmp_path]).name == "rack-a-gpu"
    assert load_profile("l40s").name == "kubevirt-l40s"
    with pytest.raises(ProfileError, match="did you mean rack-a"):
        load_profile("rack-b", [tmp_path])


def test_a_user_profile_name_wins_over_another_users_alias(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("aliases: [b]\nplatform: metal\n")
    (tmp_path / "b.yaml").write_text("platform: nocloud\n")
    assert load_profile("b", [tmp_path]).platform == "nocloud"
    assert load_profile("a", [tmp_path]).platform == "metal"
