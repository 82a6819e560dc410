"""The NVIDIA device table, lookups and the flavour / tier decision."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from schematic.errors import GpuRefusal, NvidiaError, UnknownDeviceError
from schematic.facts.nvidia import (
    ARCHITECTURES,
    NVIDIA_VENDOR,
    Gpu,
    GpuRequest,
    KernelModule,
    NvidiaDecision,
    all_gpus,
    decide,
    describe_nvidia_extension,
    describe_pci_function,
    fabric_of,
    is_nvidia_display_function,
    lookup_gpu,
    normalise_pci_id,
    nvidia_extension,
    preferred_tier,
    usual_architecture,
)
from schematic.facts.release_facts import drivers_of, using_facts
from schematic.facts.talos import driver_row

SHARED = Path(__file__).resolve().parents[2] / "shared"
MINORS = [f"v1.{minor}.0" for minor in range(5, 15)]
LOAD_ORDER = ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"]


def one(pci_id: str, talos: str, **options: object) -> NvidiaDecision:
    decision = decide([GpuRequest(id=pci_id)], talos, **options)  # type: ignore[arg-type]
    assert decision is not None
    return decision


def summary(decision: NvidiaDecision) -> tuple[str, str | None, str]:
    return decision.flavour, decision.tier, decision.driver


# --- the device table -------------------------------------------------------------------------


def test_table_holds_955_gpus_each_with_a_known_architecture() -> None:
    gpus = all_gpus()
    assert len(gpus) == 955
    assert len({gpu.id for gpu in gpus}) == 955
    assert {gpu.architecture for gpu in gpus} == set(ARCHITECTURES)
    assert all(gpu.id.startswith("10de:") and gpu.id == gpu.id.lower() for gpu in gpus)


def test_every_shared_device_classifies_to_its_architecture() -> None:
    facts = SHARED / "data" / "nvidia-devices.tsv"
    if not facts.is_file():
        pytest.skip("shared data not present")
    with facts.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) == 955
    for row in rows:
        gpu = lookup_gpu(row["device_id"])
        assert (gpu.architecture, gpu.chip, gpu.name) == (
            row["architecture"],
            row["chip"],
            row["name"],
        )
        assert gpu.first_open_driver == (row["first_open_driver"] or None)


def expected_flavour(gpu: Gpu) -> str | None:
    """The generation rules restated independently: None for unsupported generations."""
    if gpu.architecture in ("Fermi", "Kepler", "Rubin"):
        return None
    if gpu.chip == "GB20B":
        return "proprietary"  # GB10 on Talos >= 1.13
    device = int(gpu.id[5:], 16)
    grace = (
        any(
            low <= device <= high
            for low, high in ((0x2340, 0x237F), (0x2940, 0x297F), (0x31C0, 0x31FF))
        )
        or device == 0x31A1
    )
    if gpu.architecture == "Blackwell" or grace:
        return "open"
    if gpu.architecture in ("Maxwell", "Pascal", "Volta"):
        assert 0x1340 <= device <= 0x1DFF
        return "proprietary"
    return "open"


def test_every_device_gets_the_flavour_of_its_generation() -> None:
    counts: dict[str | None, int] = {}
    for gpu in all_gpus():
        wanted = expected_flavour(gpu)
        counts[wanted] = counts.get(wanted, 0) + 1
        request = [GpuRequest(id=gpu.id)]
        if wanted is None:
            with pytest.raises(NvidiaError, match=gpu.architecture):
                decide(request, "v1.13.9")
            continue
        decision = decide(request, "v1.13.9", arch=usual_architecture([gpu]))
        assert decision is not None
        assert decision.flavour == wanted, gpu.id
        assert decision.gpus == (gpu,)
        if gpu.architecture in ("Maxwell", "Pascal", "Volta"):
            assert (decision.tier, decision.driver) == ("lts", "580.178.04")
    assert counts == {None: 319, "open": 415, "proprietary": 221}


def test_pre_turing_ids_are_exactly_the_documented_range() -> None:
    pre = {gpu.id for gpu in all_gpus() if gpu.architecture in ("Maxwell", "Pascal", "Volta")}
    in_range = {gpu.id for gpu in all_gpus() if 0x1340 <= gpu.device <= 0x1DFF}
    assert pre == in_range


# --- lookups ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["10de:2bb5", "0x2bb5", "2BB5", "10DE:2BB5", "[10de:2bb5]", "0x10de:0x2bb5"]
)
def test_lookup_by_pci_id_in_any_spelling(text: str) -> None:
    gpu = lookup_gpu(text)
    assert gpu.id == "10de:2bb5"
    assert gpu.name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert (gpu.chip, gpu.architecture, gpu.first_open_driver) == (
        "GB202",
        "Blackwell",
        "575.57.08",
    )


@pytest.mark.parametrize(
    ("name", "pci_id"),
    [
        ("L40S", "10de:26b9"),
        ("l40s", "10de:26b9"),
        ("NVIDIA L40S", "10de:26b9"),
        ("L40", "10de:26b5"),
        ("L4", "10de:27b8"),
        ("A10", "10de:2236"),
        ("A30", "10de:20b7"),
        ("T4", "10de:1eb8"),
        ("Tesla T4", "10de:1eb8"),
        ("H200", "10de:2335"),
        ("H200 NVL", "10de:233b"),
        ("A100 SXM4 80GB", "10de:20b2"),
        ("A100-SXM4-80GB", "10de:20b2"),
        ("RTX PRO 6000 Blackwell Server", "10de:2bb5"),
        ("RTX PRO 6000 Blackwell Server Edition", "10de:2bb5"),
        ("GB10", "10de:2e12"),
        ("V100S PCIe 32GB", "10de:1df6"),
    ],
)
def test_lookup_by_name(name: str, pci_id: str) -> None:
    assert lookup_gpu(name).id == pci_id


def test_ambiguous_name_lists_the_candidates_with_their_ids() -> None:
    with pytest.raises(UnknownDeviceError) as caught:
        lookup_gpu("RTX PRO 6000 Blackwell")
    message = str(caught.value)
    assert "ambiguous" in message
    for candidate in ("10de:2bb1", "10de:2bb4", "10de:2bb5"):
        assert candidate in message
    assert "10de:2bb2" not in message  # the 6000D is another name
    with pytest.raises(UnknownDeviceError, match=r"10de:2901 NVIDIA B200, 10de:2909 NVIDIA B200"):
        lookup_gpu("B200")


def test_a_hex_looking_name_is_still_a_name() -> None:
    with pytest.raises(UnknownDeviceError, match=r"'A100' is ambiguous: 10de:20b0"):
        lookup_gpu("A100")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10de:ffff", "PCI ID 10de:ffff is not in the NVIDIA device table"),
        ("Voodoo 5", "GPU name 'Voodoo 5' is not in the NVIDIA device table"),
        ("1002:740f", "vendor 1002 is not NVIDIA"),
        ("10de:1aef", "audio function"),
        ("10de:22a3", "nvswitch function"),
    ],
)
def test_lookup_refusals(text: str, message: str) -> None:
    with pytest.raises(UnknownDeviceError, match=message):
        lookup_gpu(text)


def test_normalise_pci_id() -> None:
    assert normalise_pci_id("0X2BB5") == "10de:2bb5"
    assert normalise_pci_id("L40S") is None
    assert normalise_pci_id("10de:2bb") is None


def test_non_gpu_functions_are_known_as_such() -> None:
    audio = describe_pci_function("10de:22ba")
    switch = describe_pci_function("1af1")
    assert audio is not None and not isinstance(audio, Gpu) and audio.kind == "audio"
    assert switch is not None and not isinstance(switch, Gpu) and switch.kind == "nvswitch"
    assert describe_pci_function("10de:1ad6") is not None  # TU102 USB 3.1
    assert describe_pci_function("10de:22e8") is not None  # GB202 HD-Audio, beside a 2bb5
    assert describe_pci_function("10de:ffff") is None


@pytest.mark.parametrize(
    ("pci_id", "resource"),
    [
        ("10de:2236", "nvidia.com/GA102GL_A10"),
        ("10de:2bb5", "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION"),
        ("10de:1eb8", "nvidia.com/TU104GL_TESLA_T4"),
        ("10de:20b7", "nvidia.com/GA100GL_A30_PCIE"),
        ("10de:2335", "nvidia.com/GH100_H200_SXM_141GB"),
        ("10de:20f1", "nvidia.com/GA100_A100_PCIE_40GB"),
        ("10de:2342", "nvidia.com/GH100_GH200_120GB___480GB"),
        ("10de:20b3", "nvidia.com/GA100_A100SXM64GB"),
    ],
)
def test_kubevirt_resource_name(pci_id: str, resource: str) -> None:
    assert lookup_gpu(pci_id).kubevirt_resource_name == resource


@pytest.mark.parametrize(
    ("vendor", "klass", "subclass", "expected"),
    [
        ("0x10de", "0x0302", None, True),
        ("10de", "0300", None, True),
        ("0x10de", "0x03", "0x02", True),
        ("0x10de", "0x03", "0x00", True),
        ("0x10de", "0x0403", None, False),  # HD-Audio
        ("0x10de", "0x0680", None, False),  # NVSwitch bridge
        ("0x10de", "0x0c03", None, False),  # USB
        ("0x1a03", "0x0300", None, False),  # a BMC's VGA
        ("0x10de", "0x03", "0x80", False),
    ],
)
def test_display_function(vendor: str, klass: str, subclass: str | None, expected: bool) -> None:
    assert is_nvidia_display_function(vendor, klass, subclass) is expected


# --- extension names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "family", "flavour", "tier"),
    [
        ("siderolabs/nvidia-open-gpu-kernel-modules-lts", "kernel-modules", "open", "lts"),
        ("nvidia-open-gpu-kernel-modules", "kernel-modules", "open", None),
        (
            "siderolabs/nonfree-kmod-nvidia-production",
            "kernel-modules",
            "proprietary",
            "production",
        ),
        ("siderolabs/nonfree-kmod-nvidia", "kernel-modules", "proprietary", None),
        ("siderolabs/nvidia-container-toolkit-production", "container-toolkit", None, "production"),
        ("siderolabs/nvidia-fabricmanager-lts", "fabric-manager", None, "lts"),
        ("siderolabs/nvidia-fabricmanager", "fabric-manager", None, None),
        ("siderolabs/nvidia-gdrdrv-device", "gdrdrv", None, None),
    ],
)
def test_describe_nvidia_extension(
    name: str, family: str, flavour: str | None, tier: str | None
) -> None:
    described = describe_nvidia_extension(name)
    assert described is not None
    assert (described.family, described.flavour, described.tier) == (family, flavour, tier)
    assert described.name == "siderolabs/" + name.removeprefix("siderolabs/")


@pytest.mark.parametrize(
    "name",
    [
        "siderolabs/qemu-guest-agent",
        "siderolabs/nvidia-open-gpu-kernel-modules-beta",
        "siderolabs/amdgpu",
    ],
)
def test_other_extensions_are_not_nvidia(name: str) -> None:
    assert describe_nvidia_extension(name) is None


def test_every_published_nvidia_extension_is_described() -> None:
    listing = SHARED / "reference" / "talos" / "extensions-by-version.json"
    if not listing.is_file():
        pytest.skip("shared reference data not present")
    names = {
        name
        for entry in json.loads(listing.read_text())["versions"]
        for name in entry["systemExtensions"]
        if "nvidia" in name
    }
    assert len(names) == 13
    for name in names:
        described = describe_nvidia_extension(name)
        assert described is not None, name
        assert (
            nvidia_extension(described.family, flavour=described.flavour, tier=described.tier)
            == name
        )


# --- the decision: flavour and tier per Talos minor ---------------------------------------------

L40S_BY_MINOR = {
    "v1.5.0": ("open", None, "535.54.03"),
    "v1.6.0": ("open", None, "535.129.03"),
    "v1.7.0": ("open", None, "535.129.03"),
    "v1.8.0": ("open", "production", "550.90.07"),
    "v1.9.0": ("open", "production", "550.127.08"),
    "v1.10.0": ("open", "production", "570.124.06"),
    "v1.11.0": ("open", "production", "570.172.08"),
    "v1.12.0": ("open", "lts", "580.105.08"),
    "v1.13.0": ("open", "production", "595.58.03"),
    "v1.14.0": ("open", "production", "595.91.07"),
}
VOLTA_BY_MINOR = {
    "v1.5.0": ("proprietary", None, "535.54.03"),
    "v1.6.0": ("proprietary", None, "535.129.03"),
    "v1.7.0": ("proprietary", None, "535.129.03"),
    "v1.8.0": ("proprietary", "production", "550.90.07"),
    "v1.9.0": ("proprietary", "production", "550.127.08"),
    "v1.10.0": ("proprietary", "production", "570.124.06"),
    "v1.11.0": ("proprietary", "production", "570.172.08"),
    "v1.12.0": ("proprietary", "lts", "580.105.08"),
    "v1.13.0": ("proprietary", "lts", "580.126.20"),
    "v1.14.0": ("proprietary", "lts", "580.178.04"),
}
RTX_PRO_6000_BY_MINOR = {  # 10de:2bb5 first appears in 575.57.08
    "v1.12.0": ("open", "lts", "580.105.08"),
    "v1.13.0": ("open", "production", "595.58.03"),
    "v1.14.0": ("open", "production", "595.91.07"),
}
B200_BY_MINOR = {  # 10de:2901 first appears in 570.86.15
    "v1.10.0": ("open", "production", "570.124.06"),
    "v1.11.0": ("open", "production", "570.172.08"),
    "v1.12.0": ("open", "lts", "580.105.08"),
    "v1.13.0": ("open", "production", "595.58.03"),
    "v1.14.0": ("open", "production", "595.91.07"),
}


@pytest.mark.parametrize("talos", MINORS)
@pytest.mark.parametrize(
    ("pci_id", "table"),
    [
        ("10de:26b9", L40S_BY_MINOR),
        ("10de:1db1", VOLTA_BY_MINOR),
        ("10de:2bb5", RTX_PRO_6000_BY_MINOR),
        ("10de:2901", B200_BY_MINOR),
    ],
)
def test_flavour_tier_and_driver_for_every_minor(
    pci_id: str, table: dict[str, tuple[str, str | None, str]], talos: str
) -> None:
    if talos not in table:
        with pytest.raises(NvidiaError, match=r"does not know .*use Talos v1\.1[02]\.0 or newer"):
            one(pci_id, talos)
        return
    assert summary(one(pci_id, talos)) == table[talos]


@pytest.mark.parametrize("talos", MINORS)
def test_extension_names_follow_the_talos_naming(talos: str) -> None:
    l40s = one("10de:26b9", talos)
    volta = one("10de:1db1", talos)
    if talos in ("v1.5.0", "v1.6.0", "v1.7.0"):
        assert l40s.extensions == (
            "siderolabs/nvidia-container-toolkit",
            "siderolabs/nvidia-open-gpu-kernel-modules",
        )
        assert volta.extensions == (
            "siderolabs/nonfree-kmod-nvidia",
            "siderolabs/nvidia-container-toolkit",
        )
    else:
        assert l40s.extensions == (
            f"siderolabs/nvidia-container-toolkit-{l40s.tier}",
            f"siderolabs/nvidia-open-gpu-kernel-modules-{l40s.tier}",
        )
        assert volta.extensions == (
            f"siderolabs/nonfree-kmod-nvidia-{volta.tier}",
            f"siderolabs/nvidia-container-toolkit-{volta.tier}",
        )


def test_decided_extensions_exist_in_every_published_release() -> None:
    listing = SHARED / "reference" / "talos" / "extensions-by-version.json"
    if not listing.is_file():
        pytest.skip("shared reference data not present")
    for entry in json.loads(listing.read_text())["versions"]:
        version, offered = entry["version"], set(entry["systemExtensions"])
        for pci_id in ("10de:26b9", "10de:2330", "10de:1db1"):
            try:
                decision = decide(
                    [GpuRequest(id=pci_id)], version, passthrough=False, nvswitch=True
                )
            except NvidiaError:
                assert pci_id == "10de:1db1" and version < "v1.5"  # no proprietary modules yet
                continue
            assert decision is not None
            assert set(decision.extensions) <= offered, (version, pci_id)


def test_talos_before_1_5_has_only_the_open_modules() -> None:
    for talos in ("v1.2.0", "v1.3.7", "v1.4.8"):
        decision = one("10de:1eb8", talos)
        assert summary(decision) == (
            "open",
            None,
            driver_row(talos).row.lts_driver,
        )
        with pytest.raises(NvidiaError, match=r"no proprietary NVIDIA modules .* v1\.5\.0"):
            one("10de:1eb8", talos, flavour="proprietary")
        with pytest.raises(NvidiaError, match=r"need them; use Talos v1\.5\.0 or newer"):
            one("10de:1db1", talos)


def test_production_before_tiers_is_refused_and_lts_means_the_single_driver() -> None:
    with pytest.raises(NvidiaError, match=r"no production tier \(tiers arrive in v1\.8\.0\)"):
        one("10de:26b9", "v1.7.7", tier="production")
    decision = one("10de:26b9", "v1.7.7", tier="lts")
    assert summary(decision) == ("open", None, "535.129.03")
    assert any("no tier" in reason for reason in decision.reasons)


# --- the decision: the documented examples and refusals -----------------------------------------


def test_rtx_pro_6000_on_talos_1_12_is_lts_580_not_production_570() -> None:
    decision = one("10de:2bb5", "v1.12.6")
    assert summary(decision) == ("open", "lts", "580.126.20")
    assert any(
        "570.211.01 does not know 10de:2bb5" in reason and "575.57.08" in reason
        for reason in decision.reasons
    )


def test_pre_turing_on_talos_1_13_lands_on_lts_580() -> None:
    for pci_id in ("10de:1db1", "10de:1b06", "10de:13c2"):  # Volta, Pascal, Maxwell
        decision = one(pci_id, "v1.13.4")
        assert summary(decision) == ("proprietary", "lts", "580.159.04")
        assert decision.extensions == (
            "siderolabs/nonfree-kmod-nvidia-lts",
            "siderolabs/nvidia-container-toolkit-lts",
        )


def test_the_newest_driver_wins_and_production_on_a_tie() -> None:
    # No release ties today; a table row with equal drivers would pick production.
    assert preferred_tier({"lts": "600.1.2", "production": "600.1.2"}) == "production"
    assert preferred_tier({"lts": "580.95.05", "production": "580.105.08"}) == "production"
    assert preferred_tier({"lts": "600.1.2", "production": "595.45.04"}) == "lts"
    assert preferred_tier({"lts": "580.95.05"}) == "lts"


@pytest.mark.parametrize(
    ("pci_ids", "talos", "options", "refusal"),
    [
        (["10de:2bb5"], "v1.13.9", {"flavour": "proprietary"}, GpuRefusal.FLAVOUR),
        (["10de:2bb5", "10de:1db1"], "v1.13.9", {}, GpuRefusal.FLAVOUR),  # open-only + Volta
        (["10de:1db4"], "v1.13.9", {"tier": "production"}, GpuRefusal.DRIVER),
        (["10de:2bb5"], "v1.11.0", {}, GpuRefusal.DRIVER),  # 570 predates Blackwell Server
        (["10de:1021"], "v1.13.9", {}, GpuRefusal.UNSUPPORTED_GPU),  # Kepler
        (["10de:1db1"], "v1.4.0", {}, GpuRefusal.NOT_OFFERED),  # no proprietary modules yet
        (["10de:2330"], "v1.7.0", {"tier": "production"}, GpuRefusal.NOT_OFFERED),
        (["10de:2330"], "v1.13.9", {"gds": True}, GpuRefusal.NOT_OFFERED),
        (
            ["10de:2330"],
            "v1.13.9",
            {"gdrdrv": True, "flavour": "proprietary"},
            GpuRefusal.NEEDS_OPEN,
        ),
        (["10de:1db1"], "v1.13.9", {"peermem": True}, GpuRefusal.NEEDS_OPEN),
        (["10de:1db1"], "v1.13.9", {"flavour": "weird"}, GpuRefusal.SETTING),
        (["10de:ffff"], "v1.13.9", {}, GpuRefusal.UNKNOWN_DEVICE),
    ],
)
def test_every_refusal_says_why_by_its_type(
    pci_ids: list[str], talos: str, options: dict[str, Any], refusal: GpuRefusal
) -> None:
    with pytest.raises(NvidiaError) as raised:
        decide([GpuRequest(id=pci_id) for pci_id in pci_ids], talos, **options)
    assert raised.value.refusal is refusal


@pytest.mark.parametrize(
    ("pci_id", "talos", "options", "message"),
    [
        (
            "10de:2bb5",
            "v1.13.9",
            {"flavour": "proprietary"},
            r"flavour proprietary cannot drive every GPU: 10de:2bb5 .* needs open",
        ),
        ("10de:2342", "v1.13.9", {"flavour": "proprietary"}, r"10de:2342 .* needs open"),  # GH200
        (
            "10de:1b06",
            "v1.12.0",
            {"flavour": "open"},
            r"flavour open cannot drive every GPU: 10de:1b06 .* needs proprietary",
        ),
        (
            "10de:1db1",
            "v1.13.0",
            {"tier": "production"},
            r"595\.58\.03 does not drive 10de:1db1 .* set tier to lts \(580\.126\.20\)",
        ),
        (
            "10de:2bb5",
            "v1.12.0",
            {"tier": "production"},
            r"570\.195\.03 does not know 10de:2bb5 .* set tier to lts",
        ),
        (
            "10de:2bb5",
            "v1.11.0",
            {},
            r"no NVIDIA driver on Talos v1\.11\.0 drives every GPU"
            r".*use Talos v1\.12\.0 or newer \(lts 580\.105\.08\)",
        ),
        ("10de:1004", "v1.13.9", {}, r"Kepler GPU.*remove it"),
        ("10de:06c0", "v1.13.9", {}, r"Fermi GPU"),
        ("10de:3021", "v1.14.0", {}, r"Rubin GPU.*no published driver supports Rubin"),
        ("10de:2e12", "v1.12.11", {"arch": "arm64"}, r"works on Talos only from v1\.13\.0"),
        ("10de:2e12", "v1.13.9", {"arch": "amd64"}, r"arm64 system; set the architecture to arm64"),
        (
            "10de:2e12",
            "v1.13.9",
            {"arch": "arm64", "flavour": "open"},
            r"10de:2e12 .* needs proprietary",
        ),
        (
            "10de:ffff",
            "v1.13.9",
            {},
            r"PCI ID 10de:ffff is not in the NVIDIA device table.*architecture",
        ),
        (
            "10de:26b9",
            "v1.13.9",
            {"flavour": "closed"},
            r"flavour must be auto, open or proprietary",
        ),
        ("10de:26b9", "v1.13.9", {"tier": "beta"}, r"tier must be auto, lts or production"),
        ("10de:26b9", "v1.13.9", {"arch": "riscv64"}, r"architecture must be amd64 or arm64"),
        (
            "10de:26b9",
            "v1.11.0",
            {"gdrdrv": True},
            r"nvidia-gdrdrv-device arrives in Talos v1\.12\.0",
        ),
        (
            "10de:1db1",
            "v1.12.0",
            {"gdrdrv": True},
            r"GPUDirect RDMA .* needs the open kernel modules",
        ),
    ],
)
def test_refusals_say_why_and_what_to_change(
    pci_id: str, talos: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(NvidiaError, match=message):
        one(pci_id, talos, **options)


def test_mixed_pascal_and_blackwell_has_no_common_flavour() -> None:
    with pytest.raises(
        NvidiaError, match=r"no NVIDIA kernel-module flavour drives every GPU"
    ) as caught:
        decide([GpuRequest(id="10de:1b06"), GpuRequest(id="10de:2bb5")], "v1.13.9")
    assert "10de:2bb5 (NVIDIA RTX PRO 6000 Blackwell Server Edition) needs open" in str(
        caught.value
    )
    assert "10de:1b06" in str(caught.value) and "needs proprietary" in str(caught.value)


def test_mixed_volta_and_turing_share_proprietary_lts() -> None:
    decision = decide(
        [GpuRequest(id="10de:1db4", count=2), GpuRequest(id="10de:1eb8", count=2)], "v1.13.9"
    )
    assert decision is not None
    assert summary(decision) == ("proprietary", "lts", "580.178.04")
    assert [gpu.id for gpu in decision.gpus] == ["10de:1db4", "10de:1eb8"]


def test_mixed_hopper_and_blackwell_take_open_and_a_tier_that_knows_both() -> None:
    decision = decide([GpuRequest(id="10de:2330"), GpuRequest(id="10de:2bb5")], "v1.12.0")
    assert decision is not None
    assert summary(decision) == ("open", "lts", "580.105.08")


def test_repeated_ids_are_one_gpu_kind() -> None:
    decision = decide([GpuRequest(id="26b9"), GpuRequest(id="10de:26b9")], "v1.13.9")
    assert decision is not None and len(decision.gpus) == 1


def test_forced_choices_that_can_drive_the_gpus_are_kept() -> None:
    assert summary(one("10de:26b9", "v1.13.9", flavour="proprietary", tier="lts")) == (
        "proprietary",
        "lts",
        "580.178.04",
    )
    assert summary(one("10de:2bb5", "v1.13.9", tier="lts")) == ("open", "lts", "580.178.04")


def test_gb10_on_talos_1_13_is_proprietary_with_bti_off() -> None:
    decision = one("10de:2e12", "v1.13.9", arch="arm64", passthrough=False)
    assert decision.flavour == "proprietary"
    assert decision.kernel_args == ("arm64.nobti",)
    assert decision.extensions == (
        "siderolabs/nonfree-kmod-nvidia-production",
        "siderolabs/nvidia-container-toolkit-production",
    )
    assert usual_architecture([lookup_gpu("10de:2e12")]) == "arm64"
    assert usual_architecture([lookup_gpu("10de:2330")]) == "amd64"


def test_open_only_part_without_a_listed_driver_uses_its_kins_first_driver() -> None:
    assert lookup_gpu("10de:2909").first_open_driver is None  # HGX B200 168GB
    with pytest.raises(NvidiaError, match=r"needs 570\.86\.15 or newer \(no driver lists it"):
        one("10de:2909", "v1.9.6")
    assert summary(one("10de:2909", "v1.10.0")) == ("open", "production", "570.124.06")


def test_turing_to_hopper_are_not_held_to_the_readme_listing() -> None:
    assert lookup_gpu("10de:1eb8").first_open_driver == "575.51.02"
    assert summary(one("10de:1eb8", "v1.11.0")) == ("open", "production", "570.172.08")


# --- the decision: what the node gets -----------------------------------------------------------


def test_kubevirt_passthrough_node() -> None:
    decision = one("10de:2335", "v1.12.6")
    assert decision.kernel_modules == (
        KernelModule(name="nvidia", parameters=("NVreg_NvLinkDisable=1",)),
        KernelModule(name="nvidia_uvm"),
        KernelModule(name="nvidia_drm"),
        KernelModule(name="nvidia_modeset"),
    )
    assert decision.sysctls == {"net.core.bpf_jit_harden": "1"}
    assert decision.kernel_args == ()
    assert "siderolabs/nvidia-fabricmanager-lts" not in decision.extensions


def test_bare_metal_without_nvswitch_loads_plain_modules() -> None:
    decision = one("10de:26b9", "v1.13.9", passthrough=False)
    assert [m.name for m in decision.kernel_modules] == LOAD_ORDER
    assert all(m.parameters == () for m in decision.kernel_modules)
    assert decision.sysctls == {}
    assert not any("fabricmanager" in name for name in decision.extensions)


def test_fabric_manager_only_on_bare_metal_nvswitch_systems_and_of_the_same_tier() -> None:
    hgx = decide([GpuRequest(id="10de:2330", count=8)], "v1.12.6", passthrough=False, nvswitch=True)
    assert hgx is not None
    assert hgx.extensions == (
        "siderolabs/nvidia-container-toolkit-lts",
        "siderolabs/nvidia-fabricmanager-lts",
        "siderolabs/nvidia-open-gpu-kernel-modules-lts",
    )
    in_vm = one("10de:2330", "v1.12.6", nvswitch=True)
    assert not any("fabricmanager" in name for name in in_vm.extensions)
    assert any("managed by the host" in reason for reason in in_vm.reasons)
    old = one("10de:2330", "v1.7.0", passthrough=False, nvswitch=True)
    assert "siderolabs/nvidia-fabricmanager" in old.extensions


def test_gdrdrv_on_request() -> None:
    decision = one("10de:2330", "v1.12.0", gdrdrv=True)
    assert "siderolabs/nvidia-gdrdrv-device" in decision.extensions
    assert [m.name for m in decision.kernel_modules] == [*LOAD_ORDER, "gdrdrv"]
    assert "gdrdrv" not in [m.name for m in one("10de:2330", "v1.12.0").kernel_modules]


def test_non_gpu_functions_are_ignored_and_no_gpu_means_nothing() -> None:
    assert decide([GpuRequest(id="10de:22ba"), GpuRequest(id="10de:22a3")], "v1.13.9") is None
    assert decide([], "v1.13.9") is None
    decision = decide([GpuRequest(id="10de:2236"), GpuRequest(id="10de:1aef")], "v1.13.9")
    assert decision is not None
    assert [gpu.id for gpu in decision.gpus] == ["10de:2236"]
    assert any("10de:1aef" in reason and "not a GPU" in reason for reason in decision.reasons)


def test_unknown_id_with_a_declared_architecture() -> None:
    decision = decide([GpuRequest(id="10de:3f00", architecture="blackwell")], "v1.13.9")
    assert decision is not None
    assert decision.gpus[0].architecture == "Blackwell"
    assert summary(decision) == ("open", "production", "595.91.07")
    volta = decide([GpuRequest(id="10de:3f01", architecture="Volta")], "v1.13.9")
    assert volta is not None and summary(volta) == ("proprietary", "lts", "580.178.04")
    with pytest.raises(NvidiaError, match="unknown GPU architecture 'Voodoo'"):
        decide([GpuRequest(id="10de:3f02", architecture="Voodoo")], "v1.13.9")


def test_declared_architecture_never_overrides_the_table() -> None:
    decision = decide([GpuRequest(id="10de:1db1", architecture="Hopper")], "v1.13.9")
    assert decision is not None and decision.flavour == "proprietary"
    assert any("the device table says Volta" in reason for reason in decision.reasons)


def test_release_beyond_the_table_is_refused_unless_drivers_are_assumed() -> None:
    with pytest.raises(NvidiaError, match=r"drivers of Talos v1\.15\.0 are unknown"):
        one("10de:26b9", "v1.15.0")
    with using_facts(None, "v1.14.0"):
        assumed = drivers_of("v1.15.0")
    decision = one("10de:26b9", "v1.15.0", drivers=assumed)
    assert summary(decision) == ("open", "production", "595.91.07")
    said = "assuming the NVIDIA drivers of v1.14.0 for Talos v1.15.0 (--assume-drivers-of)"
    assert said in decision.reasons


def test_json_shape() -> None:
    document = one("10de:2bb5", "v1.12.0").to_json()
    assert list(document) == [
        "gpus",
        "flavour",
        "tier",
        "driver",
        "extensions",
        "kernelModules",
        "sysctls",
        "kernelArgs",
        "reasons",
        "notes",
        "doesNotWork",
    ]
    assert document["gpus"] == [
        {
            "id": "10de:2bb5",
            "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "chip": "GB202",
            "architecture": "Blackwell",
        }
    ]
    assert document["kernelModules"][0] == {
        "name": "nvidia",
        "parameters": ["NVreg_NvLinkDisable=1"],
    }
    assert document["kernelModules"][1] == {"name": "nvidia_uvm", "parameters": []}
    assert json.loads(json.dumps(document)) == document


def test_the_fabric_manager_runs_on_bare_metal_with_nvswitches_said_or_implied() -> None:
    b200, h100 = lookup_gpu("10de:2901"), lookup_gpu("10de:2330")
    implied = fabric_of([(b200, 8)], nvswitch=False, passthrough=False)
    assert (implied.manager, implied.nvlink5, implied.inferred, implied.hgx_count) == (
        True,
        True,
        True,
        8,
    )
    assert not fabric_of([(b200, 4)], nvswitch=False, passthrough=False).manager
    said = fabric_of([(h100, 8)], nvswitch=True, passthrough=False)
    assert (said.manager, said.nvlink5, said.inferred) == (True, False, False)
    # A VM's passed-through GPUs leave the switches to the host.
    assert not fabric_of([(b200, 8)], nvswitch=True, passthrough=True).manager


def _constants_in_the_package() -> dict[object, list[str]]:
    """Every str or int constant written in the package's code, and the modules writing it."""
    package = Path(__file__).resolve().parents[1] / "schematic"
    found: dict[object, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
                found.setdefault(node.value, []).append(path.relative_to(package).as_posix())
    return found


def test_nvidia_vendor_id_and_proprietary_extension_are_written_once() -> None:
    # A second spelling (0x10DE, "0x10de", the bare extension name) drifts from the first.
    constants = _constants_in_the_package()
    vendor = [
        module
        for value, modules in constants.items()
        if value in (0x10DE, "10de", "0x10de", "10DE", "0x10DE")
        for module in modules
    ]
    assert vendor == ["facts/nvidia.py"]
    assert constants.get("nonfree-kmod-nvidia") == ["facts/nvidia.py"]
    assert NVIDIA_VENDOR == "10de"
    assert nvidia_extension("kernel-modules", flavour="proprietary", tier="lts") == (
        "siderolabs/nonfree-kmod-nvidia-lts"
    )


@pytest.mark.parametrize(
    ("copied", "pci_id"),
    [
        # tests/data/lspci-nnvv.hgx-b200.txt: the ID decides where two devices share the name.
        (
            "1b:00.0 3D controller [0302]: NVIDIA Corporation GB100 [B200] [10de:2901] (rev a1)",
            "10de:2901",
        ),
        ("NVIDIA Corporation GB100 [B200] [10de:2901] (rev a1)", "10de:2901"),
        # lspci without its name database prints the device ID alone.
        ("NVIDIA Corporation Device 2bb5", "10de:2bb5"),
        # tests/data/triage/class4-healthy-hgx-h100/nvidia-smi-L.txt
        (
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-4039dfe4-0c97-4b1e-683e-eb7d42699053)",
            "10de:2330",
        ),
    ],
)
def test_a_line_copied_from_lspci_or_nvidia_smi_names_its_gpu(copied: str, pci_id: str) -> None:
    assert lookup_gpu(copied).id == pci_id


def test_a_copied_line_of_another_vendor_is_still_refused() -> None:
    with pytest.raises(UnknownDeviceError):
        lookup_gpu("01:00.0 VGA compatible controller [0300]: Advanced Micro Devices [1002:744c]")
