"""Comparing a cluster's plan with its plan at another Talos release (schematic.plan.upgrade)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from schematic.errors import CatalogError, GpuRefusal
from schematic.factory.client import ExtensionInfo
from schematic.factory.live import LiveCatalogue, check_live_catalogue
from schematic.facts.catalog import talos_versions
from schematic.facts.nvidia import describe_nvidia_extension
from schematic.inputs.cluster_file import parse_cluster
from schematic.inputs.cluster_values import ClusterFile
from schematic.output.render.cozystack import tool_values
from schematic.plan.cluster import ClusterPlan, plan_cluster
from schematic.plan.release import target_release
from schematic.plan.upgrade import (
    COZYSTACK_IMMUTABLE_CONFIG_ISSUE,
    PoolChange,
    PoolRefusal,
    UpgradeReport,
    compare_plans,
    plan_at,
    plan_target,
)

NEWEST = talos_versions()[-1]


def cluster_of(text: str) -> ClusterFile:
    return parse_cluster(text, "cluster.yaml")


def report_for(text: str, to: str) -> UpgradeReport:
    cluster = cluster_of(text)
    old = plan_cluster(cluster, source="cluster.yaml")
    target = plan_target(cluster, to, source="cluster.yaml", stay_on=cluster.talos.version)
    return compare_plans(old, target, values_of=tool_values)


def pool_named(report: UpgradeReport, name: str) -> PoolChange:
    return next(pool for pool in report.pools if pool.name == name)


VOLTA_ON_PRODUCTION = """\
cluster: c
talos: {version: v1.12.6}
pools:
  - name: v100
    profile: kubevirt-v100-pcie-16gb
    nvidia: {tier: production}
  - name: cpu
    profile: kubevirt-cpu
"""


def test_volta_on_production_breaks_from_1_12_to_1_13_with_the_fixes() -> None:
    report = report_for(VOLTA_ON_PRODUCTION, "v1.13.9")
    v100 = pool_named(report, "v100")
    assert report.breaking
    assert v100.status == "breaking"
    assert v100.schematic_after is None
    assert v100.driver_before is not None
    assert (v100.driver_before.tier, v100.driver_before.driver) == ("production", "570.211.01")
    assert v100.refusal is not None
    assert "595.91.07 does not drive 10de:1db4" in v100.refusal.reason
    fixes = v100.refusal.fixes
    assert fixes[0] == (
        "pin nvidia.tier: lts on this pool (Talos v1.13.9 then runs proprietary lts 580.178.04)"
    )
    assert "stay on Talos v1.12.6 for now" in fixes
    assert any(fix.startswith("replace the card") for fix in fixes)
    # The CPU pool of the same file follows without any change but the Talos image itself,
    # which is still a change: the new disk replaces its machines.
    cpu = pool_named(report, "cpu")
    assert cpu.status == "changed"
    assert cpu.replaced[0].startswith("the boot-disk URL changes (Talos v1.12.6 → v1.13.9)")
    assert cpu.schematic_after == cpu.schematic_before
    assert [action.kind for action in cpu.actions] == ["image"]
    assert cpu.actions[0].command.endswith(f"/{cpu.schematic_before}:v1.13.9")


def test_only_a_refusal_of_the_card_itself_suggests_replacing_it() -> None:
    # The driver of the target's production tier dropped Volta: another card is a way out.
    v100 = pool_named(report_for(VOLTA_ON_PRODUCTION, "v1.13.9"), "v100")
    assert v100.refusal is not None and v100.refusal.gpu_refusal is GpuRefusal.DRIVER
    # Back to a release without proprietary modules: the release lacks them, not the card.
    text = "cluster: c\ntalos: {version: v1.5.5}\npools:\n"
    text += "  - name: v100\n    profile: kubevirt-v100-pcie-16gb\n"
    older = pool_named(report_for(text, "v1.4.8"), "v100")
    assert older.status == "breaking" and older.refusal is not None
    assert older.refusal.gpu_refusal is GpuRefusal.NOT_OFFERED
    assert "no proprietary NVIDIA modules" in older.refusal.reason
    assert older.refusal.fixes == ("stay on Talos v1.5.5 for now",)


def test_the_same_volta_pool_pinned_to_lts_follows() -> None:
    pinned = VOLTA_ON_PRODUCTION.replace("tier: production", "tier: lts")
    report = report_for(pinned, "v1.13.9")
    assert not report.breaking
    v100 = pool_named(report, "v100")
    assert v100.driver_before is not None and v100.driver_after is not None
    assert (v100.driver_before.driver, v100.driver_after.driver) == ("580.126.20", "580.178.04")
    # Talos 1.13 no longer needs the BPF sysctl; the patch drops it.
    assert any("net.core.bpf_jit_harden=1 removed" in line for line in v100.machine_config)


def test_a_pinned_flavour_the_target_lacks_is_fixed_by_letting_it_choose() -> None:
    # Talos 1.4 has no proprietary modules: the pin breaks the pool, and letting the flavour
    # follow the GPU (open for Hopper) plans it. A pool on "auto" is not told to pin "auto".
    text = """\
