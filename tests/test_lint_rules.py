"""Every lint rule: an input that trips it and a corrected one that does not."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.findings import RULES, Finding
from schematic.doctor.lint.pools import gpu_candidates

COZY = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
BLACKWELL = "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION"
H200 = "nvidia.com/GH100_H200_SXM_141GB"
P100 = "nvidia.com/GP100GL_TESLA_P100_PCIE_16GB"


# Bodies of the IDs the tests build; written next to the manifests that use them, as users keep
# schematic files in their repositories (the well-known table does not hold them all).
BODIES: dict[str, str] = {}


def ext_id(*names: str) -> str:
    schematic = Schematic.from_extensions(sorted(f"siderolabs/{n}" for n in names))
    BODIES[schematic.id] = schematic.canonical()
    return schematic.id


OPEN_PROD = ext_id(
    "nvidia-open-gpu-kernel-modules-production", "nvidia-container-toolkit-production"
)
OPEN_LTS = ext_id("nvidia-open-gpu-kernel-modules-lts", "nvidia-container-toolkit-lts")
PROP_LTS = ext_id("nonfree-kmod-nvidia-lts", "nvidia-container-toolkit-lts")
PROP_PROD = ext_id("nonfree-kmod-nvidia-production", "nvidia-container-toolkit-production")


def write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        for schematic_id, body in BODIES.items():
            if schematic_id in text:
                (tmp_path / f"schematic-{schematic_id[:8]}.yaml").write_text(body)


def run(tmp_path: Path, files: dict[str, str], talos: str | None = None) -> list[Finding]:
    write(tmp_path, files)
    return list(lint_paths([str(tmp_path)], talos=talos).findings)


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def nodes(
    name: str,
    *,
    gpus: tuple[str, ...] = (),
    schematic: str | None = None,
    talos: str | None = "v1.13.6",
    extra: str = "",
    layout: str = "talos",
) -> str:
    gpu_lines = "".join(f"\n    - name: {g}" for g in gpus)
    text = f"""\
apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata:
  name: {name}
spec:
  cluster: prod
  gpus: []{extra}
"""
    if gpus:
        text = text.replace("  gpus: []", "  gpus:" + gpu_lines)
    if layout == "talos":
        text += "  talos:\n"
        if talos:
            text += f"    version: {talos}\n"
        if schematic:
            text += f"    schematicID: {schematic}\n"
    elif layout == "root":
        text += f"  schematicID: {schematic}\n"
        if talos:
            text += f"  talos:\n    version: {talos}\n"
    else:
        text += f"  osImage:\n    factory:\n      schematicID: {schematic}\n"
        if talos:
            text += f"      version: {talos}\n"
    return text


def finding(findings: list[Finding], code: str) -> Finding:
    return next(f for f in findings if f.code == code)


# --- TS101 / TS102: NVIDIA schematic where there is no NVIDIA GPU -----------------------------


@pytest.mark.parametrize("layout", ["talos", "root", "osImage"])
def test_ts101_nvidia_schematic_on_a_cpu_pool(tmp_path: Path, layout: str) -> None:
    found = run(tmp_path, {"n.yaml": nodes("prod-cpu", schematic=OPEN_PROD, layout=layout)})
    hit = finding(found, "TS101")
    assert hit.severity == "error"
    assert hit.object == "prod-cpu"
    assert "nvidia-container-toolkit-production" in hit.message
    assert hit.line == {"talos": 10, "root": 8, "osImage": 10}[layout]


def test_ts101_passes_with_the_vanilla_schematic(tmp_path: Path) -> None:
    assert "TS101" not in codes(run(tmp_path, {"n.yaml": nodes("prod-cpu", schematic=COZY)}))


def test_ts101_counts_only_nvidia_gpus(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("amd", gpus=("amd.com/gpu",), schematic=OPEN_PROD)})
    assert "TS101" in codes(found)


APP = """\
apiVersion: apps.cozystack.io/v1alpha1
kind: Kubernetes
metadata:
  name: prod
spec:
  talos:
    version: v1.13.6
    schematicID: {id}
  nodeGroups:
    gpu:
      gpus:
        - name: nvidia.com/GH100_H200_SXM_141GB
    {second}:
      instanceType: u1.large{second_gpu}
