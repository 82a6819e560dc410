"""The cluster file model and its per-pool resolution."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from schematic.errors import ClusterFileError
from schematic.facts.nvidia import KernelModule
from schematic.inputs.cluster_file import parse_cluster
from schematic.plan.cluster import ClusterPlan, PoolPlan, plan_cluster

COZYSTACK_DEFAULT_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
NVIDIA_LOAD_ORDER = ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"]


def cluster_text(pools: str, *, talos: str = "v1.13.9", top: str = "") -> str:
    return f"cluster: demo\ntalos:\n  version: {talos}\n{top}pools:\n" + textwrap.indent(
        textwrap.dedent(pools), "  "
    )


def plan(pools: str, **kwargs: str) -> ClusterPlan:
    text = cluster_text(pools, **kwargs)
    return plan_cluster(parse_cluster(text, "cluster.yaml"), source="cluster.yaml")


def only_pool(pools: str, **kwargs: str) -> PoolPlan:
    (pool,) = plan(pools, **kwargs).pools
    return pool


def error_of(pools: str, **kwargs: str) -> str:
    with pytest.raises(ClusterFileError) as caught:
        plan(pools, **kwargs)
    return str(caught.value)


# --- the file -----------------------------------------------------------------------------------


def test_defaults_for_factory_and_installer() -> None:
    cluster = parse_cluster(cluster_text("- name: cpu\n  profile: kubevirt-cpu\n"), "c.yaml")
    assert cluster.talos.image_factory_url == "https://factory.talos.dev"
    assert cluster.talos.installer_repository == "factory.talos.dev/installer"
    assert cluster.nvidia.flavour is None and cluster.nvidia.tier is None


def test_trailing_slash_is_dropped_and_version_gets_its_v() -> None:
    text = (
        "cluster: demo\ntalos:\n  version: 1.13.9\n  imageFactoryURL: https://f.example/\n"
        "pools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    )
    cluster = parse_cluster(text, "c.yaml")
    assert cluster.talos.version == "v1.13.9"
    assert cluster.talos.image_factory_url == "https://f.example"


def test_unknown_top_level_key_suggests_the_right_one() -> None:
    text = "cluster: demo\ntalos: {version: v1.13.9, imageFactoryUrl: x}\npools: []\n"
    with pytest.raises(ClusterFileError) as caught:
        parse_cluster(text, "c.yaml")
    assert str(caught.value) == (
        "c.yaml:2: talos.imageFactoryUrl: unknown key; did you mean imageFactoryURL?\n"
        "c.yaml:3: pools: list at least one pool"
    )


def test_pass_through_typo_names_pool_and_closest_key() -> None:
    message = error_of("- name: gpu\n  profile: kubevirt-cpu\n  minReplica: 1\n")
    assert message == (
        'cluster.yaml:7: pool "gpu": minReplica: not a pool setting nor a Cozystack '
        "kubernetes-nodes value; did you mean minReplicas?"
    )


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("gpus: []", "derived from the pool's hardware"),
        ("schematicID: abc", "computed from the pool's extensions"),
        ("osImage: {}", "--layout osimage"),
        ("cluster: other", "top-level `cluster`"),
        ("talos: {schematicID: abc}", "talos.schematicID: set by talos-schematic"),
        ("talos: {installerRepository: r.example/i}", "top-level `talos`"),
    ],
)
def test_keys_the_tool_owns_are_refused(key: str, hint: str) -> None:
    message = error_of(f"- name: gpu\n  profile: kubevirt-cpu\n  {key}\n")
    assert message.startswith('cluster.yaml:7: pool "gpu": ')
    assert hint in message


def test_profile_and_hardware_are_exclusive() -> None:
    message = error_of("- name: p\n  profile: kubevirt-cpu\n  hardware: {platform: kubevirt}\n")
    assert 'pool "p"' in message and "exactly one of `profile` and `hardware`" in message
    assert "exactly one" in error_of("- name: p\n  minReplicas: 1\n")


def test_pool_names_are_unique_and_dns_labels() -> None:
    twice = "- {name: a, profile: kubevirt-cpu}\n- {name: a, profile: kubevirt-cpu}\n"
    assert "pool name 'a' is used twice" in error_of(twice)
    assert "not a valid pool name" in error_of("- {name: GPU_1, profile: kubevirt-cpu}\n")


def test_an_empty_pool_list_and_a_misspelt_choice_are_worded_for_the_file() -> None:
    with pytest.raises(ClusterFileError) as caught:
        parse_cluster("cluster: demo\ntalos: {version: v1.13.9}\npools: []\n", "c.yaml")
    assert str(caught.value) == "c.yaml:3: pools: list at least one pool"
    message = error_of("- name: p\n  profile: kubevirt-l40s\n  nvidia: {tier: LTS}\n")
    assert message == (
        "cluster.yaml:7: pool \"p\": nvidia.tier: 'LTS' is not one of auto, lts, production; "
        "did you mean lts?"
    )


def test_kernel_modules_null_is_refused() -> None:
    message = error_of("- name: p\n  profile: kubevirt-cpu\n  kernelModules:\n")
    assert "write [] to load no modules" in message


def test_duplicate_yaml_key_is_an_error_with_its_line() -> None:
    text = cluster_text("- name: p\n  profile: kubevirt-cpu\n  profile: kubevirt-l4\n")
    with pytest.raises(ClusterFileError) as caught:
        parse_cluster(text, "c.yaml")
    assert str(caught.value) == "c.yaml:7: key 'profile' appears twice in one mapping"


def test_yaml_1_1_words_stay_text_and_numbers_stay_numbers() -> None:
    text = cluster_text(
        "- name: p\n  profile: kubevirt-cpu\n  roles: [on, no]\n  maxReplicas: 3\n"
        "  maxUnhealthy: 0x10\n"
    )
    (pool,) = parse_cluster(text, "c.yaml").pools
    assert pool.passthrough == {"roles": ["on", "no"], "maxReplicas": 3, "maxUnhealthy": "0x10"}


def test_merge_keys_share_pool_settings() -> None:
    text = (
        "cluster: demo\ntalos: {version: v1.13.9}\npools:\n"
        "  - &first {name: a, profile: kubevirt-cpu, minReplicas: 1, maxReplicas: 3}\n"
        "  - {<<: *first, name: b, maxReplicas: 5}\n"
    )
    pools = parse_cluster(text, "c.yaml").pools
    assert [(p.name, p.passthrough) for p in pools] == [
        ("a", {"minReplicas": 1, "maxReplicas": 3}),
        ("b", {"maxReplicas": 5, "minReplicas": 1}),
    ]


def test_invalid_yaml_names_file_and_line() -> None:
    with pytest.raises(
        ClusterFileError, match=r"^c\.yaml:3: not valid YAML: while parsing a flow node"
    ):
        parse_cluster("cluster: demo\npools: [\n", "c.yaml")


# --- resolution ---------------------------------------------------------------------------------


def test_cpu_pool_is_cozystacks_default_schematic() -> None:
    pool = only_pool("- name: cpu\n  profile: kubevirt-cpu\n")
    assert pool.extensions == ("siderolabs/qemu-guest-agent",)
    assert pool.schematic_id == COZYSTACK_DEFAULT_ID
    assert pool.nvidia is None
    assert pool.gpu_resources == ()
    assert pool.kernel_modules == ()
    assert pool.kernel_modules_state == "none"
    assert pool.sysctls == {}


def test_blackwell_pool_gets_open_modules_sorted_and_modules_in_load_order() -> None:
    pool = only_pool("- name: gpu\n  profile: kubevirt-rtx-pro-6000-blackwell-server\n")
    assert pool.extensions == (
        "siderolabs/nvidia-container-toolkit-production",
        "siderolabs/nvidia-open-gpu-kernel-modules-production",
        "siderolabs/qemu-guest-agent",
    )
    assert pool.gpu_resources == ("nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION",)
    assert [m.name for m in pool.kernel_modules] == NVIDIA_LOAD_ORDER
    assert pool.kernel_modules[0].parameters == ("NVreg_NvLinkDisable=1",)
    assert pool.kernel_modules_state == "computed"
    assert pool.canonical == (
        "customization:\n    systemExtensions:\n        officialExtensions:\n"
        "            - siderolabs/nvidia-container-toolkit-production\n"
        "            - siderolabs/nvidia-open-gpu-kernel-modules-production\n"
        "            - siderolabs/qemu-guest-agent\n"
    )
    assert pool.schematic_id == "a31d81eceab05afdc2c59b0002701173e117a5fb81bdc1f64062d27655145848"


def test_inline_hardware_with_two_gpus_extras_and_lts() -> None:
    pool = only_pool(
        """\
        - name: custom
          hardware: {platform: kubevirt, gpus: [{id: "10de:26b9", count: 2}]}
          extensions: [siderolabs/iscsi-tools]
          kernelArgs: [console=ttyS0]
          nvidia: {tier: lts}
        """
    )
    assert pool.extensions == (
        "siderolabs/iscsi-tools",
        "siderolabs/nvidia-container-toolkit-lts",
        "siderolabs/nvidia-open-gpu-kernel-modules-lts",
        "siderolabs/qemu-guest-agent",
    )
    assert pool.kernel_args == ("console=ttyS0",)
    assert pool.gpu_resources == ("nvidia.com/AD102GL_L40S", "nvidia.com/AD102GL_L40S")
    assert pool.nvidia is not None and pool.nvidia.tier == "lts"


def test_pool_nvidia_overrides_cluster_setting_by_field() -> None:
    pools = plan(
        """\
        - {name: a, profile: kubevirt-l40s}
        - {name: b, profile: kubevirt-l40s, nvidia: {tier: production}}
        """,
        top="nvidia: {flavour: proprietary, tier: lts}\n",
    ).pools
    assert pools[0].nvidia is not None and pools[1].nvidia is not None
    assert (pools[0].nvidia.flavour, pools[0].nvidia.tier) == ("proprietary", "lts")
    assert (pools[1].nvidia.flavour, pools[1].nvidia.tier) == ("proprietary", "production")


def test_decision_error_names_file_and_pool() -> None:
    message = error_of(
        "- name: gpu\n  profile: kubevirt-rtx-pro-6000-blackwell-server\n"
        "  nvidia: {flavour: proprietary}\n"
    )
    assert message.startswith('cluster.yaml:5: pool "gpu": flavour proprietary cannot drive')
    assert "10de:2bb5" in message and "needs open" in message


def test_volta_on_talos_1_13_is_proprietary_lts() -> None:
    pool = only_pool("- {name: v100, profile: kubevirt-v100-pcie-16gb}\n")
    assert pool.extensions == (
        "siderolabs/nonfree-kmod-nvidia-lts",
        "siderolabs/nvidia-container-toolkit-lts",
        "siderolabs/qemu-guest-agent",
    )


def test_nvidia_extension_on_a_pool_without_gpu_is_refused() -> None:
    message = error_of(
        "- name: cpu\n  profile: kubevirt-cpu\n"
        "  extensions: [siderolabs/nvidia-container-toolkit-lts]\n"
    )
    assert message.startswith('cluster.yaml:5: pool "cpu": extensions: ')
    assert "need an NVIDIA GPU" in message and "70 minutes" in message


def test_nvidia_extension_that_contradicts_the_decision_is_refused() -> None:
    message = error_of(
        "- name: gpu\n  profile: kubevirt-l40s\n"
        "  extensions: [siderolabs/nonfree-kmod-nvidia-lts]\n"
    )
    assert "conflict with the NVIDIA choice" in message and "nvidia.flavour" in message


def test_unknown_extension_fails_with_close_names() -> None:
    message = error_of("- {name: p, profile: kubevirt-cpu, extensions: [siderolabs/iscsi-tool]}\n")
    assert message.startswith('cluster.yaml:5: pool "p": extensions: ')
    assert "did you mean siderolabs/iscsi-tools" in message


def test_bare_extension_name_is_completed() -> None:
    pool = only_pool("- {name: p, profile: kubevirt-cpu, extensions: [iscsi-tools]}\n")
    assert pool.extensions == ("siderolabs/iscsi-tools", "siderolabs/qemu-guest-agent")


def test_extension_unknown_to_the_talos_release() -> None:
    message = error_of("- {name: p, profile: kubevirt-cpu, extensions: [amdgpu]}\n", talos="v1.8.0")
    assert "'siderolabs/amdgpu' is not offered by Talos v1.8.0" in message


def test_bare_metal_gets_microcode_and_no_guest_agent() -> None:
    pool = only_pool("- {name: m, profile: metal-amd}\n")
    assert pool.extensions == ("siderolabs/amd-ucode",)
    pool = only_pool("- {name: m, hardware: {platform: metal, cpuVendor: intel}}\n")
    assert pool.extensions == ("siderolabs/intel-ucode",)


def test_hgx_bare_metal_gets_fabric_manager_and_no_nvlink_disable() -> None:
    pool = only_pool("- {name: hgx, profile: metal-hgx-h100-8x}\n")
    assert "siderolabs/intel-ucode" in pool.extensions
    assert any("fabricmanager" in name for name in pool.extensions)
    assert pool.kernel_modules[0] == KernelModule(name="nvidia")
    assert len(pool.gpu_resources) == 8


def test_modules_of_drbd_zfs_and_gdrdrv() -> None:
    pool = only_pool("- {name: s, profile: kubevirt-cpu, extensions: [siderolabs/zfs, drbd]}\n")
    assert pool.kernel_modules == (
        KernelModule(name="drbd", parameters=("usermode_helper=disabled",)),
        KernelModule(name="zfs"),
    )
    pool = only_pool("- {name: g, profile: kubevirt-h100-pcie, nvidia: {gdrdrv: true}}\n")
    assert [m.name for m in pool.kernel_modules] == [*NVIDIA_LOAD_ORDER, "gdrdrv"]
    assert "siderolabs/nvidia-gdrdrv-device" in pool.extensions


def test_kernel_modules_override_and_opt_out() -> None:
    pool = only_pool(
        "- name: g\n  profile: kubevirt-l40s\n  kernelModules:\n"
        "    - {name: nvidia, parameters: [NVreg_EnableGpuFirmware=0]}\n"
    )
    assert pool.kernel_modules == (
        KernelModule(name="nvidia", parameters=("NVreg_EnableGpuFirmware=0",)),
    )
    assert pool.kernel_modules_state == "override"
    pool = only_pool("- {name: g, profile: kubevirt-l40s, kernelModules: []}\n")
    assert pool.kernel_modules == () and pool.kernel_modules_state == "opt-out"


def test_kernel_args_profile_then_pool_then_nvidia_deduplicated(tmp_path: Path) -> None:
    profile = tmp_path / "spark.yaml"
    profile.write_text(
        "platform: metal\narchitecture: arm64\ncpuVendor: arm\n"
        "gpus: [{id: '10de:2e12'}]\nkernelArgs: [console=ttyAMA0, arm64.nobti]\n"
    )
    text = cluster_text(
        "- {name: s, profile: ./spark.yaml, kernelArgs: [quiet, console=ttyAMA0]}\n"
    )
    cluster = parse_cluster(text, "cluster.yaml")
    (pool,) = plan_cluster(cluster, source="cluster.yaml", base_dir=tmp_path).pools
    assert pool.kernel_args == ("console=ttyAMA0", "arm64.nobti", "quiet")


def test_profiles_directory_shadows_shipped_profiles(tmp_path: Path) -> None:
    (tmp_path / "kubevirt-cpu.yaml").write_text("platform: kubevirt\nextensions: [iscsi-tools]\n")
    cluster = parse_cluster(cluster_text("- {name: c, profile: kubevirt-cpu}\n"), "c.yaml")
    (pool,) = plan_cluster(cluster, source="c.yaml", profile_dirs=[tmp_path]).pools
    assert pool.extensions == ("siderolabs/iscsi-tools", "siderolabs/qemu-guest-agent")


def test_unknown_profile_names_pool() -> None:
    message = error_of("- {name: p, profile: kubevirt-nope}\n")
    expected = "cluster.yaml:5: pool \"p\": no hardware profile named 'kubevirt-nope'"
    assert message.startswith(expected)


def test_inline_hardware_error_names_pool() -> None:
    message = error_of("- {name: p, hardware: {platform: kubevirt, gpus: [{id: '10de:ffff'}]}}\n")
    assert message == (
        'cluster.yaml:5: pool "p": hardware.gpus[0]: 10de:ffff is not in the NVIDIA device '
        "table; add its architecture (e.g. architecture: Blackwell)"
    )


def test_pools_with_the_same_shape_share_a_schematic_but_keep_their_values() -> None:
    pools = plan(
        """\
        - {name: a, profile: kubevirt-l40s, maxReplicas: 1}
        - {name: b, profile: kubevirt-l40s, maxReplicas: 2}
        """
    ).pools
    assert pools[0].schematic_id == pools[1].schematic_id
    assert [(p.name, dict(p.passthrough)) for p in pools] == [
        ("a", {"maxReplicas": 1}),
        ("b", {"maxReplicas": 2}),
    ]


def test_talos_1_12_nvidia_pool_needs_bpf_jit_harden() -> None:
    pool = only_pool("- {name: g, profile: kubevirt-l40s}\n", talos="v1.12.4")
    assert pool.sysctls == {"net.core.bpf_jit_harden": "1"}


def test_talos_version_must_be_in_the_catalogue() -> None:
    message = error_of("- {name: c, profile: kubevirt-cpu}\n", talos="v1.1.0")
    assert message.startswith("cluster.yaml: talos.version: ")
    with pytest.raises(ClusterFileError, match="pre-release"):
        parse_cluster(
            cluster_text("- {name: c, profile: kubevirt-cpu}\n", talos="v1.14.0-rc.1"), "c"
        )


def test_factory_schematics_replace_id_and_body_of_matching_pools_only() -> None:
    from schematic.plan.cluster import with_factory_schematics

    offline = plan(
        "- name: cpu\n  profile: kubevirt-cpu\n- name: gpu\n  profile: kubevirt-v100-pcie-16gb\n"
    )
    cpu, gpu = offline.pools
    stamped = "owner: team@example.com\n" + cpu.canonical
    changed = with_factory_schematics(offline, {cpu.schematic_id: ("f" * 64, stamped)})
    new_cpu, new_gpu = changed.pools
    assert (new_cpu.schematic_id, new_cpu.canonical) == ("f" * 64, stamped)
    # The request itself is unchanged: same extensions, same kernel arguments.
    assert new_cpu.schematic == cpu.schematic
    assert new_gpu == gpu
    assert offline.pools == (cpu, gpu)


# --- GPUDirect opt-ins and NVLink-5 -------------------------------------------------------------


def test_peermem_from_the_cluster_and_gds_refused_per_pool() -> None:
    pool = only_pool(
        "- {name: h100, profile: metal-hgx-h100-8x}\n", top="nvidia: {peermem: true}\n"
    )
    assert [m.name for m in pool.kernel_modules] == [*NVIDIA_LOAD_ORDER, "nvidia_peermem"]
    message = error_of("- {name: b200, profile: metal-hgx-b200-8x, nvidia: {gds: true}}\n")
    assert message.startswith('cluster.yaml:5: pool "b200": GPUDirect Storage')
    assert "has no nvidia-fs module (it arrives in v1.14.0" in message
    # A pool turns a cluster-wide opt-in off.
    off = only_pool(
        "- {name: h100, profile: metal-hgx-h100-8x, nvidia: {peermem: false}}\n",
        top="nvidia: {peermem: true}\n",
    )
    assert [m.name for m in off.kernel_modules] == NVIDIA_LOAD_ORDER


def test_cluster_wide_peermem_reaches_gpu_pools_only() -> None:
    b200, cpu, l40s = plan(
        "- {name: b200, profile: metal-hgx-b200-8x}\n"
        "- {name: cpu, profile: kubevirt-cpu}\n"
        "- {name: l40s, profile: kubevirt-l40s, nvidia: {peermem: false}}\n",
        top="nvidia: {peermem: true}\n",
    ).pools
    # peermem before ib_umad: the NVIDIA modules first, then what the NICs need.
    assert [m.name for m in b200.kernel_modules] == [
        *NVIDIA_LOAD_ORDER,
        "nvidia_peermem",
        "ib_umad",
    ]
    assert (cpu.extensions, cpu.kernel_modules) == (("siderolabs/qemu-guest-agent",), ())
    assert [m.name for m in l40s.kernel_modules] == NVIDIA_LOAD_ORDER
    # An opt-in adds modules, never an extension: peermem ships inside the open modules.
    plain = only_pool("- {name: b200, profile: metal-hgx-b200-8x}\n")
    assert b200.extensions == plain.extensions
    assert b200.schematic_id == plain.schematic_id


def test_a_pool_opts_in_where_the_cluster_does_not() -> None:
    h100, other = plan(
        "- {name: h100, profile: metal-hgx-h100-8x, nvidia: {peermem: true}}\n"
        "- {name: other, profile: metal-hgx-h100-8x}\n",
        top="nvidia: {peermem: false}\n",
    ).pools
    assert [m.name for m in h100.kernel_modules] == [*NVIDIA_LOAD_ORDER, "nvidia_peermem"]
    assert [m.name for m in other.kernel_modules] == NVIDIA_LOAD_ORDER


@pytest.mark.parametrize(
    ("pools", "top"),
    [
        (
            "- {name: h100, profile: metal-hgx-h100-8x, nvidia: {peermem: true}}\n",
            "nvidia: {flavour: proprietary}\n",
        ),
        (
            "- {name: h100, profile: metal-hgx-h100-8x, nvidia: {flavour: proprietary}}\n",
            "nvidia: {peermem: true}\n",
        ),
    ],
)
def test_peermem_with_the_proprietary_modules_is_refused_naming_the_pool(
    pools: str, top: str
) -> None:
    message = error_of(pools, top=top)
    assert message.startswith('cluster.yaml:6: pool "h100": nvidia_peermem')
    assert "use flavour open" in message


def test_gds_on_a_cluster_refuses_its_gpu_pools_and_leaves_cpu_pools_alone() -> None:
    cpu = only_pool("- {name: cpu, profile: kubevirt-cpu}\n", top="nvidia: {gds: true}\n")
    assert cpu.extensions == ("siderolabs/qemu-guest-agent",)
    message = error_of(
        "- {name: cpu, profile: kubevirt-cpu}\n- {name: l40s, profile: kubevirt-l40s}\n",
        top="nvidia: {gds: true}\n",
    )
    assert message.startswith('cluster.yaml:7: pool "l40s": GPUDirect Storage')


H100_METAL = "hardware: {platform: metal, gpus: [{id: '10de:2330', count: 8}], nvswitch: true"


def test_a_profile_gives_gpudirect_defaults_the_cluster_file_overrides() -> None:
    mine, off, cluster_off = plan(
        f"- {{name: mine, {H100_METAL}, nvidia: {{peermem: true}}}}}}\n"
        f"- {{name: off, {H100_METAL}, nvidia: {{peermem: true}}}}, nvidia: {{peermem: false}}}}\n"
        f"- {{name: cluster-off, {H100_METAL}, nvidia: {{peermem: true}}}}}}\n",
    ).pools
    assert [m.name for m in mine.kernel_modules] == [*NVIDIA_LOAD_ORDER, "nvidia_peermem"]
    assert [m.name for m in off.kernel_modules] == NVIDIA_LOAD_ORDER
    # The cluster file is the user's decision for every pool: it wins over the machine's default.
    (overridden,) = plan(
        f"- {{name: cluster-off, {H100_METAL}, nvidia: {{peermem: true}}}}}}\n",
        top="nvidia: {peermem: false}\n",
    ).pools
    assert [m.name for m in overridden.kernel_modules] == NVIDIA_LOAD_ORDER
    assert [m.name for m in cluster_off.kernel_modules] == [*NVIDIA_LOAD_ORDER, "nvidia_peermem"]
    gdrdrv = only_pool(
        f"- {{name: g, {H100_METAL}, nvidia: {{gdrdrv: true}}}}}}\n", talos="v1.12.6"
    )
    assert "siderolabs/nvidia-gdrdrv-device" in gdrdrv.extensions


def test_profile_gpudirect_keys_are_checked_naming_the_key() -> None:
    message = error_of("- {name: c, hardware: {platform: metal, nvidia: {peermem: true}}}\n")
    assert "nvidia (gdrdrv, gds, peermem) needs NVIDIA GPUs in gpus" in message
    message = error_of(f"- {{name: c, {H100_METAL}, nvidia: {{gds: 'yes'}}}}}}\n")
    assert "hardware.nvidia.gds: write true or false, not the text 'yes'" in message
    message = error_of(f"- {{name: c, {H100_METAL}, nvidia: {{tier: lts}}}}}}\n")
    assert "nvidia.tier" in message
    refused = error_of(f"- {{name: c, {H100_METAL}, nvidia: {{gds: true}}}}}}\n")
    assert refused.startswith('cluster.yaml:5: pool "c": GPUDirect Storage')


@pytest.mark.parametrize("key", ["gdrdrv", "gds", "peermem"])
def test_opt_ins_are_booleans(key: str) -> None:
    expected = rf"^cluster\.yaml:4: nvidia\.{key}: write true or false"
    with pytest.raises(ClusterFileError, match=expected):
        plan("- {name: g, profile: kubevirt-l40s}\n", top=f"nvidia: {{{key}: 'yes'}}\n")


def test_b200_hgx_pool_loads_ib_umad_after_the_nvidia_modules() -> None:
    pool = only_pool("- {name: b200, profile: metal-hgx-b200-8x}\n")
    assert [m.name for m in pool.kernel_modules] == [*NVIDIA_LOAD_ORDER, "ib_umad"]
    assert "siderolabs/nvidia-fabricmanager-production" in pool.extensions
    h100 = only_pool("- {name: h100, profile: metal-hgx-h100-8x}\n")
    assert [m.name for m in h100.kernel_modules] == NVIDIA_LOAD_ORDER


def test_installer_repository_follows_the_release_unless_given() -> None:
    newer = only_pool("- {name: c, profile: kubevirt-cpu}\n", talos="v1.14.0")
    assert newer.talos.installer_repository == "factory.talos.dev/metal-installer"
    older = only_pool("- {name: c, profile: kubevirt-cpu}\n", talos="v1.13.9")
    assert older.talos.installer_repository == "factory.talos.dev/installer"
    text = cluster_text("- {name: c, profile: kubevirt-cpu}\n", talos="v1.14.0").replace(
        "  version: v1.14.0\n", "  version: v1.14.0\n  installerRepository: reg.example/installer\n"
    )
    given = plan_cluster(parse_cluster(text, "c.yaml")).pools[0]
    assert given.talos.installer_repository == "reg.example/installer"


def test_hardware_keys_of_mixed_types_are_a_user_error_not_a_crash() -> None:
    # A GPU entry with a number for a key: the pools' shapes must still be told apart (sorting
    # such keys for JSON raised TypeError) and the profile check names the key.
    message = error_of(
        """\
        - name: gpu
          hardware: {platform: metal, gpus: [{id: "10de:26b9", 1: x}]}
        """
    )
    assert message == 'cluster.yaml:6: pool "gpu": hardware.gpus[0].1: unknown key'


def test_pools_whose_overlay_options_differ_only_in_key_type_get_their_own_schematic() -> None:
    # `1` and "1" are different keys to go-yaml (written `1:` and `"1":`), so different IDs: the
    # keys that let alike pools share a plan must keep them apart.
    pools = plan(
        """\
        - name: number
          hardware: {platform: metal, architecture: arm64}
          overlay: {name: rock5b, options: {a: {1: x}}}
        - name: text
          hardware: {platform: metal, architecture: arm64}
          overlay: {name: rock5b, options: {a: {"1": x}}}
        """
    ).pools
    assert "        a:\n            1: x\n" in pools[0].canonical
    assert '        a:\n            "1": x\n' in pools[1].canonical
    assert pools[0].schematic_id != pools[1].schematic_id


# A plain metal-intel pool, then one differing from it in one field of PoolSpec each: every one
# must be planned on its own (pools of one shape share the first one's plan).
_PLAIN = "- {name: plain, profile: metal-intel}\n"
_ONE_FIELD_APART = {
    "profile": "- {name: other, profile: metal-amd}\n",
    "hardware": "- {name: other, hardware: {platform: metal, cpuVendor: intel}}\n",
    "extensions": "- {name: other, profile: metal-intel, extensions: [siderolabs/iscsi-tools]}\n",
    "kernel_args": "- {name: other, profile: metal-intel, kernelArgs: [console=ttyS0]}\n",
    "kernel_modules": (
        "- {name: other, profile: metal-intel, kernelModules: [{name: br_netfilter}]}\n"
    ),
    # After a GPU pool of the same profile (a CPU pool's plan has no NVIDIA decision to differ).
    "nvidia": (
        "- {name: gpu, profile: kubevirt-l40s}\n"
        "- {name: other, profile: kubevirt-l40s, nvidia: {flavour: proprietary}}\n"
    ),
    "media": "- {name: other, profile: metal-intel, bootloader: grub}\n",
    "boot": (
        "- name: other\n  profile: metal-intel\n"
        "  boot: {schematic: {kernelArgs: [talos.config=https://config.internal/w.yaml]}}\n"
    ),
    "talos_version": "- {name: other, profile: metal-intel, talos: {version: v1.12.4}}\n",
}


def test_every_field_a_plan_depends_on_has_a_row_above() -> None:
    from dataclasses import fields

    from schematic.inputs.cluster_values import PoolSpec

    # A field added to PoolSpec gets a row proving pools differing in it are planned apart.
    planned_by = {f.name for f in fields(PoolSpec) if f.compare}
    assert planned_by - {"name", "passthrough", "hardware_profile"} == set(_ONE_FIELD_APART)


@pytest.mark.parametrize("field", sorted(_ONE_FIELD_APART))
def test_a_pool_one_field_apart_from_the_one_before_gets_its_own_plan(field: str) -> None:
    from dataclasses import replace

    rows = _ONE_FIELD_APART[field]
    first, other = plan(rows if rows.count("- ") == 2 else _PLAIN + rows).pools
    (alone,) = plan(rows.splitlines(keepends=True)[-1] if rows.count("- ") == 2 else rows).pools
    assert other == alone
    # The row is worth its place: the pool's plan is not the first one's renamed.
    assert other != replace(first, name="other", passthrough=other.passthrough)


def test_a_boot_schematic_after_a_plain_pool_of_its_profile_keeps_its_boot_id() -> None:
    plain, pxe = plan(_PLAIN + _ONE_FIELD_APART["boot"]).pools
    assert plain.boot_schematic_id is None
    assert pxe.boot_schematic_id is not None
    assert "talos.config=https://config.internal/w.yaml" in (pxe.boot_canonical or "")


def test_pools_apart_only_in_name_and_values_share_one_shape() -> None:
    # Must not fire: the shape leaves out what is set on the shared plan afterwards, and where
    # the pool sits in its file.
    from schematic.plan.cluster import pool_shape

    text = cluster_text(_PLAIN + "- {name: other, profile: metal-intel, maxReplicas: 3}\n")
    first, second = parse_cluster(text, "cluster.yaml").pools
    assert first.line != second.line
    assert pool_shape(first) == pool_shape(second)
    inline = cluster_text(
        "- {name: a, hardware: {platform: metal}}\n- {name: b, hardware: {platform: metal}}\n"
    )
    a, b = parse_cluster(inline, "cluster.yaml").pools
    assert pool_shape(a) == pool_shape(b)