cluster: c
talos: {version: v1.12.6}
pools:
  - name: h100
    profile: metal-hgx-h100-8x
    nvidia: {flavour: proprietary}
"""
    h100 = pool_named(report_for(text, "v1.4.8"), "h100")
    assert h100.refusal is not None
    assert h100.refusal.fixes[0] == (
        "pin nvidia.flavour: auto on this pool (Talos v1.4.8 then runs open 530.41.03)"
    )
    v100 = pool_named(report_for(VOLTA_ON_PRODUCTION, "v1.13.9"), "v100")
    assert v100.refusal is not None
    assert not any("nvidia.flavour" in fix for fix in v100.refusal.fixes)


def test_a_tier_move_is_a_rename_of_both_nvidia_extensions_and_says_why() -> None:
    text = """\
cluster: c
talos: {version: v1.12.6}
pools:
  - name: l4
    profile: kubevirt-l4
"""
    l4 = pool_named(report_for(text, "v1.13.9"), "l4")
    assert l4.status == "changed"
    assert l4.schematic_after != l4.schematic_before
    assert (l4.added, l4.removed) == ((), ())
    assert l4.renamed == (
        (
            "siderolabs/nvidia-container-toolkit-lts",
            "siderolabs/nvidia-container-toolkit-production",
        ),
        (
            "siderolabs/nvidia-open-gpu-kernel-modules-lts",
            "siderolabs/nvidia-open-gpu-kernel-modules-production",
        ),
    )
    for old, new in l4.renamed:
        old_kind, new_kind = describe_nvidia_extension(old), describe_nvidia_extension(new)
        assert old_kind is not None and new_kind is not None
        assert old_kind.family == new_kind.family
    assert l4.driver_after is not None and l4.driver_after.tier == "production"
    assert any(note.startswith("tier production") for note in l4.driver_notes)
    assert [action.kind for action in l4.actions] == ["image", "patch"]


def test_talos_1_8_suffixes_show_as_renames() -> None:
    text = """\
cluster: c
talos: {version: v1.7.7}
pools:
  - name: a10
    profile: kubevirt-a10
"""
    a10 = pool_named(report_for(text, "v1.8.4"), "a10")
    # Talos 1.8 offers production 550 beside LTS 535; the newer driver wins.
    assert a10.driver_after is not None and a10.driver_after.tier == "production"
    assert a10.driver_before is not None and a10.driver_before.tier is None
    assert dict(a10.renamed) == {
        "siderolabs/nvidia-container-toolkit": "siderolabs/nvidia-container-toolkit-production",
        "siderolabs/nvidia-open-gpu-kernel-modules": (
            "siderolabs/nvidia-open-gpu-kernel-modules-production"
        ),
    }


def test_talos_1_14_moves_kernel_modules_to_documents_and_keeps_the_schematic() -> None:
    text = """\
cluster: c
talos: {version: v1.13.9}
pools:
  - name: l40s
    profile: kubevirt-l40s
"""
    l40s = pool_named(report_for(text, NEWEST), "l40s")
    assert l40s.schematic_after == l40s.schematic_before
    assert l40s.modules_after == l40s.modules_before
    assert l40s.machine_config == (
        "kernel modules written as KernelModuleConfig documents (Talos 1.14 and later; "
        "machine.kernel.modules is deprecated there, still merged)",
    )
    # The module set is the same, so Cozystack need not recreate the machines.
    assert "recreate" not in [action.kind for action in l40s.actions]


def test_a_changed_module_set_needs_recreated_machines_on_cozystack() -> None:
    text = """\
cluster: c
talos: {version: v1.13.9}
pools:
  - name: l40s
    profile: kubevirt-l40s
    nvidia: {gdrdrv: true}