"""


def test_ts182_node_groups_on_a_release_without_them(tmp_path: Path) -> None:
    files = {"app.yaml": APP.format(id=OPEN_PROD, second="cpu", second_gpu="")}
    found = run_for(tmp_path, files, "v1.7")
    # v1.7's Kubernetes app reads no spec.nodeGroups: each group is said to create no workers,
    # and nothing is reported about them as pools (no TS101 / TS102 for groups that are not).
    assert sorted((f.code, f.object, f.severity) for f in found) == [
        ("TS182", "prod nodeGroups.cpu", "error"),
        ("TS182", "prod nodeGroups.gpu", "error"),
    ]
    assert "cozystack/cozystack#3315" in found[0].message
    # Releases that read node groups check them as pools, and say nothing of TS182.
    for chart in ("v1.6", "main"):
        found = run_for(tmp_path, files, chart)
        assert "TS182" not in codes(found) and "TS102" in codes(found), chart
    assert "TS182" not in codes(run(tmp_path, files))


def test_ts102_cluster_wide_nvidia_schematic_with_a_cpu_pool(tmp_path: Path) -> None:
    found = run(tmp_path, {"app.yaml": APP.format(id=OPEN_PROD, second="cpu", second_gpu="")})
    hit = finding(found, "TS102")
    assert (hit.line, hit.object) == (8, "prod")
    assert "prod nodeGroups.cpu" in hit.message
    # The inheriting pool itself reboots too: TS101 points at the node group.
    inherited = finding(found, "TS101")
    assert inherited.line == 13 and "inherits" in inherited.message


def test_ts102_passes_when_every_pool_has_a_gpu(tmp_path: Path) -> None:
    second_gpu = "\n      gpus:\n        - name: nvidia.com/GH100_H200_SXM_141GB"
    app = APP.format(id=OPEN_PROD, second="gpu2", second_gpu=second_gpu)
    found = run(tmp_path, {"app.yaml": app})
    assert not codes(found) & {"TS101", "TS102"}


def test_ts102_counts_kubernetes_nodes_of_the_cluster(tmp_path: Path) -> None:
    app = APP.format(id=OPEN_PROD, second="gpu2", second_gpu="\n      gpus: [{name: " + H200 + "}]")
    files = {"app.yaml": app, "n.yaml": nodes("prod-cpu", schematic=COZY)}
    assert "TS102" in codes(run(tmp_path, files))


# --- TS103..TS106: flavour and driver by GPU generation ---------------------------------------


def test_ts103_blackwell_with_proprietary_modules(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(BLACKWELL,), schematic=PROP_PROD)})
    assert "TS103" in codes(found)
    assert "10de:2bb5" in finding(found, "TS103").message


def test_ts103_passes_with_open_modules(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(BLACKWELL,), schematic=OPEN_PROD)})
    assert [f for f in found if f.severity != "note"] == []


def test_ts103_not_on_a_guess_for_an_exact_name_several_devices_share(tmp_path: Path) -> None:
    # nvidia.com/GH100 is the exact resource name of four devices: three Hopper cards that
    # either flavour drives and one Grace superchip GPU that needs the open modules.
    candidates, exact = gpu_candidates("nvidia.com/GH100")
    assert exact and len(candidates) == 4
    assert sorted(gpu.open_only for gpu in candidates) == [False, False, False, True]
    found = run(
        tmp_path / "a", {"n.yaml": nodes("g", gpus=("nvidia.com/GH100",), schematic=PROP_PROD)}
    )
    assert "TS103" not in codes(found)
    # The GH200's own name stands for that superchip GPU alone: refused.
    gh200 = "nvidia.com/GH100_GH200_120GB___480GB"
    found = run(tmp_path / "b", {"n.yaml": nodes("g", gpus=(gh200,), schematic=PROP_PROD)})
    assert "10de:2342" in finding(found, "TS103").message


def test_ts103_gb10_follows_the_rules_table(tmp_path: Path) -> None:
    gb10 = "nvidia.com/GB20B_GB10"
    found = run(tmp_path / "a", {"n.yaml": nodes("g", gpus=(gb10,), schematic=OPEN_PROD)})
    assert "proprietary modules (the NVIDIA rules table)" in finding(found, "TS103").message
    fine = run(tmp_path / "b", {"n.yaml": nodes("g", gpus=(gb10,), schematic=PROP_PROD)})
    assert "TS103" not in codes(fine)


def test_ts107_gb10_cannot_start_cuda_on_talos_1_13_and_1_14(tmp_path: Path) -> None:
    gb10 = "nvidia.com/GB20B_GB10"
    for talos in ("v1.13.6", "v1.14.0"):
        found = run(
            tmp_path / talos,
            {"n.yaml": nodes("g", gpus=(gb10,), schematic=PROP_PROD, talos=talos)},
        )
        hit = finding(found, "TS107")
        assert "CONFIG_ARM_SMMU_V3_SVA" in hit.message and "#14087" in hit.message
    other = run(tmp_path / "h", {"n.yaml": nodes("g", gpus=(P100,), schematic=PROP_LTS)})
    assert "TS107" not in codes(other)


def test_ts104_pascal_with_open_modules(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(P100,), schematic=OPEN_LTS)})
    assert "TS104" in codes(found)


def test_ts104_passes_with_proprietary_lts(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(P100,), schematic=PROP_LTS)})
    assert not codes(found) & {"TS104", "TS105"}


def test_ts105_pascal_on_a_production_driver_after_580(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(P100,), schematic=PROP_PROD)})
    hit = finding(found, "TS105")
    assert "v1.13.6" in hit.message and "580" in hit.message


def test_ts105_needs_the_talos_version(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(P100,), schematic=PROP_PROD, talos=None)})
    assert "TS105" not in codes(found)
    assert "TS003" in codes(found)
    # --talos supplies it.
    again = lint_paths([str(tmp_path)], talos="v1.13.6")
    assert "TS105" in {f.code for f in again.findings}


def test_ts106_blackwell_on_talos_1_12_production(tmp_path: Path) -> None:
    found = run(
        tmp_path, {"n.yaml": nodes("g", gpus=(BLACKWELL,), schematic=OPEN_PROD, talos="v1.12.0")}
    )
    hit = finding(found, "TS106")
    assert "575.57.08" in hit.message


def test_ts106_passes_on_the_lts_tier(tmp_path: Path) -> None:
    found = run(
        tmp_path, {"n.yaml": nodes("g", gpus=(BLACKWELL,), schematic=OPEN_LTS, talos="v1.12.0")}
    )
    assert "TS106" not in codes(found)


# --- TS110..TS114: the GPU pool's NVIDIA set --------------------------------------------------


def test_ts110_ts111_gpu_pool_on_the_vanilla_schematic(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=COZY)})
    assert {"TS110", "TS111"} <= codes(found)


def test_ts110_unset_schematic_is_the_chart_default(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=None)})
    assert {"TS110", "TS111"} <= codes(found)


def test_ts111_modules_without_toolkit(tmp_path: Path) -> None:
    only = ext_id("nvidia-open-gpu-kernel-modules-lts")
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=only)})
    assert "TS111" in codes(found) and "TS110" not in codes(found)


def test_ts112_mixed_tiers(tmp_path: Path) -> None:
    mixed = ext_id("nvidia-open-gpu-kernel-modules-lts", "nvidia-container-toolkit-production")
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=mixed)})
    assert "TS112" in codes(found)


def test_ts113_both_flavours(tmp_path: Path) -> None:
    both = ext_id(
        "nvidia-open-gpu-kernel-modules-lts",
        "nonfree-kmod-nvidia-lts",
        "nvidia-container-toolkit-lts",
    )
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=both)})
    assert "TS113" in codes(found)


def test_gpu_pool_with_a_matching_set_is_clean(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=OPEN_PROD)})
    assert found == []


def test_ts114_unknown_resource_name(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=("nvidia.com/gpu",), schematic=OPEN_PROD)})
    assert codes(found) == {"TS114"}


def test_hand_written_resource_name_is_matched_by_words(tmp_path: Path) -> None:
    # Cozystack's own test values use this shortened name for the RTX PRO 6000 (Blackwell).
    found = run(
        tmp_path,
        {"n.yaml": nodes("g", gpus=("nvidia.com/GB202_RTX_PRO_6000",), schematic=PROP_PROD)},
    )
    assert {"TS103", "TS114"} <= codes(found)
    assert finding(found, "TS114").severity == "note"


@pytest.mark.parametrize(("name", "ts104"), [("QUADRO_P", True), ("GTX_1", False)])
def test_ts104_only_when_every_card_a_hand_written_name_may_be_lacks_a_gsp(
    tmp_path: Path, name: str, ts104: bool
) -> None:
    # QUADRO_P stands only for Pascal cards: the open modules drive none of them. GTX_1 may be
    # a Pascal GTX 10xx or a Turing GTX 16xx, which the open modules drive: not an error.
    gpus = (f"nvidia.com/{name}",)
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=gpus, schematic=OPEN_LTS)})
    assert ("TS104" in codes(found)) is ts104, found


# --- TS120..TS123: kernel modules -------------------------------------------------------------


def test_ts120_kernel_modules_null(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        {"n.yaml": nodes("g", gpus=(H200,), schematic=OPEN_PROD, extra="\n  kernelModules: null")},
    )
    assert finding(found, "TS120").line == 9


def test_ts121_empty_list_on_a_gpu_pool(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        {"n.yaml": nodes("g", gpus=(H200,), schematic=OPEN_PROD, extra="\n  kernelModules: []")},
    )
    assert finding(found, "TS121").severity == "warning"


def test_ts121_empty_list_on_a_cpu_pool_is_fine(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("c", schematic=COZY, extra="\n  kernelModules: []")})
    assert found == []


def test_ts122_nvidia_modules_without_nvidia_schematic(tmp_path: Path) -> None:
    extra = "\n  kernelModules:\n    - name: nvidia\n    - name: br_netfilter"
    found = run(tmp_path, {"n.yaml": nodes("c", schematic=COZY, extra=extra)})
    hit = finding(found, "TS122")
    assert hit.line == 8 and "nvidia" in hit.message and "br_netfilter" not in hit.message


def test_ts122_passes_with_other_modules(tmp_path: Path) -> None:
    extra = "\n  kernelModules:\n    - name: br_netfilter"
    assert run(tmp_path, {"n.yaml": nodes("c", schematic=COZY, extra=extra)}) == []


# --- rendered manifests: TS122 / TS123 / TS130 / TS131 ----------------------------------------


def kmt(schematic: str, gpu: str = H200, version: str = "v1.13.6") -> str:
    return f"""\
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: KubevirtMachineTemplate
metadata:
  name: kubernetes-prod-md0-0a1b2c
spec:
  template:
    spec:
      virtualMachineTemplate:
        spec:
          dataVolumeTemplates:
          - metadata:
              name: disk-system
            spec:
              source:
                http:
                  url: https://factory.talos.dev/image/{schematic}/{version}/openstack-amd64.raw.xz
          template:
            spec:
              domain:
                devices:
                  gpus:
                  - name: gpu1
                    deviceName: {gpu}
