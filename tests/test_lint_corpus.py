"""lint over real public manifests: each file's verdict, and the input classes they exposed.

The files below tests/data/lint_corpus/ are public text as found (SOURCES.md beside them says
where); each has the findings lint must give it, errors and warnings (notes are advice and
left out), with no options and with the release or chart a user would pass. A file that must
give nothing is as much a test as one that must fail the gate.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.errors import SchematicError
from schematic.facts.catalog import extensions_never_together, factory_alias
from schematic.inputs.profiles import load_profile

CORPUS = Path(__file__).parent / "data" / "lint_corpus"

Verdict = frozenset[tuple[str, str]]


def verdict(*codes: str) -> Verdict:
    """``"error TS110"`` ... as (severity, code) pairs."""
    return frozenset((code.split()[0], code.split()[1]) for code in codes)


NOTHING = verdict()
# file, options, the errors and warnings lint must give it.
EXPECTED: list[tuple[str, dict[str, str], Verdict]] = [
    # A GPU pool on the chart's default schematic: no NVIDIA module can load (TS110/TS111).
    (
        "hikube-kubernetes-app-gpu-nodegroup.yaml",
        {},
        verdict("error TS110", "error TS111"),
    ),
    (
        "hikube-kubernetes-app-gpu-nodegroup.yaml",
        {"talos": "v1.13.9"},
        verdict("error TS110", "error TS111"),
    ),
    # The same shown as a bare `spec:` (the app without its kind), with the operator addon on.
    (
        "hikube-cluster-gpu-nodegroup.yaml",
        {},
        verdict("error TS110", "error TS111", "warning TS141"),
    ),
    ("cozystack-addons-gpu-operator-driver-enabled.yaml", {}, verdict("warning TS141")),
    # Both kernel-module flavours on one machine (TS113); the modules are loaded nowhere, and
    # Talos 1.6 wants the BPF sysctl (machine configs alone: warnings).
    (
        "omni-docs-extensions-cluster.yaml",
        {},
        verdict("error TS113", "warning TS123", "warning TS124"),
    ),
    # A tiered NVIDIA name (v1.8 on) beside the old fabric-manager name (up to v1.7, no
    # working alias later): the factory builds it for no release.
    ("schematic-gpu-fabricmanager-untiered.yaml", {}, verdict("error TS150")),
    ("schematic-gpu-fabricmanager-untiered.yaml", {"talos": "v1.9.5"}, verdict("error TS150")),
    # `systemExtensions:` at the top, not under `customization:`: the factory (and `id`)
    # refuse the schematic, so lint does too.
    ("schematic-toplevel-extensions-i915.yaml", {}, verdict("error TS004")),
    ("schematic-toplevel-extensions-intel-ucode.yaml", {}, verdict("error TS004")),
    # Healthy GPU inputs: nothing to report.
    ("omni-ai-conformance-template.yaml", {}, NOTHING),
    ("talconfig-gpu-worker-snippet.yaml", {}, NOTHING),
    # The same excerpt (no clusterName) read as talhelper's, for the machine it runs on:
    # proprietary modules on Blackwell cannot drive it; NVIDIA extensions on a CPU node loop.
    (
        "talconfig-gpu-worker-snippet.yaml",
        {"hardware": "kubevirt-rtx-pro-6000-blackwell-server"},
        verdict("error TS103"),
    ),
    ("talconfig-gpu-worker-snippet.yaml", {"hardware": "kubevirt-cpu"}, verdict("error TS101")),
    ("talconfig-gpu-worker-snippet.yaml", {"hardware": "kubevirt-l40s"}, NOTHING),
    (
        "omni-ai-conformance-template.yaml",
        {"hardware": "kubevirt-rtx-pro-6000-blackwell-server"},
        verdict("error TS103", "error TS106"),
    ),
    ("omni-ai-conformance-template.yaml", {"hardware": "kubevirt-l40s"}, NOTHING),
    ("schematic-nonfree-production-vmware.yaml", {}, NOTHING),
    ("schematic-nonfree-production-vmware.yaml", {"talos": "v1.8.3"}, NOTHING),
    # A schematic file alone, for the machine --hardware names.
    (
        "schematic-nonfree-production-vmware.yaml",
        {"hardware": "kubevirt-rtx-pro-6000-blackwell-server"},
        verdict("error TS103"),
    ),
    ("schematic-nonfree-production-vmware.yaml", {"hardware": "kubevirt-l40s"}, NOTHING),
    ("schematic-open-lts.yaml", {"hardware": "kubevirt-v100-pcie-16gb"}, verdict("error TS104")),
    ("schematic-open-lts.yaml", {"hardware": "kubevirt-cpu"}, verdict("error TS101")),
    ("schematic-storage.yaml", {"hardware": "kubevirt-cpu"}, NOTHING),
    ("schematic-open-lts.yaml", {}, NOTHING),
    ("schematic-open-lts.yaml", {"talos": "v1.14.0"}, NOTHING),
    ("gpu-worker-patch-proxmox.yaml", {}, NOTHING),
    # `install:` written twice in `machine:`: go-yaml, so Talos, refuses the patch.
    ("patch-archetype-compute-gpu.yaml", {}, verdict("error TS002")),
    ("kernelmoduleconfig-nvidia.yaml", {}, NOTHING),
    ("talconfig-node-velaryon.yaml", {}, NOTHING),
    ("talhelper-templated-nvidia-patch.yaml", {}, NOTHING),
    # Cozystack's own chart template: not YAML until rendered (a note only).
    ("cozystack-chart-template-gpu-operator-helmrelease.yaml", {}, NOTHING),
    # GPU Operator values and HelmReleases of other platforms: not Cozystack's addon.
    ("flux-helmrelease-gpu-operator-mig.yaml", {}, NOTHING),
    ("flux-helmrelease-gpu-operator-nodeselector.yaml", {}, NOTHING),
    ("gpu-operator-values-mig-timeslicing.yaml", {}, NOTHING),
    # machine.install.extensions: no effect from Talos 1.10 (a warning while the release is
    # unknown), the way to install extensions before it (nothing to say on 1.7).
    ("worker-install-extensions-open-535.yaml", {}, verdict("warning TS125")),
    ("worker-install-extensions-open-535.yaml", {"talos": "v1.7.0"}, NOTHING),
    ("patch-install-extensions-570-v1.10.yaml", {}, verdict("warning TS125")),
    ("rfc6902-gpu-worker-patch-docs-template.yaml", {}, verdict("warning TS125")),
    ("rfc6902-gpu-worker-patch-docs-template.yaml", {"talos": "v1.5.5"}, NOTHING),
    # An AMD GPU node: no NVIDIA rule applies; `amdgpu` exists from Talos 1.9 only.
    ("talconfig-amdgpu-apu.yaml", {}, NOTHING),
    ("talconfig-amdgpu-apu.yaml", {"talos": "v1.13.9"}, NOTHING),
    ("talconfig-amdgpu-apu.yaml", {"talos": "v1.7.0"}, verdict("error TS150")),
    # Healthy non-GPU inputs: must not fire.
    ("talconfig-rpi5-anchors.yaml", {}, NOTHING),
    ("schematic-storage.yaml", {}, NOTHING),
    ("schematic-storage.yaml", {"talos": "v1.10.0"}, NOTHING),
    ("schematic-zfs-nvidia-commented.yaml", {}, NOTHING),
    ("schematic-zfs-nvidia-commented.yaml", {"talos": "v1.10.0"}, NOTHING),
    ("talos114-multidoc-nongpu.yaml", {}, NOTHING),
    ("kernelmoduleconfig-iscsi-nongpu.yaml", {}, NOTHING),
    # Terraform HCL builds its schematic with expressions lint does not evaluate: said, never
    # passed over in silence; HCL that builds no schematic (it only pins an installer) is not.
    ("terraform-provider-image-factory-schematic.tf", {}, verdict("warning TS192")),
    ("terraform-provider-machine-configuration-apply.tf", {}, NOTHING),
]


def findings(paths: list[str], **options: str) -> Verdict:
    assert set(options) <= {"talos", "hardware"}
    hardware = load_profile(options["hardware"]) if "hardware" in options else None
    report = lint_paths(paths, talos=options.get("talos"), hardware=hardware)
    return frozenset((f.severity, f.code) for f in report.findings if f.severity != "note")


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    EXPECTED,
    ids=[f"{name}{''.join(f'-{v}' for v in opts.values())}" for name, opts, _ in EXPECTED],
)
def test_each_real_file_gets_its_verdict(
    name: str, options: dict[str, str], expected: Verdict
) -> None:
    assert findings([str(CORPUS / name)], **options) == expected


def test_every_corpus_file_has_a_verdict_and_a_source() -> None:
    files = {path.name for path in CORPUS.iterdir() if path.name != "SOURCES.md"}
    assert files == {name for name, _, _ in EXPECTED}
    sources = (CORPUS / "SOURCES.md").read_text()
    listed = set(re.findall(r"`([\w.-]+\.(?:yaml|tf))`", sources))
    assert files <= listed


def test_the_whole_corpus_in_one_run_names_each_failing_file() -> None:
    report = lint_paths([str(CORPUS)])
    failing = {Path(f.file).name for f in report.findings if f.severity == "error"}
    expected = {
        name
        for name, options, found in EXPECTED
        if not options and any(severity == "error" for severity, _ in found)
    }
    assert failing == expected


# --- the classes of input the corpus exposed -------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_untiered_nvidia_names_build_as_lts_from_talos_1_8(tmp_path: Path) -> None:
    # The factory builds an old untiered NVIDIA name as its -lts successor.
    schematic = write(
        tmp_path,
        "schematic.yaml",
        """\
        customization:
          systemExtensions:
            officialExtensions:
              - siderolabs/nonfree-kmod-nvidia
              - siderolabs/nvidia-container-toolkit
        """,
    )
    assert factory_alias("siderolabs/nonfree-kmod-nvidia") == "siderolabs/nonfree-kmod-nvidia-lts"
    assert findings([schematic], talos="v1.13.9") == NOTHING


def test_old_fabric_manager_name_beside_a_tiered_one_builds_for_no_release() -> None:
    apart = dict(
        extensions_never_together(
            ["siderolabs/nvidia-fabricmanager", "siderolabs/nvidia-container-toolkit-production"]
        )
    )
    assert apart == {
        "siderolabs/nvidia-fabricmanager": "v1.2.0 … v1.7.7",
        "siderolabs/nvidia-container-toolkit-production": "v1.8.0 … v1.14.0",
    }
    # An old name whose alias exists builds beside a tiered one (on v1.8 and later).
    assert not extensions_never_together(
        ["siderolabs/nvidia-container-toolkit", "siderolabs/nonfree-kmod-nvidia-lts"]
    )
    # A name no release knows says nothing about when the others build.
    assert not extensions_never_together(["siderolabs/mei", "example.org/not-official"])


def test_old_and_tiered_nvidia_names_are_one_tier(tmp_path: Path) -> None:
    talconfig = write(
        tmp_path,
        "talconfig.yaml",
        """\
        clusterName: home
        talosVersion: v1.12.6
        endpoint: https://192.168.200.10:6443
        nodes:
          - hostname: gpu1
            ipAddress: 192.168.200.21
            controlPlane: false
            schematic:
              customization:
                systemExtensions:
                  officialExtensions:
                    - siderolabs/nonfree-kmod-nvidia-lts
                    - siderolabs/nvidia-container-toolkit
            patches:
              - |-
                machine:
                  kernel:
                    modules:
                      - name: nvidia
                      - name: nvidia_uvm
                      - name: nvidia_drm
                      - name: nvidia_modeset
                  sysctls:
                    net.core.bpf_jit_harden: 1
        """,
    )
    assert findings([talconfig]) == NOTHING


OMNI = """\
kind: Cluster
name: gpu
kubernetes:
  version: v1.30.1