"""
    cluster = cluster_of(text)
    old = plan_cluster(cluster_of(text.replace("    nvidia: {gdrdrv: true}\n", "")))
    target = plan_target(cluster, "v1.13.9")
    l40s = compare_plans(old, target, values_of=tool_values).pools[0]
    assert l40s.added == ("siderolabs/nvidia-gdrdrv-device",)
    assert l40s.modules_after[-1].name == "gdrdrv"
    recreate = [action for action in l40s.actions if action.kind == "recreate"]
    assert len(recreate) == 1
    # Same Talos release, new schematic: a new image, whose roll recreates the machines.
    assert "image" in [action.kind for action in l40s.actions]
    assert "the roll the new image starts recreates them" in recreate[0].text
    assert "new set" in recreate[0].text


def test_a_module_change_with_the_same_image_needs_machines_recreated_by_hand() -> None:
    text = """\
cluster: c
talos: {version: v1.13.9}
pools:
  - name: l40s
    profile: kubevirt-l40s
"""
    old = plan_cluster(cluster_of(text))
    changed = text + "    kernelModules: [{name: nvidia}, {name: nvidia_uvm}]\n"
    l40s = compare_plans(
        old, plan_target(cluster_of(changed), "v1.13.9"), values_of=tool_values
    ).pools[0]
    assert l40s.schematic_after == l40s.schematic_before
    assert [action.kind for action in l40s.actions] == ["recreate", "patch"]
    assert "with the same image" in l40s.actions[0].text
    assert COZYSTACK_IMMUTABLE_CONFIG_ISSUE in l40s.actions[0].text
    assert l40s.machine_config[0].startswith("kernel modules: nvidia (NVreg_NvLinkDisable=1)")


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("v1.6", "reaches only workers created from then on"),
        ("main", "reaches only workers created from then on"),
        ("v1.7", "do not settle how Cozystack v1.7.x's chart names the TalosConfigTemplate"),
    ],
)
def test_a_module_change_reaches_the_workers_as_the_chart_names_its_template(
    target: str, says: str
) -> None:
    text = f"cluster: c\ncozystack: {{version: {target}}}\ntalos: {{version: v1.13.9}}\n"
    text += "pools:\n  - name: l40s\n    profile: kubevirt-l40s\n"
    changed = text + "    kernelModules: [{name: nvidia}, {name: nvidia_uvm}]\n"
    old = plan_cluster(cluster_of(text))
    (action, _) = (
        compare_plans(old, plan_target(cluster_of(changed), "v1.13.9"), values_of=tool_values)
        .pools[0]
        .actions
    )
    assert says in action.text


def test_a_chart_naming_its_template_by_hash_rolls_the_pool() -> None:
    import dataclasses

    from schematic.facts.chart_targets import HASHED_TEMPLATE_PR, chart_target

    hashed = dataclasses.replace(chart_target("main"), machine_config_changes="rolls")
    text = "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - name: l40s\n"
    text += "    profile: kubevirt-l40s\n"
    changed = text + "    kernelModules: [{name: nvidia}]\n"
    old = plan_cluster(cluster_of(text))
    report = compare_plans(
        old, plan_target(cluster_of(changed), "v1.13.9"), hashed, values_of=tool_values
    )
    action = report.pools[0].actions[0]
    assert HASHED_TEMPLATE_PR in action.text and "replaces every worker" in action.text
    assert "by hand" not in action.text and "scale the pool" not in action.text


def test_the_same_release_changes_nothing_and_asks_nothing() -> None:
    text = """\
cluster: c
talos: {version: v1.13.9}
pools:
  - name: cpu
    profile: kubevirt-cpu
"""
    cpu = report_for(text, "v1.13.9").pools[0]
    assert cpu.status == "unchanged"
    assert cpu.actions == ()


def test_a_release_beyond_the_tables_uses_the_last_row_and_says_so() -> None:
    newest = talos_versions()[-1]
    major, minor, _ = newest.lstrip("v").split(".")
    beyond = f"v{major}.{int(minor) + 1}.2"
    release, planned_as, note = target_release(beyond)
    assert (release, planned_as) == (beyond, newest)
    assert f"newer than the packaged tables (newest {newest})" in note
    report = report_for(
        "cluster: c\ntalos: {version: v1.13.9}\npools: [{name: cpu, profile: kubevirt-cpu}]\n",
        beyond,
    )
    assert report.talos_after == beyond
    assert report.notes == (note,)
    # The installer carries the release asked for, not the table's.
    assert report.pools[0].installer_after is not None
    assert report.pools[0].installer_after.endswith(f":{beyond}")


def test_a_newer_patch_of_a_known_minor_says_which_release_it_stands_for() -> None:
    newest = talos_versions()[-1]
    head, _, patch = newest.rpartition(".")
    later = f"{head}.{int(patch) + 3}"
    assert target_release(later)[1] == later
    assert newest in target_release(later)[2]


@pytest.mark.parametrize("text", ["1.x", "v1.14.0-rc.1", "v1.1.0"])
def test_not_a_plannable_release(text: str) -> None:
    with pytest.raises(CatalogError):
        target_release(text)


def test_plan_at_another_release_plans_the_whole_file() -> None:
    cluster = cluster_of(VOLTA_ON_PRODUCTION.replace("v1.12.6", "v1.13.9"))
    plan, note = plan_at(cluster, "v1.12.6")
    assert isinstance(plan, ClusterPlan)
    assert note == ""
    assert plan.talos.version == "v1.12.6"
    assert all(pool.talos.version == "v1.12.6" for pool in plan.pools)


def test_an_extension_gone_from_the_live_catalogue_breaks_the_pool() -> None:
    text = """\