"""


def tct(schematic: str, modules: str = "nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset") -> str:
    names = [m.strip() for m in modules.split(",") if m.strip()]
    listed = "".join(f"\n              - name: {name}" for name in names)
    kernel = f"\n          kernel:\n            modules:{listed}" if listed else ""
    return f"""\
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha3
kind: TalosConfigTemplate
metadata:
  name: kubernetes-prod-md0
spec:
  template:
    spec:
      generateType: none
      talosVersion: "v1.13.6"
      data: |
        version: v1alpha1
        machine:
          type: worker
          install:
            disk: /dev/vda
            image: factory.talos.dev/installer/{schematic}:v1.13.6{kernel}
"""


def test_ts130_boot_disk_and_installer_differ(tmp_path: Path) -> None:
    found = run(tmp_path, {"kmt.yaml": kmt(OPEN_PROD), "tct.yaml": tct(OPEN_LTS)})
    hit = finding(found, "TS130")
    assert (hit.file.endswith("tct.yaml"), hit.line, hit.object) == (
        True,
        16,
        "kubernetes-prod-md0",
    )


def test_ts130_passes_with_one_schematic(tmp_path: Path) -> None:
    assert run(tmp_path, {"kmt.yaml": kmt(OPEN_PROD), "tct.yaml": tct(OPEN_PROD)}) == []


def test_ts122_in_the_machine_config(tmp_path: Path) -> None:
    found = run(tmp_path, {"kmt.yaml": kmt(COZY, gpu="nvidia.com/x"), "tct.yaml": tct(COZY)})
    assert "TS122" in codes(found)


def test_ts123_gpu_machine_config_without_nvidia_modules(tmp_path: Path) -> None:
    found = run(tmp_path, {"kmt.yaml": kmt(OPEN_PROD), "tct.yaml": tct(OPEN_PROD, modules="")})
    assert codes(found) == {"TS123"}
    # The VM template states the NVIDIA GPU and the TalosConfigTemplate is the whole machine
    # config: certain, an error.
    assert finding(found, "TS123").severity == "error"


# --- standalone machine configs: TS123 / TS124 / TS125 ---------------------------------------


def machine_config(
    schematic: str,
    talos: str = "v1.13.6",
    *,
    modules: str = "",
    sysctls: str = "",
    extra: str = "",
) -> str:
    """A worker machine config as `talosctl gen config` writes it, trimmed to what matters."""
    names = [m.strip() for m in modules.split(",") if m.strip()]
    listed = "".join(f"\n      - name: {name}" for name in names)
    kernel = f"\n  kernel:\n    modules:{listed}" if listed else ""
    sysctl = f"\n  sysctls:\n    {sysctls}" if sysctls else ""
    return (
        "version: v1alpha1\nmachine:\n  type: worker\n  install:\n    disk: /dev/sda\n"
        f"    image: factory.talos.dev/installer/{schematic}:{talos}{extra}{kernel}{sysctl}\n"
        "cluster:\n  controlPlane:\n    endpoint: https://10.0.0.1:6443\n"
    )


NVIDIA_MODULES = "nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset"


def test_ts123_standalone_machine_config_without_nvidia_modules(tmp_path: Path) -> None:
    found = run(tmp_path, {"worker.yaml": machine_config(OPEN_PROD)})
    # The config does not say which GPUs the node has: no TS101 for a missing GPU, and TS123
    # only a warning (the node may have no NVIDIA GPU at all).
    assert codes(found) == {"TS123"}
    assert finding(found, "TS123").object == str(tmp_path / "worker.yaml")
    assert finding(found, "TS123").severity == "warning"


def test_ts123_passes_with_modules_or_kernel_module_documents(tmp_path: Path) -> None:
    loaded = machine_config(OPEN_PROD, modules=NVIDIA_MODULES)
    documents = machine_config(OPEN_PROD, "v1.14.0") + "".join(
        f"---\napiVersion: v1alpha1\nkind: KernelModuleConfig\nname: {name}\n"
        for name in NVIDIA_MODULES.split(", ")
    )
    assert run(tmp_path, {"a.yaml": loaded, "b.yaml": documents}) == []


def test_standalone_machine_config_of_a_cpu_node_is_fine(tmp_path: Path) -> None:
    assert run(tmp_path, {"worker.yaml": machine_config(COZY)}) == []


def test_standalone_machine_config_with_mixed_nvidia_tiers(tmp_path: Path) -> None:
    mixed = ext_id("nvidia-open-gpu-kernel-modules-lts", "nvidia-container-toolkit-production")
    found = run(tmp_path, {"w.yaml": machine_config(mixed, modules=NVIDIA_MODULES)})
    assert codes(found) == {"TS112"}


def test_ts124_talos_1_12_nvidia_config_without_the_bpf_sysctl(tmp_path: Path) -> None:
    found = run(tmp_path, {"w.yaml": machine_config(OPEN_PROD, "v1.12.4", modules=NVIDIA_MODULES)})
    assert codes(found) == {"TS124"}
    assert finding(found, "TS124").line == 8  # machine.kernel.modules


def test_ts124_passes_with_the_sysctl_or_on_talos_1_13(tmp_path: Path) -> None:
    with_sysctl = machine_config(
        OPEN_PROD, "v1.12.4", modules=NVIDIA_MODULES, sysctls="net.core.bpf_jit_harden: '1'"
    )
    newer = machine_config(OPEN_PROD, "v1.13.6", modules=NVIDIA_MODULES)
    cpu = machine_config(COZY, "v1.12.4")
    assert run(tmp_path, {"a.yaml": with_sysctl, "b.yaml": newer, "c.yaml": cpu}) == []


def test_ts125_install_extensions(tmp_path: Path) -> None:
    extra = "\n    extensions:\n      - image: ghcr.io/siderolabs/iscsi-tools:v0.1.6"
    found = run(tmp_path, {"w.yaml": machine_config(COZY, extra=extra)})
    assert codes(found) == {"TS125"}
    assert finding(found, "TS125").line == 7  # machine.install.extensions


def test_ts125_passes_on_talos_before_1_10(tmp_path: Path) -> None:
    extra = "\n    extensions:\n      - image: ghcr.io/siderolabs/iscsi-tools:v0.1.4"
    assert run(tmp_path, {"w.yaml": machine_config(COZY, "v1.9.5", extra=extra)}) == []


# --- TS155: NVLink-5 fabric manager without ib_umad -------------------------------------------

B200_SET = ext_id(
    "nvidia-open-gpu-kernel-modules-production",
    "nvidia-container-toolkit-production",
    "nvidia-fabricmanager-production",
)


def lint_for(tmp_path: Path, files: dict[str, str], hardware: str | None) -> list[Finding]:
    from schematic.inputs.profiles import load_profile

    write(tmp_path, files)
    profile = load_profile(hardware) if hardware else None
    return list(lint_paths([str(tmp_path)], hardware=profile).findings)


def test_ts155_b200_machine_config_without_ib_umad(tmp_path: Path) -> None:
    config = machine_config(B200_SET, "v1.13.9", modules=NVIDIA_MODULES)
    found = lint_for(tmp_path, {"b200.yaml": config}, "metal-hgx-b200-8x")
    assert codes(found) == {"TS155"}
    hit = finding(found, "TS155")
    assert hit.severity == "error" and hit.line == 8  # machine.kernel.modules
    assert "metal-hgx-b200-8x (8x NVIDIA B200, NVLink-5)" in hit.message
    assert "does not load ib_umad: the fabric manager fails with NV_WARN_NOTHING_TO_DO" in (
        hit.message
    )


def test_ts155_passes_with_ib_umad_on_hopper_or_without_the_hardware(tmp_path: Path) -> None:
    loaded = machine_config(B200_SET, "v1.13.9", modules=f"{NVIDIA_MODULES}, ib_umad")
    assert lint_for(tmp_path / "a", {"b200.yaml": loaded}, "metal-hgx-b200-8x") == []
    bare = machine_config(B200_SET, "v1.13.9", modules=NVIDIA_MODULES)
    assert lint_for(tmp_path / "b", {"h100.yaml": bare}, "metal-hgx-h100-8x") == []
    # A machine config alone does not say which GPUs the node has.
    assert lint_for(tmp_path / "c", {"b200.yaml": bare}, None) == []


def test_ts155_passes_on_the_generated_b200_output(tmp_path: Path) -> None:
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.output.render.files import render_files
    from schematic.plan.cluster import plan_cluster

    text = "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - {name: b200, profile: hgx-b200}\n"
    for name, body in render_files(plan_cluster(parse_cluster(text, "c.yaml"))).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    assert b"ib_umad" in (tmp_path / "b200" / "machine-config-patch.yaml").read_bytes()
    assert lint_for(tmp_path, {}, "metal-hgx-b200-8x") == []
    patch = tmp_path / "b200" / "machine-config-patch.yaml"
    patch.write_text(patch.read_text().replace("    - name: ib_umad\n", ""))
    assert codes(lint_for(tmp_path, {}, "metal-hgx-b200-8x")) == {"TS155"}


# --- installer images: vanilla Talos and TS156 -------------------------------------------------

EMPTY = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


def vanilla_config(image: str, modules: str = "") -> str:
    return machine_config(EMPTY, modules=modules).replace(
        f"factory.talos.dev/installer/{EMPTY}:v1.13.6", image
    )


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/siderolabs/installer:v1.13.9",
        f"factory.talos.dev/metal-installer/{EMPTY}:v1.14.0",
    ],
)
def test_both_vanilla_installers_are_the_empty_schematic(tmp_path: Path, image: str) -> None:
    assert run(tmp_path, {"w.yaml": vanilla_config(image)}) == []
    # Vanilla Talos has no NVIDIA modules to load, whichever form names it.
    found = run(tmp_path, {"w.yaml": vanilla_config(image, modules="nvidia")})
    assert codes(found) == {"TS122"}
    assert "37656798" in finding(found, "TS122").message


def test_ts156_plain_installer_on_talos_1_14(tmp_path: Path) -> None:
    found = run(tmp_path, {"w.yaml": vanilla_config("ghcr.io/siderolabs/installer:v1.14.0")})
    assert codes(found) == {"TS156"}
    hit = finding(found, "TS156")
    assert hit.line == 6  # machine.install.image
    assert f"factory.talos.dev/metal-installer/{EMPTY}:v1.14.0" in hit.message


def test_ts156_passes_before_1_14_and_with_the_metal_installer(tmp_path: Path) -> None:
    files = {
        "a.yaml": vanilla_config("ghcr.io/siderolabs/installer:v1.13.9"),
        "b.yaml": vanilla_config(f"factory.talos.dev/metal-installer/{EMPTY}:v1.14.1"),
        "c.yaml": vanilla_config(f"factory.talos.dev/metal-installer/{COZY}:v1.14.0"),
    }
    assert run(tmp_path, files) == []
    # --talos says the config is for 1.14: the same plain image is then unpublished.
    bumped = run(tmp_path / "x", {"d.yaml": files["a.yaml"]}, talos="v1.14.0")
    assert codes(bumped) == {"TS156"}


# An Omni template (siderolabs/omni client/pkg/template/internal/models: Cluster.talos.version
# is the release of every machine set), with machine sets as generate -f omni writes them.
OMNI_TEMPLATE = """\
kind: Cluster
name: c
kubernetes:
  version: v1.35.0