talos:
  version: {talos}
patches:
  - name: nvidia
    inline:
      machine:
        kernel:
          modules:
            - name: nvidia
            - name: nvidia_uvm
            - name: nvidia_drm
            - name: nvidia_modeset
        sysctls:
          net.core.bpf_jit_harden: 1
---
kind: ControlPlane
machines:
  - 11111111-1111-4111-8111-111111111111
---
kind: Workers
name: gpu
machines:
  - 22222222-2222-4222-8222-222222222222
systemExtensions:
{extensions}
"""


@pytest.mark.parametrize(
    ("talos", "extensions"),
    [
        # Omni writes the old names on a release before v1.8 ...
        ("v1.7.6", ["nvidia-open-gpu-kernel-modules-lts", "nvidia-container-toolkit-lts"]),
        # ... and the -lts ones from v1.8.
        ("v1.11.3", ["nvidia-open-gpu-kernel-modules", "nvidia-container-toolkit"]),
    ],
)
def test_omni_renames_nvidia_extensions_by_the_clusters_release(
    tmp_path: Path, talos: str, extensions: list[str]
) -> None:
    listed = "".join(f"  - siderolabs/{name}\n" for name in extensions)
    template = tmp_path / "template.yaml"
    template.write_text(OMNI.format(talos=talos, extensions=listed))
    assert findings([str(template)]) == NOTHING


def test_omni_keeps_a_rename_that_names_no_extension(tmp_path: Path) -> None:
    listed = "  - siderolabs/nvidia-fabricmanager\n  - siderolabs/nvidia-container-toolkit\n"
    listed += "  - siderolabs/nvidia-open-gpu-kernel-modules\n"
    template = tmp_path / "template.yaml"
    template.write_text(OMNI.format(talos="v1.11.3", extensions=listed))
    report = lint_paths([str(template)])
    named = [f.message for f in report.findings if f.code == "TS150"]
    assert len(named) == 1 and "'siderolabs/nvidia-fabricmanager'" in named[0]


def test_a_kubernetes_app_shown_without_its_kind_is_read(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        "cluster.yaml",
        """\
        spec:
          nodeGroups:
            gpu:
              minReplicas: 1
              gpus:
                - name: nvidia.com/AD102GL_L40S
        """,
    )
    assert findings([spec]) == verdict("error TS110", "error TS111")
    # Any other object's spec is not a pool.
    other = write(tmp_path, "other.yaml", "spec:\n  replicas: 2\n  nodeGroups: [a]\n")
    assert findings([other]) == NOTHING


def test_a_chart_default_finding_points_at_the_node_group() -> None:
    report = lint_paths([str(CORPUS / "hikube-kubernetes-app-gpu-nodegroup.yaml")])
    lines = {f.line or 0 for f in report.findings if f.code in ("TS110", "TS111")}
    text = (CORPUS / "hikube-kubernetes-app-gpu-nodegroup.yaml").read_text().splitlines()
    assert [text[line - 1].strip() for line in sorted(lines)] == ["gpu:"]


def test_a_schematic_a_pool_uses_is_reported_once(tmp_path: Path) -> None:
    report = lint_paths([str(CORPUS / "talconfig-amdgpu-apu.yaml")], talos="v1.7.0")
    assert [f.code for f in report.findings if f.severity == "error"] == ["TS150"]


def test_a_key_written_twice_in_a_machine_config_is_ts002_at_its_line(tmp_path: Path) -> None:
    patch = write(
        tmp_path,
        "patch.yaml",
        """\
        machine:
          kernel:
            modules:
              - name: nvidia
          kernel:
            modules:
              - name: nvidia_uvm
        """,
    )
    report = lint_paths([patch])
    assert [(f.code, f.line) for f in report.findings] == [("TS002", 5)]
    assert "machine.kernel" in report.findings[0].message
    # The same key in values Helm reads is not a machine config: Helm keeps the later one.
    values = write(tmp_path, "values.yaml", "gpus: []\ngpus:\n  - name: nvidia.com/GA102GL_A10\n")
    assert all(f.code != "TS002" for f in lint_paths([values]).findings)


def test_a_talhelper_node_pinned_to_a_factory_installer_is_checked_with_its_schematic(
    tmp_path: Path,
) -> None:
    # The velaryon node of the corpus in a talconfig of its release: its talosImageURL names
    # the factory UI's proprietary LTS set, and Talos 1.11 still needs the BPF sysctl.
    node = (CORPUS / "talconfig-node-velaryon.yaml").read_text()
    head = "clusterName: goldentooth\ntalosVersion: v1.11.1\nendpoint: https://10.4.0.10:6443\n"
    talconfig = tmp_path / "talconfig.yaml"
    talconfig.write_text(head + "nodes:\n" + textwrap.indent(node, "  "))
    assert findings([str(talconfig)]) == verdict("warning TS124")
    # An ID nothing resolves is said, not passed over.
    unknown = talconfig.read_text().replace("af8eb824", "0000aaaa")
    talconfig.write_text(unknown)
    assert findings([str(talconfig)]) == verdict("warning TS001")


def test_a_talconfig_excerpt_without_cluster_name_is_read(tmp_path: Path) -> None:
    excerpt = (CORPUS / "talconfig-gpu-worker-snippet.yaml").read_text()
    assert findings([str(CORPUS / "talconfig-gpu-worker-snippet.yaml")], hardware="kubevirt-cpu")
    # Another tool's `nodes:` list (no talhelper node keys) is not a talconfig.
    other = write(tmp_path, "inventory.yaml", "nodes:\n  - name: a\n    role: worker\n")
    assert findings([other], hardware="kubevirt-cpu") == NOTHING
    assert "clusterName" not in excerpt


def test_hardware_checks_a_schematic_file_alone_once(tmp_path: Path) -> None:
    path = str(CORPUS / "schematic-gpu-fabricmanager-untiered.yaml")
    report = lint_paths([path], hardware=load_profile("kubevirt-cpu"))
    codes = sorted(f.code for f in report.findings if f.severity == "error")
    assert codes == ["TS101", "TS150"]


def test_a_talhelper_node_list_shown_alone_is_read_as_under_nodes(tmp_path: Path) -> None:
    # Guides show the node list without its `nodes:` key too: the corpus excerpt's list, moved
    # to the top, gets the same verdicts.
    excerpt = (CORPUS / "talconfig-gpu-worker-snippet.yaml").read_text()
    listed = excerpt.split("nodes:\n", 1)[1]
    alone = write(tmp_path, "nodes.yaml", textwrap.dedent(listed))
    for profile, expected in (
        ("kubevirt-cpu", verdict("error TS101")),
        ("kubevirt-rtx-pro-6000-blackwell-server", verdict("error TS103")),
        ("kubevirt-l40s", NOTHING),
    ):
        assert findings([alone], hardware=profile) == expected, profile
    # Without its module patch the list loads no NVIDIA module: said as for a talconfig.
    bare = write(tmp_path, "bare.yaml", textwrap.dedent(listed).split("  nodeLabels:")[0])
    assert findings([bare]) == verdict("warning TS123")
    # Another tool's host list (keys talhelper nodes do not have) is not talhelper's.
    other = write(tmp_path, "hosts.yaml", "- hostname: gpu-01\n  ip: 192.168.64.150\n")
    assert findings([other], hardware="kubevirt-cpu") == NOTHING


def test_a_schematic_lint_refuses_is_one_id_refuses() -> None:
    """lint reads a schematic with the decoder `id` uses: each refusal at the same line."""
    for name in (
        "schematic-toplevel-extensions-i915.yaml",
        "schematic-toplevel-extensions-intel-ucode.yaml",
    ):
        path = CORPUS / name
        with pytest.raises(SchematicError) as refused:
            Schematic.from_yaml(path.read_text(), str(path))
        (finding,) = lint_paths([str(path)]).findings
        assert (finding.code, finding.line) == ("TS004", refused.value.line)
        assert "systemExtensions belongs under customization:" in finding.message


def test_documents_that_are_not_schematics_are_not_read_as_one(tmp_path: Path) -> None:
    # Kind-less YAML whose keys are not all a schematic's: values of some chart, a config.
    shapes = {
        "values.yaml": "meta:\n  team: gpu\nreplicas: 2\n",
        "boot.yaml": "bootloader: grub\nserial: ttyS0\n",
    }
    for name, text in shapes.items():
        report = lint_paths([write(tmp_path, name, text)])
        assert not [f for f in report.findings if f.severity != "note"], name
    # The same words in a file named schematic.yaml are a schematic, read (and refused) as one.
    text = "officialExtensions:\n  - siderolabs/i915\n"
    report = lint_paths([write(tmp_path, "schematic.yaml", text)])
    assert [f.code for f in report.findings] == ["TS004"]
