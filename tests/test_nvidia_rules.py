"""The per-release NVIDIA rules table, and the decisions it drives: GB10, NVLink-5 HGX, the
GeForce parameter of older open modules, GPUDirect opt-ins."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from schematic.errors import NvidiaError
from schematic.facts import nvidia_rules
from schematic.facts.catalog import extension_releases
from schematic.facts.nvidia import GpuRequest, KernelModule, NvidiaDecision, decide, lookup_gpu
from schematic.facts.release_facts import drivers_of, using_facts
from schematic.facts.talos import TalosVersion
from schematic.plan.release import release_of

SHARED = Path(__file__).resolve().parents[2] / "shared"
PACKAGED = resources.files("schematic.data").joinpath(nvidia_rules.RULES_FILE).read_text()
NVIDIA_FOUR = ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"]


def decision(gpus: list[tuple[str, int]], talos: str, **options: object) -> NvidiaDecision:
    requests = [GpuRequest(id=pci_id, count=count) for pci_id, count in gpus]
    found = decide(requests, talos, **options)  # type: ignore[arg-type]
    assert found is not None
    return found


def module_names(found: NvidiaDecision) -> list[str]:
    return [module.name for module in found.kernel_modules]


@pytest.fixture
def rules_text(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Swap the packaged table for an edited copy: append rows to the yielded list."""
    extra: list[str] = []
    monkeypatch.setattr(
        nvidia_rules,
        "rules_table",
        lambda: nvidia_rules.parse_rules(PACKAGED + "".join(f"{row}\n" for row in extra)),
    )
    yield extra


# --- the table ----------------------------------------------------------------------------------


def test_packaged_table_parses_and_is_reviewed_through_the_newest_catalogued_release() -> None:
    rows = nvidia_rules.rules_table()
    assert {row.rule for row in rows} == {
        "gb10-flavour",
        "gb10-kernel-args",
        "gb10-cuda",
        "gds-module",
        "open-unsupported-gpus",
        "nvlink5-kernel-modules",
        "extension",
    }
    assert str(nvidia_rules.reviewed_through()) == "v1.14.0"


def test_extension_rows_agree_with_the_catalogue() -> None:
    """Every release a row says offers a family offers it in the packaged catalogue, and the
    first release of each row is the first the catalogue lists it in."""
    for row in nvidia_rules.rules_table():
        if row.rule != "extension":
            continue
        names = (f"siderolabs/{row.value}", f"siderolabs/{row.value}-lts")
        releases = sorted(
            {TalosVersion.parse(v) for name in names for v in extension_releases(name)}
        )
        assert releases, row.value
        assert str(releases[0]) == row.first, row.value
        assert releases[-1] == TalosVersion.parse(row.last), row.value


def test_nvidia_fs_is_offered_by_no_catalogued_release() -> None:
    # So the table has no row for it yet; the opt-in is refused until one is added.
    assert extension_releases("siderolabs/nvidia-fs") == ()
    assert not any(row.value == "nvidia-fs" for row in nvidia_rules.rules_table())


@pytest.mark.skipif(
    not (SHARED / "reference" / "talos" / "extensions-by-version.json").is_file(),
    reason="shared extension listing not available",
)
def test_extension_rows_agree_with_the_shared_listing() -> None:
    listing = json.loads((SHARED / "reference/talos/extensions-by-version.json").read_text())
    offered = {entry["version"]: set(entry["systemExtensions"]) for entry in listing["versions"]}
    for row in nvidia_rules.rules_table():
        if row.rule != "extension":
            continue
        for version, names in offered.items():
            inside = row.covers_release(TalosVersion.parse(version))
            has = any(name.startswith(f"siderolabs/{row.value}") for name in names)
            assert inside == has, (row.value, version)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("talos\tv1.2.0\tv1.3.0\tgb10-colour\tx\tagreed\tn", "unknown rule 'gb10-colour'"),
        ("talos\tv1.2.0\tv1.3.0\tgb10-flavour\tx\tmaybe\tn", "agreed or conflicting"),
        ("kernel\tv1.2.0\tv1.3.0\tgb10-flavour\tx\tagreed\tn", "scope must be talos"),
        ("talos\tv1.4.0\tv1.3.0\tgb10-flavour\tx\tagreed\tn", "from is after to"),
        ("talos\t1.x\tv1.3.0\tgb10-flavour\tx\tagreed\tn", "not a Talos version"),
        ("talos\tv1.2.0\tgb10-flavour", "3 cells, not 7"),
    ],
)
def test_malformed_rows_name_their_line(line: str, message: str) -> None:
    header = "\t".join(("scope", "from", "to", "rule", "value", "evidence", "note"))
    with pytest.raises(ValueError, match=message) as caught:
        nvidia_rules.parse_rules(f"# comment\n{header}\n{line}\n")
    assert str(caught.value).startswith("nvidia-rules.tsv:3:")