talos:
  version: {cluster}
---
kind: Workers
name: gpu
annotations:
  talos-schematic/talos-version: {workers}
machineClass:
  name: gpu
  size: unlimited
systemExtensions:
  - siderolabs/intel-ucode
patches:
  - name: gpu-kernelmoduleconfig-nvidia
    inline:
      apiVersion: v1alpha1
      kind: KernelModuleConfig
      name: nvidia
"""


def test_ts157_a_machine_set_for_another_talos_release(tmp_path: Path) -> None:
    template = OMNI_TEMPLATE.format(cluster="v1.13.9", workers="v1.14.0")
    found = [f for f in run(tmp_path, {"t.yaml": template}) if f.code == "TS157"]
    assert sorted((f.line, f.message) for f in found) == [
        (11, "omni Workers gpu: written for Talos v1.14.0, in a template for Talos v1.13.9"),
        (
            21,  # its kind: line
            "omni Workers gpu: a KernelModuleConfig patch (Talos 1.14 and later), in a "
            "template for Talos v1.13.9",
        ),
    ]


@pytest.mark.parametrize(("cluster", "workers"), [("v1.14.0", "v1.14.0"), ("v1.14.1", "v1.14.0")])
def test_ts157_passes_on_one_release(tmp_path: Path, cluster: str, workers: str) -> None:
    # A patch release of the same minor is the same release for the config's form.
    template = OMNI_TEMPLATE.format(cluster=cluster, workers=workers)
    assert "TS157" not in codes(run(tmp_path, {"t.yaml": template}))


def test_ts101_on_a_rendered_cpu_pool(tmp_path: Path) -> None:
    cpu = kmt(OPEN_PROD).split("          template:")[0]
    found = run(tmp_path, {"kmt.yaml": cpu})
    assert finding(found, "TS101").line == 16


SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: kubernetes-prod
  labels:
    kamaji.clastix.io/name: kubernetes-prod
spec:
  ports:
    - name: kube-apiserver
      port: 6443{extra}
"""


def test_ts131_service_without_trustd(tmp_path: Path) -> None:
    found = run(tmp_path, {"svc.yaml": SERVICE.format(extra="")})
    assert (finding(found, "TS131").line, finding(found, "TS131").severity) == (8, "warning")


def test_ts131_is_an_error_beside_the_talos_workers_it_serves(tmp_path: Path) -> None:
    pool = nodes("prod-cpu", schematic=COZY)
    found = run(tmp_path, {"svc.yaml": SERVICE.format(extra=""), "n.yaml": pool})
    assert [(f.code, f.severity) for f in found] == [("TS131", "error")]
    # Another Service among the inputs serves trustd: the workers may reach it there.
    other = SERVICE.replace("name: kubernetes-prod\n", "name: prod-trustd\n", 1).format(
        extra="\n    - name: talos-trustd\n      port: 50001"
    )
    found = run(tmp_path, {"trustd.yaml": other})
    assert [(f.code, f.severity) for f in found] == [("TS131", "warning")]


def test_ts131_passes_with_trustd(tmp_path: Path) -> None:
    extra = "\n    - name: talos-trustd\n      port: 50001"
    assert run(tmp_path, {"svc.yaml": SERVICE.format(extra=extra)}) == []


def test_ts131_ignores_other_services(tmp_path: Path) -> None:
    other = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports: [{port: 6443}]\n"
    assert run(tmp_path, {"svc.yaml": other}) == []


def test_ts131_kamaji_control_plane(tmp_path: Path) -> None:
    kcp = """\
    apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
    kind: KamajiControlPlane
    metadata:
      name: kubernetes-prod
    spec:
      network:
        additionalServicePorts:
          - {name: other, port: 1234}
    """
    assert "TS131" in codes(run(tmp_path, {"kcp.yaml": kcp}))
    fixed = kcp.replace("{name: other, port: 1234}", "{name: talos-trustd, port: 50001}")
    assert run(tmp_path, {"kcp.yaml": fixed}) == []