cluster: c
talos: {version: v1.13.9}
pools:
  - name: storage
    profile: kubevirt-cpu
    extensions: [siderolabs/iscsi-tools]
  - name: cpu
    profile: kubevirt-cpu
"""
    cluster = cluster_of(text)
    target = plan_target(cluster, NEWEST)
    offered = ExtensionInfo(name="siderolabs/qemu-guest-agent", ref="r", digest="d")
    live = LiveCatalogue("https://factory.example.test", NEWEST, (offered,))
    checked = check_live_catalogue(target, live)
    storage, cpu = checked.pools
    assert isinstance(storage, PoolRefusal)
    assert "offers no extension siderolabs/iscsi-tools" in storage.reason
    assert not isinstance(cpu, PoolRefusal)
    report = compare_plans(plan_cluster(cluster), checked, values_of=tool_values)
    assert [pool.status for pool in report.pools] == ["breaking", "changed"]


def test_pools_only_on_one_side_are_removed_or_added() -> None:
    cluster = cluster_of(VOLTA_ON_PRODUCTION)
    old = plan_cluster(cluster)
    target = plan_target(cluster, "v1.12.6")
    cpu = target.pools[1]
    report = compare_plans(
        replace(old, pools=old.pools[:1]), replace(target, pools=(cpu,)), values_of=tool_values
    )
    assert [(pool.name, pool.status) for pool in report.pools] == [
        ("v100", "removed"),
        ("cpu", "added"),
    ]
    removed, added = report.pools
    assert (removed.schematic_after, added.schematic_before) == (None, None)
    assert added.added == ("siderolabs/qemu-guest-agent",)
    assert not report.breaking


def test_pools_of_one_shape_are_compared_once_and_reported_under_their_own_names() -> None:
    text = """\
cluster: c
talos: {version: v1.12.6}
pools:
  - {name: a, profile: kubevirt-l4, maxReplicas: 1}
  - {name: b, profile: kubevirt-l4, maxReplicas: 2}
  - {name: old-a, profile: kubevirt-v100-pcie-16gb, nvidia: {tier: production}}
  - {name: old-b, profile: kubevirt-v100-pcie-16gb, nvidia: {tier: production}}
"""
    report = report_for(text, "v1.13.9")
    assert [pool.name for pool in report.pools] == ["a", "b", "old-a", "old-b"]
    a, b, old_a, old_b = report.pools
    patches = [
        [action.command for action in pool.actions if action.kind == "patch"] for pool in (a, b)
    ]
    assert patches == [
        ["talosctl patch machineconfig --nodes <node> --patch @a/machine-config-patch.yaml"],
        ["talosctl patch machineconfig --nodes <node> --patch @b/machine-config-patch.yaml"],
    ]
    assert replace(a, name="b", actions=b.actions) == b
    assert old_a.refusal is not None and old_b.refusal is not None
    assert (old_a.refusal.name, old_b.refusal.name) == ("old-a", "old-b")
    assert old_a.refusal.reason == old_b.refusal.reason


SECUREBOOT_BESIDE_PLAIN = """\
cluster: c
talos: {version: v1.12.6}
pools:
  - name: plain
    profile: metal-intel
  - name: secure
    profile: metal-intel
    secureboot: {enabled: true}