def test_release_lookup_covers_ranges_gaps_and_newer_releases() -> None:
    inside = nvidia_rules.release_rule("gb10-flavour", "v1.13.9")
    assert inside is not None and inside.value == "proprietary" and not inside.fallback
    assert nvidia_rules.release_rule("gb10-flavour", "v1.14.0-rc.1") == inside
    newer = nvidia_rules.release_rule("gb10-flavour", "v1.16.2")
    assert newer is not None and newer.row == inside.row
    assert "newer than the NVIDIA rules table (reviewed through v1.14.0)" in newer.fallback
    # A newer patch of a minor line whose row ends earlier keeps that row.
    patch = nvidia_rules.release_rule("gb10-flavour", "v1.12.12")
    assert patch is not None and patch.value == "none" and "v1.12.11" in patch.fallback
    assert nvidia_rules.release_rule("extension", "v1.11.6", value="nvidia-gdrdrv-device") is None


def test_driver_lookup() -> None:
    old = nvidia_rules.driver_rule("open-unsupported-gpus", "535.247.01")
    assert old is not None and old.value == "NVreg_OpenRmEnableUnsupportedGpus=1"
    assert nvidia_rules.driver_rule("open-unsupported-gpus", "545.23.05") is not None
    assert nvidia_rules.driver_rule("open-unsupported-gpus", "545.23.06") is None
    assert nvidia_rules.driver_rule("open-unsupported-gpus", "580.178.04") is None


# --- GB10 from the table --------------------------------------------------------------------------


def test_gb10_answer_per_release_carries_the_verify_note() -> None:
    found = decision([("10de:2e12", 1)], "v1.13.9", arch="arm64", passthrough=False)
    assert (found.flavour, found.kernel_args) == ("proprietary", ("arm64.nobti",))
    assert len(found.notes) == 1
    assert found.notes[0].startswith("verify on hardware (gb10-flavour): conflicting evidence")
    assert "580.173.02" in found.notes[0]
    with pytest.raises(NvidiaError, match=r"only from v1\.13\.0.*conflicting evidence"):
        decision([("10de:2e12", 1)], "v1.12.9", arch="arm64", passthrough=False)


def test_a_new_release_row_changes_the_gb10_answer_without_code(rules_text: list[str]) -> None:
    with using_facts(None, "v1.14.0"):
        assumed = drivers_of("v1.15.0")
    before = decision(
        [("10de:2e12", 1)], "v1.15.0", arch="arm64", passthrough=False, drivers=assumed
    )
    assert before.flavour == "proprietary"
    assert any("newer than the NVIDIA rules table" in note for note in before.notes)
    rules_text += [
        "talos\tv1.15.0\tv1.15.3\tgb10-flavour\topen\tagreed\ta fixed kernel",
        "talos\tv1.15.0\tv1.15.3\tgb10-kernel-args\t\tagreed\tBTI no longer matters",
    ]
    after = decision(
        [("10de:2e12", 1)], "v1.15.0", arch="arm64", passthrough=False, drivers=assumed
    )
    assert (after.flavour, after.kernel_args, after.notes) == ("open", (), ())
    assert after.extensions == (
        "siderolabs/nvidia-container-toolkit-production",
        "siderolabs/nvidia-open-gpu-kernel-modules-production",
    )
    # Older releases keep their rows.
    assert decision([("10de:2e12", 1)], "v1.13.9", arch="arm64").flavour == "proprietary"