# --- TS140..TS142: add-ons --------------------------------------------------------------------

ADDONS = """\
nodeGroups:
  gpu:
    gpus:
      - name: nvidia.com/GH100_H200_SXM_141GB
    schematicID: {id}
addons:
  gpuOperator:
    enabled: true
    valuesOverride:
      gpu-operator:
{override}
  hami:
    enabled: {hami}
"""
FULL_ENV = """\
        devicePlugin:
          env:
            - {name: DEVICE_LIST_STRATEGY, value: cdi-annotations}
            - {name: DEVICE_ID_STRATEGY, value: uuid}
            - {name: NVIDIA_DRIVER_ROOT, value: /}
            - {name: NVIDIA_CTK_PATH, value: /usr/local/bin/nvidia-ctk}
            - {name: CDI_ANNOTATION_PREFIX, value: cdi.k8s.io/}
            - {name: MY_VAR, value: "on"}"""


# The operator's own driver and toolkit off: what Talos workers need on every chart.
OFF = "\n        driver: {enabled: false}\n        toolkit: {enabled: false}"


def values(override: str, hami: str = "false") -> str:
    return ADDONS.replace("{id}", OPEN_PROD).replace("{override}", override).replace("{hami}", hami)


def test_ts140_env_override_drops_cdi_defaults(tmp_path: Path) -> None:
    override = "        devicePlugin:\n          env:\n            - {name: MY_VAR, value: x}"
    found = run(tmp_path, {"values.yaml": values(override)}, talos="v1.13.6")
    hit = finding(found, "TS140")
    assert hit.line == 12 and "DEVICE_LIST_STRATEGY=cdi-annotations" in hit.message


def test_ts140_passes_with_the_full_list(tmp_path: Path) -> None:
    assert run(tmp_path, {"values.yaml": values(FULL_ENV + OFF)}, talos="v1.13.6") == []


def test_ts140_checks_the_values_not_only_the_names(tmp_path: Path) -> None:
    # Every variable is there, but the device plugin would list devices by env var: no CDI.
    envvar = FULL_ENV.replace("value: cdi-annotations", "value: envvar")
    assert envvar != FULL_ENV
    found = run(tmp_path, {"values.yaml": values(envvar)}, talos="v1.13.6")
    hit = finding(found, "TS140")
    assert "lacks DEVICE_LIST_STRATEGY=cdi-annotations" in hit.message
    assert "DEVICE_ID_STRATEGY" not in hit.message


def test_ts140_a_list_that_keeps_cdi_is_a_warning(tmp_path: Path) -> None:
    # The two variables cozystack/cozystack#3563 (a comment on pull request #3585) names for
    # CDI: a CDI strategy and the toolkit's path, without the three whose values come back.
    kept = (
        "        devicePlugin:\n          env:\n"
        "            - {name: DEVICE_LIST_STRATEGY, value: cdi-annotations}\n"
        "            - {name: NVIDIA_CTK_PATH, value: /usr/local/bin/nvidia-ctk}"
    )
    hit = finding(run(tmp_path, {"values.yaml": values(kept + OFF)}, talos="v1.13.6"), "TS140")
    assert hit.severity == "warning"
    assert "still hands out CDI devices" in hit.message
    # Without the CDI strategy it stays an error.
    plain = kept.replace("cdi-annotations", "envvar")
    hit = finding(run(tmp_path, {"values.yaml": values(plain + OFF)}, talos="v1.13.6"), "TS140")
    assert hit.severity == "error"


def test_ts141_operator_driver_enabled(tmp_path: Path) -> None:
    override = FULL_ENV + "\n        driver:\n          enabled: true"
    override += "\n        toolkit: {enabled: false}"
    found = run(tmp_path, {"values.yaml": values(override)}, talos="v1.13.6")
    assert codes(found) == {"TS141"}
    assert "driver.enabled: true" in finding(found, "TS141").message
    disabled = override.replace("enabled: true", "enabled: false")
    assert run(tmp_path, {"values.yaml": values(disabled)}, talos="v1.13.6") == []


def test_ts142_hami_with_gpu_pools(tmp_path: Path) -> None:
    found = run(tmp_path, {"values.yaml": values(FULL_ENV + OFF, hami="true")}, talos="v1.13.6")
    assert codes(found) == {"TS142"}


def test_ts141_enabled_addon_without_override_keeps_the_operator_driver_on(
    tmp_path: Path,
) -> None:
    text = values("").replace("    valuesOverride:\n      gpu-operator:\n\n", "")
    assert "valuesOverride" not in text
    found = run(tmp_path, {"values.yaml": text}, talos="v1.13.6")
    hits = [f for f in found if f.code == "TS141"]
    assert len(hits) == 2  # driver and toolkit
    assert "the operator's driver stays on: Cozystack v1.6's addon" in hits[0].message
    assert "GPU Operator v26.3.1 runs it by default" in hits[0].message


def test_ts141_override_without_the_wrapper_is_not_applied(tmp_path: Path) -> None:
    text = values("").replace(
        "      gpu-operator:\n\n",
        "      driver: {enabled: false}\n      toolkit: {enabled: false}\n",
    )
    found = run(tmp_path, {"values.yaml": text}, talos="v1.13.6")
    hits = [f for f in found if f.code == "TS141"]
    assert len(hits) == 2
    assert "written without the gpu-operator: level, so the chart ignores it" in hits[0].message


def test_ts140_accepts_talos_own_operator_shape_without_env_lists(tmp_path: Path) -> None:
    upstream = OFF + "\n        hostPaths: {driverInstallDir: /usr/local}"
    assert run(tmp_path, {"values.yaml": values(upstream.lstrip("\n"))}, talos="v1.14.0") == []
    # With an env list of its own, only the chart's (empty) list is required, not the CDI five.
    one = "        devicePlugin:\n          env:\n            - {name: MY_VAR, value: x}"
    found = run(tmp_path, {"values.yaml": values(one + upstream)}, talos="v1.14.0")
    assert "TS140" not in codes(found)
    # The same list without the upstream shape is TS140.
    found = run(tmp_path, {"values.yaml": values(one + OFF)}, talos="v1.14.0")
    assert "TS140" in codes(found)


def test_ts140_in_a_rendered_gpu_operator_release(tmp_path: Path) -> None:
    release = """\
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: kubernetes-prod-gpu-operator
    spec:
      values:
        gpu-operator:
          devicePlugin:
            env:
              - name: DEVICE_LIST_STRATEGY
                value: envvar
    """
    assert "TS140" in codes(run(tmp_path, {"hr.yaml": release}))


def test_ts140_against_the_pending_release_names_its_default_list(tmp_path: Path) -> None:
    override = "        devicePlugin:\n          env:\n            - {name: MY_VAR, value: x}"
    write(tmp_path, {"values.yaml": values(override)})
    report = lint_paths([str(tmp_path)], talos="v1.13.6", cozystack="pr3585")
    hit = finding(list(report.findings), "TS140")
    assert "replaces the chart's default list (Cozystack pr3585)" in hit.message
    assert "CDI_ANNOTATION_PREFIX=cdi.k8s.io/" in hit.message
    full = lint_paths([str(tmp_path)], talos="v1.13.6", cozystack="v1.6.2").findings
    assert "replaces the default list and lacks" in finding(list(full), "TS140").message
    with pytest.raises(ValueError, match="pr3585"):
        lint_paths([str(tmp_path)], cozystack="v0.1")