"""
# A Volta pool on the production tier, which the 1.13 driver drops: the target plan of the
# file then has a pool that breaks.
_BREAKING_POOL = (
    "  - name: v100\n    profile: kubevirt-v100-pcie-16gb\n    nvidia: {tier: production}\n"
)


@pytest.mark.parametrize("breaking", [False, True], ids=["alone", "beside-a-breaking-pool"])
def test_a_secureboot_pool_sharing_a_plain_pools_schematic_upgrades_from_secureboot(
    breaking: bool,
) -> None:
    # SecureBoot alone does not change the schematic: both pools share one ID, yet only the
    # SecureBoot one installs from the factory's installer-secureboot image.
    text = SECUREBOOT_BESIDE_PLAIN + (_BREAKING_POOL if breaking else "")
    report = report_for(text, "v1.13.9")
    assert report.breaking is breaking
    plain, secure = pool_named(report, "plain"), pool_named(report, "secure")
    assert plain.schematic_after == secure.schematic_after
    assert secure.installer_before is not None and secure.installer_after is not None
    assert "/installer-secureboot/" in secure.installer_before
    assert "/installer-secureboot/" in secure.installer_after
    assert secure.installer_after.endswith(f"/{secure.schematic_after}:v1.13.9")
    assert "/installer/" in str(plain.installer_after)
    commands = [action.command for action in secure.actions if action.kind == "image"]
    assert commands == [f"talosctl upgrade --nodes <node> --image {secure.installer_after}"]


def _revision(old_text: str, new_text: str, to: str) -> UpgradeReport:
    """Two revisions of a cluster file compared (what upgrade --base does)."""
    old = plan_cluster(cluster_of(old_text), source="cluster.yaml")
    return compare_plans(old, plan_target(cluster_of(new_text), to), values_of=tool_values)


def test_a_changed_mirror_alone_still_changes_the_patch() -> None:
    # Same release, same schematic: only the registry mirror moves. No line names it by
    # kind, so the report points at the patch rather than calling the pool unchanged.
    text = (
        "cluster: c\ntalos: {version: v1.13.9, registryMirrors: "
        "{docker.io: {endpoints: [https://MIRROR]}}}\npools:\n  - {name: p, profile: metal-intel}\n"
    )
    before, after = text.replace("MIRROR", "a.example"), text.replace("MIRROR", "b.example")
    (pool,) = _revision(before, after, "v1.13.9").pools
    assert pool.status == "changed"
    assert pool.machine_config == (
        "the machine-config patch changes (compare machine-config-patch.yaml)",
    )
    (same,) = _revision(before, before, "v1.13.9").pools
    assert same.status == "unchanged"


def test_a_platform_change_on_talos_1_14_is_not_called_the_1_14_installer_move() -> None:
    # Both sides on 1.14: the repository follows the platform the pool boots, and the note
    # about 1.14's platform installers (for a pool crossing into 1.14) does not apply.
    text = "cluster: c\ntalos: {version: v1.14.0}\npools:\n  - {name: p, profile: PROFILE}\n"
    metal, kubevirt = (
        text.replace("PROFILE", "metal-intel"),
        text.replace("PROFILE", "kubevirt-cpu"),
    )
    (pool,) = _revision(metal, kubevirt, "v1.14.0").pools
    line = next(line for line in pool.output if line.startswith("installer repository"))
    assert line == (
        "installer repository factory.talos.dev/metal-installer → "
        "factory.talos.dev/openstack-installer"
    )
    crossing = text.replace("PROFILE", "kubevirt-cpu").replace("v1.14.0", "v1.13.9")
    (moved,) = _revision(crossing, kubevirt, "v1.14.0").pools
    assert any("from Talos 1.14 a node upgrades" in line for line in moved.output)


def test_upgrading_to_talos_1_14_0_says_why_the_installer_repository_changes() -> None:
    # v1.14.0 itself is the first release whose nodes upgrade from the platform's installer:
    # the report says so there, for the pool's own platform, and not for a repository the
    # cluster file names.
    text = """\
cluster: c
talos: {version: v1.13.9}
pools:
  - name: cpu
    profile: kubevirt-cpu
  - name: metal
    hardware: {platform: metal}
"""
    report = report_for(text, "v1.14.0")
    because = (
        ": from Talos 1.14 a node upgrades from the factory's installer for the platform it booted"
    )
    for pool, repository in (("cpu", "openstack-installer"), ("metal", "metal-installer")):
        (line,) = [x for x in pool_named(report, pool).output if x.startswith("installer")]
        assert line.startswith(
            f"installer repository factory.talos.dev/installer → factory.talos.dev/{repository}"
            + because
        ), line
    named = text.replace(
        "{version: v1.13.9}", "{version: v1.13.9, installerRepository: r.example/i}"
    )
    assert pool_named(report_for(named, "v1.14.0"), "cpu").output == ()