def test_a_planned_release_carries_its_rule_answers_and_the_decision_reads_them() -> None:
    release = release_of("v1.13.9")
    assert release.nvidia_rules == nvidia_rules.rules_for(TalosVersion.parse("v1.13.9"))
    assert release.nvidia_rules.gb10_flavour is not None
    assert release.nvidia_rules.gb10_flavour.value == "proprietary"
    assert release.nvidia_rules.offers("nvidia-open-gpu-kernel-modules")
    # The decision reads the answers it is handed, not the table again by release text.
    open_row = dataclasses.replace(release.nvidia_rules.gb10_flavour.row, value="open")
    handed = dataclasses.replace(
        release.nvidia_rules, gb10_flavour=nvidia_rules.RuleAnswer(open_row)
    )
    gb10 = [GpuRequest(id="10de:2e12", count=1)]
    read = decide(gb10, "v1.13.9", arch="arm64", rules=release.nvidia_rules)
    told = decide(gb10, "v1.13.9", arch="arm64", rules=handed)
    assert read is not None and told is not None
    assert (read.flavour, told.flavour) == ("proprietary", "open")


# --- NVLink-5 HGX ---------------------------------------------------------------------------


@pytest.mark.parametrize("pci_id", ["10de:2901", "10de:3182"])  # B200, B300 SXM6
@pytest.mark.parametrize("tier", ["lts", "production"])
def test_nvlink5_hgx_gets_fabric_manager_of_the_tier_and_ib_umad(pci_id: str, tier: str) -> None:
    found = decision([(pci_id, 8)], "v1.13.9", passthrough=False, nvswitch=True, tier=tier)
    assert found.tier == tier
    assert f"siderolabs/nvidia-fabricmanager-{tier}" in found.extensions
    assert f"siderolabs/nvidia-open-gpu-kernel-modules-{tier}" in found.extensions
    assert module_names(found) == [*NVIDIA_FOUR, "ib_umad"]
    reason = next(r for r in found.reasons if r.startswith("ib_umad:"))
    assert "NV_WARN_NOTHING_TO_DO" in reason and "CUDA_ERROR_SYSTEM_NOT_READY" in reason


def test_eight_blackwell_hgx_gpus_on_metal_imply_the_nvswitches() -> None:
    found = decision([("10de:2901", 8)], "v1.13.9", passthrough=False)
    assert "siderolabs/nvidia-fabricmanager-production" in found.extensions
    assert module_names(found)[-1] == "ib_umad"
    assert any(reason.startswith("NVSwitches assumed: 8 Blackwell") for reason in found.reasons)
    # Fewer GPUs, or a VM, infer nothing.
    assert "ib_umad" not in module_names(decision([("10de:2901", 4)], "v1.13.9", passthrough=False))
    in_vm = decision([("10de:2901", 8)], "v1.13.9")
    assert "ib_umad" not in module_names(in_vm)
    assert not any("fabricmanager" in name for name in in_vm.extensions)


@pytest.mark.parametrize("pci_id", ["10de:2330", "10de:20b2"])  # H100 SXM5, A100 SXM4
def test_hopper_and_older_hgx_keep_the_fabric_manager_without_ib_umad(pci_id: str) -> None:
    found = decision([(pci_id, 8)], "v1.13.9", passthrough=False, nvswitch=True)
    assert "siderolabs/nvidia-fabricmanager-production" in found.extensions
    assert module_names(found) == NVIDIA_FOUR


def test_grace_superchips_are_not_nvlink5_hgx() -> None:
    assert lookup_gpu("10de:2901").nvlink5_hgx and lookup_gpu("10de:3182").nvlink5_hgx
    assert not lookup_gpu("10de:2941").nvlink5_hgx  # GB200
    assert not lookup_gpu("10de:31c2").nvlink5_hgx  # GB300
    assert not lookup_gpu("10de:2bb5").nvlink5_hgx  # RTX PRO 6000 Blackwell Server


# --- GeForce and workstation GPUs on older open modules ---------------------------------------