PLATFORM = """\
apiVersion: cozystack.io/v1alpha1
kind: Package
metadata:
  name: cozystack.cozystack-platform
spec:
  components:
    platform:
      values:
        gpu:
{gpu}
"""
RTX = "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION"


def test_ts143_gpu_the_management_cluster_does_not_permit(tmp_path: Path) -> None:
    pools = nodes("a", gpus=(H200,), schematic=OPEN_PROD) + "---\n"
    pools += nodes("b", gpus=(RTX,), schematic=OPEN_PROD)
    platform = PLATFORM.replace("{gpu}", "          replaceDefaults: false")
    found = run(tmp_path, {"pools.yaml": pools, "platform.yaml": platform}, talos="v1.13.6")
    assert [(f.code, f.object) for f in found if f.code == "TS143"] == [("TS143", "b")]
    hit = finding(found, "TS143")
    assert RTX in hit.message and "platform.yaml" in hit.message


def test_ts143_passes_once_permitted_and_needs_the_platform_values(tmp_path: Path) -> None:
    pools = nodes("b", gpus=(RTX,), schematic=OPEN_PROD)
    entry = (
        "          permittedHostDevices:\n            pciHostDevices:\n"
        f"              - {{pciVendorSelector: '10DE:2BB5', resourceName: {RTX}, "
        "externalResourceProvider: true}"
    )
    bare = "gpu:\n" + textwrap.dedent(entry.replace("          ", "  ", 1))
    assert "TS143" not in codes(run(tmp_path, {"pools.yaml": pools}, talos="v1.13.6"))
    assert "TS143" not in codes(
        run(tmp_path, {"pools.yaml": pools, "p.yaml": PLATFORM.replace("{gpu}", entry)})
    )
    assert "TS143" not in codes(run(tmp_path, {"pools.yaml": pools, "p.yaml": bare}))


def test_ts143_replace_defaults_drops_the_default_list(tmp_path: Path) -> None:
    pools = nodes("a", gpus=(H200,), schematic=OPEN_PROD)
    platform = "gpu:\n  replaceDefaults: true\n  permittedHostDevices: {pciHostDevices: []}\n"
    found = run(tmp_path, {"pools.yaml": pools, "p.yaml": platform}, talos="v1.13.6")
    assert codes(found) == {"TS143"}


# --- TS150 / TS151: extension names and order -------------------------------------------------


def test_ts150_tiered_names_on_talos_1_7(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=OPEN_PROD, talos="v1.7.6")})
    hit = finding(found, "TS150")
    assert "v1.7.6" in hit.message


def test_ts150_passes_with_unsuffixed_names_on_1_7(tmp_path: Path) -> None:
    old = ext_id("nvidia-open-gpu-kernel-modules", "nvidia-container-toolkit")
    found = run(tmp_path, {"n.yaml": nodes("g", gpus=(H200,), schematic=old, talos="v1.7.6")})
    assert "TS150" not in codes(found)


def test_ts151_unsorted_schematic_file(tmp_path: Path) -> None:
    body = """\
    customization:
      systemExtensions:
        officialExtensions:
          - siderolabs/qemu-guest-agent
          - siderolabs/nvidia-container-toolkit-lts
    """
    found = run(tmp_path, {"s.yaml": body})
    hit = finding(found, "TS151")
    sorted_id = Schematic.from_extensions(
        ["siderolabs/nvidia-container-toolkit-lts", "siderolabs/qemu-guest-agent"]
    ).id
    assert (hit.severity, hit.line) == ("note", 1) and sorted_id[:8] in hit.message
    fixed = (
        "customization:\n  systemExtensions:\n    officialExtensions:\n"
        "      - siderolabs/nvidia-container-toolkit-lts\n      - siderolabs/qemu-guest-agent\n"
    )
    assert run(tmp_path, {"s.yaml": fixed}) == []


# --- TS001..TS004: inputs ---------------------------------------------------------------------


def test_ts001_unresolved_id_is_reported_not_guessed(tmp_path: Path) -> None:
    unknown = "ab" * 32
    found = run(tmp_path, {"n.yaml": nodes("c", schematic=unknown)})
    assert codes(found) == {"TS001"}
    assert unknown in finding(found, "TS001").message


def test_ts001_resolved_by_a_schematic_file(tmp_path: Path) -> None:
    body = (
        "customization:\n  systemExtensions:\n    officialExtensions:\n"
        "      - siderolabs/nvidia-container-toolkit-lts\n"
    )
    schematic_id = Schematic.from_yaml(body).id
    files = {
        "pool/kubernetes-nodes.yaml": nodes("c", schematic=schematic_id),
        "pool/schematic.yaml": body,
    }
    assert codes(run(tmp_path, files)) == {"TS101"}


def test_ts001_resolved_by_a_fetcher(tmp_path: Path) -> None:
    unknown = "cd" * 32
    write(tmp_path, {"n.yaml": nodes("c", schematic=unknown)})
    asked: list[str] = []

    def fetch(schematic_id: str) -> Schematic | None:
        asked.append(schematic_id)
        return Schematic.from_extensions(["siderolabs/nvidia-container-toolkit-lts"])

    report = lint_paths([str(tmp_path)], fetch=fetch)
    assert asked == [unknown]
    assert {f.code for f in report.findings} == {"TS101"}


def test_ts002_broken_yaml(tmp_path: Path) -> None:
    found = run(tmp_path, {"bad.yaml": "kind: KubernetesNodes\na: [1, 2\nb: 3\n"})
    assert finding(found, "TS002").severity == "error"


def test_ts191_an_unparsable_file_naming_nothing_lint_reads_is_a_note(tmp_path: Path) -> None:
    # A dashboard kept with a comment line: neither JSON nor YAML, and nothing lint checks.
    found = run(tmp_path, {"grafana-dashboard.json": '// exported\n{"title": "GPU"}\n'})
    assert codes(found) == {"TS191"}
    assert finding(found, "TS191").severity == "note"


def test_lint_reads_standard_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "kind: KubernetesNodes\na: [1, 2\nb: 3\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    found = list(lint_paths(["-"]).findings)
    assert [(f.code, f.file) for f in found] == [("TS002", "-")]


def test_ts003_helm_template_is_skipped(tmp_path: Path) -> None:
    found = run(tmp_path, {"t.yaml": "a: {{ .Values.x }}\n  b: [\n"})
    assert codes(found) == {"TS003"}
    assert "helm template" in finding(found, "TS003").fix
    assert "talos-schematic lint -" in finding(found, "TS003").fix


def test_ts004_schematic_the_factory_rejects(tmp_path: Path) -> None:
    found = run(tmp_path, {"s.yaml": "customization:\n  extraKernelArgs: a\n"})
    assert finding(found, "TS004").line == 2


def test_ts005_a_failing_factory_is_asked_once_and_reported_beside_the_rest(
    tmp_path: Path,
) -> None:
    from schematic.errors import FactoryError

    asked: list[str] = []

    def unreachable(schematic_id: str) -> Schematic | None:
        asked.append(schematic_id)
        raise FactoryError("https://factory.example: connection refused")

    pool = """\
        apiVersion: apps.cozystack.io/v1alpha1
        kind: KubernetesNodes
        metadata: {{name: {name}}}
        spec: {{cluster: c, talos: {{version: v1.13.6, schematicID: {id}}}}}
        """
    write(
        tmp_path,
        {
            "a.yaml": pool.format(name="a", id="ab" * 32),
            "b.yaml": pool.format(name="b", id="cd" * 32),
        },
    )
    found = lint_paths(
        [str(tmp_path)], fetch=unreachable, factory="https://factory.example"
    ).findings
    assert len(asked) == 1
    assert sorted(f.code for f in found) == ["TS001", "TS001", "TS005"]
    (why,) = [f for f in found if f.code == "TS005"]
    assert (why.file, why.severity) == ("https://factory.example", "error")
    assert why.message == ("the factory was not asked: https://factory.example: connection refused")


def test_every_rule_is_tested_here() -> None:
    # A rule's test is named after its code wherever it lives: most here, the boot-media rules
    # (TS132-TS135) in test_lint_media.py, triage's own diagnoses (TS2xx) in test_triage*.py,
    # an output's own rule beside its renderer's tests.
    here = Path(__file__)
    source = "".join(path.read_text() for path in sorted(here.parent.glob("test_*.py")))
    untested = [code for code in RULES if f"test_{code.lower()}" not in source]
    assert untested == []


# --- the chart the values are for: PR #3294's node-group union, TS180, TS181, TS123 per chart --


def run_for(tmp_path: Path, files: dict[str, str], chart: str) -> list[Finding]:
    from schematic.facts.chart_targets import chart_target

    write(tmp_path, files)
    return list(lint_paths([str(tmp_path)], chart=chart_target(chart)).findings)


GROUP_IMAGE = """\
apiVersion: apps.cozystack.io/v1alpha1
kind: Kubernetes
metadata:
  name: prod
spec:
  talos:
    version: v1.13.6
  nodeGroups:
    gpu:
      gpus:
        - name: {gpu}
      image:
        {form}:
          schematicID: {id}
          version: {version}
    cpu:
      instanceType: u1.large
      image:
        factory:
          schematicID: {cpu_id}
"""


def test_pr3294_node_group_image_union_is_read(tmp_path: Path) -> None:
    files = {
        "app.yaml": GROUP_IMAGE.format(
            gpu=H200, form="factory", id=OPEN_LTS, version="v1.13.6", cpu_id=COZY
        )
    }
    # The group's own schematic is the NVIDIA one: no false TS110 / TS111, no TS101 elsewhere.
    assert codes(run(tmp_path, files)) == set()


def test_pr3294_node_group_image_union_finds_ts101_and_ts103(tmp_path: Path) -> None:
    files = {
        "app.yaml": GROUP_IMAGE.format(
            gpu=BLACKWELL, form="builtin", id=PROP_LTS, version="v1.13.6", cpu_id=OPEN_LTS
        )
    }
    found = run(tmp_path, files)
    assert {"TS101", "TS103"} <= codes(found)
    assert "TS110" not in codes(found) and "TS111" not in codes(found)
    assert "image.builtin.schematicID" in finding(found, "TS103").message
    assert finding(found, "TS101").object == "prod nodeGroups.cpu"


def test_ts180_image_version_differs_from_talos_version(tmp_path: Path) -> None:
    files = {
        "app.yaml": GROUP_IMAGE.format(
            gpu=H200, form="factory", id=OPEN_LTS, version="v1.13.9", cpu_id=COZY
        )
    }
    hit = finding(run(tmp_path, files), "TS180")
    assert hit.severity == "warning"
    assert "image.factory.version v1.13.9 differs from talos.version v1.13.6" in hit.message
    extra = "\n  osImage:\n    factory:\n      version: v1.12.4"
    found = run(tmp_path / "nodes", {"n.yaml": nodes("n", schematic=COZY, extra=extra)})
    assert "osImage.factory.version v1.12.4 differs from talos.version v1.13.6" in (
        finding(found, "TS180").message
    )


def test_ts180_passes_when_the_versions_agree(tmp_path: Path) -> None:
    found = run(tmp_path, {"n.yaml": nodes("n", schematic=COZY, layout="osImage")})
    assert "TS180" not in codes(found)


def test_ts181_a_value_the_chart_ignores(tmp_path: Path) -> None:
    files = {"n.yaml": nodes("n", gpus=(H200,), schematic=OPEN_LTS, layout="osImage")}
    found = run_for(tmp_path, files, "v1.6")
    hit = finding(found, "TS181")
    assert hit.severity == "error"
    assert "osImage: Cozystack v1.6.x's kubernetes-nodes chart has no osImage value" in (
        hit.message
    )
    assert "default schematic" in hit.message
    assert "osimage" in hit.fix
    # Without --chart nothing is assumed; on the chart that has osImage it is fine.
    assert "TS181" not in codes(run(tmp_path, files))
    assert "TS181" not in codes(run_for(tmp_path, files, "osimage"))


def test_ts181_passes_image_factory_ca_where_the_chart_has_it(tmp_path: Path) -> None:
    extra = "\n  kernelModules: []"
    text = nodes("n", schematic=COZY, layout="osImage", extra=extra) + (
        "  talos:\n    imageFactoryCA: |\n      -----BEGIN CERTIFICATE-----\n"
        "      -----END CERTIFICATE-----\n"
    )
    assert "TS181" not in codes(run_for(tmp_path, {"n.yaml": text}, "osimage"))
    found = run_for(tmp_path, {"n.yaml": text}, "pr3571")
    ignored = [f.message.split(": ")[1] for f in found if f.code == "TS181"]
    assert ignored == ["osImage", "talos.imageFactoryCA"]


def test_ts123_per_chart_for_values_without_kernel_modules(tmp_path: Path) -> None:
    files = {"n.yaml": nodes("g", gpus=(H200,), schematic=OPEN_LTS)}
    hit = finding(run_for(tmp_path, files, "v1.6"), "TS123")
    assert "Cozystack v1.6.x's chart loads no nvidia module (it has no kernelModules)" in (
        hit.message
    )
    assert "no durable way" in hit.message
    assert hit.fix == "move to a chart with kernelModules (--chart pr3571 or osimage)"
    # PR #3571's chart loads the NVIDIA set when kernelModules is unset.
    assert "TS123" not in codes(run_for(tmp_path, files, "pr3571"))
    assert "TS123" not in codes(run(tmp_path, files))


def test_ts123_fix_follows_the_chart_for_rendered_machine_configs(tmp_path: Path) -> None:
    files = {"kmt.yaml": kmt(OPEN_PROD), "tct.yaml": tct(OPEN_PROD, modules="")}
    default = finding(run(tmp_path, files), "TS123").fix
    assert default == RULES["TS123"].fix
    assert "unset" in finding(run_for(tmp_path, files, "pr3571"), "TS123").fix
    assert "--chart pr3571" in finding(run_for(tmp_path, files, "v1.6"), "TS123").fix


def test_ts190_a_dangling_link_below_a_directory_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").symlink_to(tmp_path / "gone.yaml")
    (tmp_path / "ok.yaml").write_text("a: 1\n")
    findings = lint_paths([str(tmp_path)]).findings
    assert [(f.code, f.severity, Path(f.file).name) for f in findings] == [
        ("TS190", "warning", "broken.yaml")
    ]
    # The link's target is named: what to restore or remove.
    assert f"a symbolic link to {tmp_path / 'gone.yaml'}, which does not exist" in (
        findings[0].message
    )


# Cozystack's gpu-operator Package, shaped as packages/system/gpu-operator/examples/
# values-native-talos.yaml (cozystack/cozystack at 3c780acd), with the toolkit switched on.
GPU_OPERATOR_PACKAGE = """\
apiVersion: cozystack.io/v1alpha1
kind: Package
metadata:
  name: cozystack.gpu-operator
spec:
  variant: default
  components:
    gpu-operator:
      values:
        gpu-operator:
          hostPaths:
            driverInstallDir: "/var/nvidia-driver"
          sandboxWorkloads:
            enabled: false
          toolkit:
            enabled: {toolkit}
          devicePlugin:
            enabled: true
"""