@pytest.mark.parametrize(
    ("pci_id", "talos", "options", "parameters"),
    [
        # RTX 3090 on the 535 LTS driver: the open modules need the parameter.
        ("10de:2204", "v1.11.6", {"tier": "lts"}, ["NVreg_OpenRmEnableUnsupportedGpus=1"]),
        # Talos 1.7: one 535 driver; the VM's NVLink parameter stays first.
        (
            "10de:2204",
            "v1.7.7",
            {"passthrough": True},
            ["NVreg_NvLinkDisable=1", "NVreg_OpenRmEnableUnsupportedGpus=1"],
        ),
        # RTX A6000 (workstation) likewise.
        ("10de:2230", "v1.11.6", {"tier": "lts"}, ["NVreg_OpenRmEnableUnsupportedGpus=1"]),
        # Production 570 on the same release: the parameter is ignored there, so none.
        ("10de:2204", "v1.11.6", {}, []),
        # A data-centre A10 on 535 needs nothing.
        ("10de:2236", "v1.11.6", {"tier": "lts"}, []),
        # The proprietary modules drive GeForce on any driver.
        ("10de:2204", "v1.11.6", {"tier": "lts", "flavour": "proprietary"}, []),
    ],
)
def test_open_modules_before_545_get_the_parameter_for_geforce_and_workstation(
    pci_id: str, talos: str, options: dict[str, object], parameters: list[str]
) -> None:
    options = {"passthrough": False} | options
    found = decision([(pci_id, 1)], talos, **options)
    assert found.kernel_modules[0] == KernelModule("nvidia", tuple(parameters))


def test_client_gpu_names() -> None:
    client = ["10de:2204", "10de:2230", "10de:1eb1", "10de:2684"]  # 3090, A6000, RTX 4000, 4090
    datacentre = ["10de:1eb8", "10de:2236", "10de:26b9", "10de:2330"]  # T4, A10, L40S, H100
    assert [lookup_gpu(i).client for i in client] == [True] * 4
    assert [lookup_gpu(i).client for i in datacentre] == [False] * 4


# --- GPUDirect opt-ins ----------------------------------------------------------------------------


def test_gds_before_1_14_is_refused_naming_the_release_that_brings_it() -> None:
    with pytest.raises(NvidiaError, match=r"no nvidia-fs module \(it arrives in v1\.14\.0"):
        decision([("10de:2901", 1)], "v1.13.9", passthrough=False, gds=True)


@pytest.mark.parametrize("flavour", ["open", "proprietary"])
def test_gds_from_1_14_loads_nvidia_fs_with_no_extension_of_its_own(flavour: str) -> None:
    found = decision([("10de:2330", 1)], "v1.14.0", passthrough=False, gds=True, flavour=flavour)
    assert module_names(found) == [*NVIDIA_FOUR, "nvidia_fs"]
    # The kernel-module and toolkit extensions only: the module rides in the first.
    assert len(found.extensions) == 2
    assert not any("nvidia-fs" in name for name in found.extensions)


def test_gb10_cuda_does_not_work_on_1_13_and_1_14() -> None:
    for talos in ("v1.13.9", "v1.14.0"):
        found = decision([("10de:2e12", 1)], talos, arch="arm64", passthrough=False)
        (defect,) = found.defects
        assert "CONFIG_ARM_SMMU_V3_SVA" in defect and "siderolabs/talos#14087" in defect
        assert found.to_json()["doesNotWork"] == [defect]
    # Other GPUs on the same release have no defect.
    assert decision([("10de:2330", 1)], "v1.14.0").defects == ()


def test_a_release_row_saying_gb10_cuda_works_clears_the_defect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fixed = PACKAGED.replace("\tgb10-cuda\tbroken\t", "\tgb10-cuda\tworks\t")
    assert fixed != PACKAGED
    monkeypatch.setattr(nvidia_rules, "rules_table", lambda: nvidia_rules.parse_rules(fixed))
    assert decision([("10de:2e12", 1)], "v1.14.0", arch="arm64", passthrough=False).defects == ()


def test_peermem_loads_nvidia_peermem_with_the_open_modules_only() -> None:
    found = decision([("10de:2330", 8)], "v1.13.9", passthrough=False, peermem=True)
    assert module_names(found) == [*NVIDIA_FOUR, "nvidia_peermem"]
    assert found.extensions == (
        "siderolabs/nvidia-container-toolkit-production",
        "siderolabs/nvidia-open-gpu-kernel-modules-production",
    )
    with pytest.raises(NvidiaError, match=r"nvidia_peermem .* open kernel modules"):
        decision([("10de:2330", 1)], "v1.13.9", flavour="proprietary", peermem=True)


def test_all_opt_ins_on_an_nvlink5_node_keep_a_stable_order() -> None:
    found = decision([("10de:2901", 8)], "v1.13.9", passthrough=False, gdrdrv=True, peermem=True)
    assert module_names(found) == [*NVIDIA_FOUR, "gdrdrv", "nvidia_peermem", "ib_umad"]