def test_ts141_in_the_gpu_operator_package(tmp_path: Path) -> None:
    found = run(tmp_path, {"package.yaml": GPU_OPERATOR_PACKAGE.format(toolkit="true")})
    ts141 = finding(found, "TS141")
    assert "Package 'cozystack.gpu-operator' values" in ts141.message
    assert ts141.line == 16  # toolkit.enabled


def test_the_gpu_operator_package_as_the_example_ships_it_is_clean(tmp_path: Path) -> None:
    found = run(tmp_path, {"package.yaml": GPU_OPERATOR_PACKAGE.format(toolkit="false")})
    assert not codes(found) & {"TS140", "TS141"}


def test_ts141_not_on_a_switched_off_addon_with_an_empty_override(tmp_path: Path) -> None:
    # Cozystack's own packages/apps/kubernetes/values.yaml (3c780acd): the addon off, its
    # override empty. Nothing runs, so nothing is wrong.
    values = "addons:\n  gpuOperator:\n    enabled: false\n    valuesOverride: {}\n"
    assert not codes(run(tmp_path, {"values.yaml": values})) & {"TS140", "TS141"}


# --- --hardware: the GPU rules for pools that do not say their GPUs --------------------------


def test_hardware_feeds_ts103_proprietary_modules_on_blackwell(tmp_path: Path) -> None:
    config = machine_config(PROP_PROD, "v1.13.9", modules=f"{NVIDIA_MODULES}, ib_umad")
    found = lint_for(tmp_path, {"worker.yaml": config}, "metal-hgx-b200-8x")
    assert codes(found) == {"TS103"}
    hit = finding(found, "TS103")
    assert hit.severity == "error"
    assert "metal-hgx-b200-8x (10de:2901 NVIDIA B200, Blackwell) needs the open" in hit.message
    assert "nonfree-kmod-nvidia-production loads and finds no device" in hit.message
    # Without --hardware the machine config does not say the GPU: nothing to refuse on.
    assert lint_for(tmp_path, {}, None) == []


def test_hardware_open_modules_on_blackwell_or_hopper_give_nothing(tmp_path: Path) -> None:
    config = machine_config(OPEN_PROD, "v1.13.9", modules=f"{NVIDIA_MODULES}, ib_umad")
    assert lint_for(tmp_path / "a", {"worker.yaml": config}, "metal-hgx-b200-8x") == []
    assert lint_for(tmp_path / "b", {"worker.yaml": config}, "kubevirt-b200") == []
    proprietary = machine_config(PROP_PROD, "v1.13.9", modules=NVIDIA_MODULES)
    assert lint_for(tmp_path / "c", {"worker.yaml": proprietary}, "metal-hgx-h100-8x") == []


def test_hardware_feeds_ts104_open_modules_on_volta(tmp_path: Path) -> None:
    config = machine_config(OPEN_LTS, "v1.13.9", modules=NVIDIA_MODULES)
    found = lint_for(tmp_path, {"worker.yaml": config}, "kubevirt-v100-pcie-16gb")
    assert codes(found) == {"TS104"}
    assert "Volta) has no GSP" in finding(found, "TS104").message
    proprietary = machine_config(PROP_LTS, "v1.13.9", modules=NVIDIA_MODULES)
    assert lint_for(tmp_path / "ok", {"w.yaml": proprietary}, "kubevirt-v100-pcie-16gb") == []


def test_hardware_feeds_ts105_volta_on_a_branch_that_dropped_it(tmp_path: Path) -> None:
    config = machine_config(PROP_PROD, "v1.13.9", modules=NVIDIA_MODULES)
    found = lint_for(tmp_path, {"worker.yaml": config}, "kubevirt-v100-pcie-16gb")
    assert codes(found) == {"TS105"}
    assert "which dropped kubevirt-v100-pcie-16gb" in finding(found, "TS105").message


def test_hardware_without_an_nvidia_gpu_feeds_ts101(tmp_path: Path) -> None:
    config = machine_config(OPEN_PROD, "v1.13.9", modules=NVIDIA_MODULES)
    found = lint_for(tmp_path, {"worker.yaml": config}, "metal-amd")
    assert codes(found) == {"TS101"}
    assert "metal-amd (--hardware) has no NVIDIA GPU" in finding(found, "TS101").message
    # TS123 is certain once the hardware says there is an NVIDIA GPU.
    bare = machine_config(OPEN_PROD, "v1.13.9")
    found = lint_for(tmp_path / "l40s", {"worker.yaml": bare}, "kubevirt-l40s")
    assert codes(found) == {"TS123"} and finding(found, "TS123").severity == "error"
    assert lint_for(tmp_path / "cpu", {"worker.yaml": machine_config(COZY)}, "metal-amd") == []


def test_hardware_gpu_with_a_schematic_without_nvidia_feeds_ts110(tmp_path: Path) -> None:
    found = lint_for(tmp_path, {"worker.yaml": machine_config(COZY)}, "kubevirt-l40s")
    assert codes(found) == {"TS110", "TS111"}
    assert "kubevirt-l40s (NVIDIA L40S)" in finding(found, "TS110").message


def test_ts192_terraform_hcl_that_builds_a_schematic_is_said_unread(tmp_path: Path) -> None:
    # The provider's own example (tests/data/lint_corpus/SOURCES.md): a directory of it was
    # "0 files", exit 0; named alone it was TS002 "not valid YAML".
    example = Path(__file__).parent / "data" / "lint_corpus"
    hcl = (example / "terraform-provider-image-factory-schematic.tf").read_text()
    (tmp_path / "main.tf").write_text(hcl)
    resource = hcl.splitlines().index('resource "talos_image_factory_schematic" "this" {') + 1
    for given in (tmp_path, tmp_path / "main.tf"):
        found = lint_paths([str(given)]).findings
        assert [(f.code, f.severity, f.line) for f in found] == [("TS192", "warning", resource)]
    # Terraform that builds no schematic (it pins the installer image) is not mentioned.
    (tmp_path / "main.tf").write_text(
        (example / "terraform-provider-machine-configuration-apply.tf").read_text()
    )
    assert not lint_paths([str(tmp_path)]).findings


def test_ts136_a_rollout_line_without_the_pools_schematic(tmp_path: Path) -> None:
    repository, tuppr = "factory.talos.dev/metal-installer", "tuppr.home-operations.com/schematic"
    index = f"""\
        generator: talos-schematic
        cluster: c
        talos: v1.13.9
        pools:
        - name: gpu
          schematicID: {OPEN_PROD}
          extensions: [siderolabs/nvidia-open-gpu-kernel-modules-production]
        - name: cpu
          schematicID: {ext_id("iscsi-tools")}
          extensions: [siderolabs/iscsi-tools]
        """
    script = f"""\
        # pool gpu (GPU): factory.talos.dev/metal-installer/{OPEN_PROD}:v1.14.0
        talosctl upgrade --nodes 10.0.0.1 --image {repository}/{OPEN_PROD}:v1.14.0
        talosctl upgrade --nodes 10.0.0.2 --image ghcr.io/siderolabs/installer:v1.14.0
        talosctl upgrade --nodes 10.0.0.3
        # talosctl upgrade --nodes 10.0.0.4
        kubectl annotate node -l node.kubernetes.io/pool=cpu {tuppr}={OPEN_PROD}
        """
    found = [
        f for f in run(tmp_path, {"index.yaml": index, "rollout.sh": script}) if f.code == "TS136"
    ]
    assert [f.line for f in found] == [3, 4, 6]
    assert "drops its extensions" in found[0].message and "no --image" in found[1].message
    assert "installs pool 'gpu'" in found[2].message
