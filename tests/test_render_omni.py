"""`generate -f omni`: each pool as an Omni cluster-template `Workers` machine set, held to
Omni's own template types, and read back by `lint`.

Omni decodes every template document strictly (``KnownFields(true)``) into the Go structs of
siderolabs/omni ``client/pkg/template/internal/models`` at b1ea5df26e4ea80857a444c1c982387863cadbd9
(2026-08-21): ``machineset.go`` (``MachineSet``, ``MachineClassConfig``, ``Size``), ``workers.go``,
``models.go`` (``Meta``, ``Descriptors``), ``patch.go`` (``Patch``) and ``optionallist.go``; a
config patch is refused for the fields and documents of
``client/pkg/omni/resources/omni/config_patch.go`` (``forbiddenFields``,
``forbiddenDocuments``), and a label or annotation for the reserved prefix of ``labels.go``
(``SystemLabelPrefix``). The sets below are those structs' YAML field names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.lint import lint_paths
from schematic.facts.nvidia import NVIDIA_MODULES

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"

# models.MachineSet (inlined into Workers): Meta, SystemExtensions, Name, Descriptors (inline),
# BootstrapSpec, Machines, MachineClass, UpdateStrategy, DeleteStrategy, UpgradeStrategy,
# Patches, KernelArgs.
WORKERS_FIELDS = {
    "kind",
    "systemExtensions",
    "name",
    "labels",
    "annotations",
    "bootstrapSpec",
    "machines",
    "machineClass",
    "updateStrategy",
    "deleteStrategy",
    "upgradeStrategy",
    "patches",
    "kernelArgs",
}
MACHINE_CLASS_FIELDS = {"name", "size"}
# Size.UnmarshalYAML: a machine count, or an allocation type by name.
SIZE_WORDS = {"unlimited", "∞", "infinity", "Unlimited", "Static"}
PATCH_FIELDS = {"name", "idOverride", "labels", "annotations", "file", "inline"}
FORBIDDEN_FIELDS = (
    "cluster.clusterName",
    "cluster.id",
    "cluster.controlPlane.endpoint",
    "cluster.token",
    "cluster.secret",
    "cluster.aescbcEncryptionSecret",
    "cluster.secretboxEncryptionSecret",
    "cluster.ca",
    "cluster.acceptedCAs",
    "cluster.serviceAccount",
    "machine.token",
    "machine.ca",
    "machine.type",
    "machine.install.disk",
    "machine.install.extensions",
    "machine.acceptedCAs",
)
FORBIDDEN_DOCUMENTS = {
    "UnattendedInstallConfig",
    "DiscoveryIdentityConfig",
    "KubeClusterConfig",
    "KubeEtcdEncryptionConfig",
    "KubeAPIServerCAConfig",
    "KubeAggregatorCAConfig",
}
SYSTEM_LABEL_PREFIX = "omni.sidero.dev/"
CONTROL_PLANES_NAME = "control-planes"

METAL = """\
cluster: metal
talos:
  version: {talos}
pools:
  - name: hgx
    profile: metal-hgx-b200-8x
  - name: cpu
    profile: metal-intel
"""


def _has(document: dict[str, Any], dotted: str) -> bool:
    node: Any = document
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def omni_problems(document: Any) -> list[str]:
    """What Omni's template loader and validation would refuse in one Workers document."""
    problems: list[str] = []
    if not isinstance(document, dict) or document.get("kind") != "Workers":
        return [f"not a Workers document: {document!r}"]
    problems += [f"unknown field {key}" for key in set(document) - WORKERS_FIELDS]
    if document.get("name") == CONTROL_PLANES_NAME:
        problems.append("name control-planes is the control plane's")
    if "machines" in document and "machineClass" in document:
        problems.append("both machines and machineClass")
    machine_class = document.get("machineClass", {})
    problems += [f"machineClass.{k}" for k in set(machine_class) - MACHINE_CLASS_FIELDS]
    size = machine_class.get("size")
    if not (isinstance(size, int) and size >= 0) and size not in SIZE_WORDS:
        problems.append(f"machineClass.size {size!r}")
    for key in ("systemExtensions", "kernelArgs"):
        value = document.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(f"{key} is not a list of strings")
    for key in ("labels", "annotations"):
        for name, value in document.get(key, {}).items():
            if name.startswith(SYSTEM_LABEL_PREFIX) or not isinstance(value, str):
                problems.append(f"{key}.{name}")
    for patch in document.get("patches", []):
        problems += [f"patch field {key}" for key in set(patch) - PATCH_FIELDS]
        if "inline" in patch and not (patch.get("name") or patch.get("idOverride")):
            problems.append("an inline patch without a name")
        inline = patch.get("inline")
        if not isinstance(inline, dict):
            problems.append(f"inline patch is not a mapping: {inline!r}")
            continue
        if inline.get("kind") in FORBIDDEN_DOCUMENTS:
            problems.append(f"forbidden document {inline['kind']}")
        if "kind" not in inline:
            problems += [f"forbidden field {f}" for f in FORBIDDEN_FIELDS if _has(inline, f)]
    return problems


def generated(cluster_file: Path, *pools: str) -> list[dict[str, Any]]:
    args = ["generate", str(cluster_file), "--format", "omni"]
    for pool in pools:
        args += ["--pool", pool]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]


def example(tmp_path: Path, talos: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(EXAMPLE.read_text("utf-8").replace("v1.13.9", talos), "utf-8")
    return path


def by_name(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {doc["name"]: doc for doc in documents}


def inline_documents(workers: dict[str, Any]) -> list[dict[str, Any]]:
    return [patch["inline"] for patch in workers.get("patches", [])]


def loaded_modules(workers: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for document in inline_documents(workers):
        if document.get("kind") == "KernelModuleConfig":
            names.append(document["name"])
        names += [
            m["name"] for m in document.get("machine", {}).get("kernel", {}).get("modules", [])
        ]
    return names


@pytest.mark.parametrize("talos", ["v1.12.6", "v1.13.9", "v1.14.0"])
def test_every_example_pool_is_a_workers_set_omni_accepts(tmp_path: Path, talos: str) -> None:
    documents = generated(example(tmp_path, talos))
    assert [doc["name"] for doc in documents] == ["rtx6000", "l40s", "v100", "cpu"]
    for document in documents:
        assert omni_problems(document) == [], document["name"]


@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_bare_metal_pools_leave_the_installer_to_omni(tmp_path: Path, talos: str) -> None:
    path = tmp_path / "metal.yaml"
    path.write_text(METAL.format(talos=talos), "utf-8")
    documents = by_name(generated(path))
    for document in documents.values():
        assert omni_problems(document) == []
        for inline in inline_documents(document):
            assert "install" not in inline.get("machine", {})
    hgx = documents["hgx"]
    assert any("fabricmanager" in name for name in hgx["systemExtensions"])
    assert loaded_modules(hgx)[:4] == list(NVIDIA_MODULES)


def test_each_pool_carries_its_own_nvidia_decision() -> None:
    documents = by_name(generated(EXAMPLE))
    extensions = {name: set(doc["systemExtensions"]) for name, doc in documents.items()}
    # Blackwell: open modules only; L40S: open, LTS as the file pins; V100: proprietary LTS.
    assert "siderolabs/nvidia-open-gpu-kernel-modules-production" in extensions["rtx6000"]
    assert "siderolabs/nvidia-open-gpu-kernel-modules-lts" in extensions["l40s"]
    assert "siderolabs/nonfree-kmod-nvidia-lts" in extensions["v100"]
    assert not any("nvidia" in name for name in extensions["cpu"])
    for name in ("rtx6000", "l40s", "v100"):
        assert loaded_modules(documents[name]) == list(NVIDIA_MODULES)
        assert documents[name]["annotations"]["talos-schematic/gpus"].startswith("nvidia.com/")
    assert "patches" not in documents["cpu"]
    assert documents["cpu"]["annotations"]["talos-schematic/gpus"] == ""
    assert documents["l40s"]["kernelArgs"] == ["console=ttyS0"]


def test_talos_1_12_sets_the_sysctl_and_1_14_loads_module_documents(tmp_path: Path) -> None:
    old = by_name(generated(example(tmp_path, "v1.12.6")))["rtx6000"]
    assert inline_documents(old)[0]["machine"]["sysctls"] == {"net.core.bpf_jit_harden": "1"}
    new = by_name(generated(example(tmp_path, "v1.14.0")))["rtx6000"]
    kinds = [doc.get("kind") for doc in inline_documents(new)]
    assert kinds == ["KernelModuleConfig"] * 4
    assert loaded_modules(new) == list(NVIDIA_MODULES)


def test_one_pool_and_byte_identical_output() -> None:
    first = runner.invoke(app, ["generate", str(EXAMPLE), "-f", "omni", "--pool", "v100"])
    again = runner.invoke(app, ["generate", str(EXAMPLE), "-f", "omni", "--pool", "v100"])
    assert first.exit_code == 0 and first.stdout == again.stdout
    assert [doc["name"] for doc in yaml.safe_load_all(first.stdout)] == ["v100"]


# --- lint reads it back ----------------------------------------------------------------------


def written(tmp_path: Path, cluster_file: Path = EXAMPLE) -> Path:
    out = tmp_path / "out"
    result = runner.invoke(app, ["generate", str(cluster_file), "-f", "omni", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def codes(path: Path) -> list[tuple[str, str]]:
    return sorted((f.code, f.message) for f in lint_paths([str(path)]).findings)


@pytest.mark.parametrize("talos", ["v1.12.6", "v1.13.9", "v1.14.0"])
def test_what_generate_writes_lints_clean(tmp_path: Path, talos: str) -> None:
    assert codes(written(tmp_path, example(tmp_path, talos))) == []


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")


def test_nvidia_extensions_on_the_cpu_set_are_ts101(tmp_path: Path) -> None:
    out = written(tmp_path)
    edit(
        out / "cpu" / "omni-workers.yaml",
        "- siderolabs/qemu-guest-agent",
        "- siderolabs/nvidia-container-toolkit-lts\n"
        "- siderolabs/nvidia-open-gpu-kernel-modules-lts\n- siderolabs/qemu-guest-agent",
    )
    found = codes(out)
    assert [code for code, _ in found] == ["TS101"]
    assert "omni Workers cpu" in found[0][1]


def test_a_gpu_set_without_its_module_patch_is_ts123(tmp_path: Path) -> None:
    out = written(tmp_path)
    path = out / "rtx6000" / "omni-workers.yaml"
    text = path.read_text("utf-8")
    path.write_text(text[: text.index("patches:")], "utf-8")
    assert [code for code, _ in codes(out)] == ["TS123"]


@pytest.mark.parametrize(
    ("extensions", "code"),
    [
        (["nvidia-container-toolkit-production", "nvidia-open-gpu-kernel-modules-lts"], "TS112"),
        (
            [
                "nvidia-container-toolkit-lts",
                "nonfree-kmod-nvidia-lts",
                "nvidia-open-gpu-kernel-modules-lts",
            ],
            "TS113",
        ),
    ],
)
def test_mixed_tiers_and_both_flavours(tmp_path: Path, extensions: list[str], code: str) -> None:
    out = written(tmp_path)
    listed = "".join(f"- siderolabs/{name}\n" for name in extensions)
    edit(
        out / "l40s" / "omni-workers.yaml",
        "- siderolabs/nvidia-container-toolkit-lts\n"
        "- siderolabs/nvidia-open-gpu-kernel-modules-lts\n",
        listed,
    )
    assert code in [c for c, _ in codes(out)]


USER_TEMPLATE = """\
kind: Cluster
name: ml
kubernetes:
  version: v1.35.0
talos:
  version: v1.13.9
systemExtensions:
  - siderolabs/nvidia-container-toolkit-production
  - siderolabs/nvidia-open-gpu-kernel-modules-production
---
kind: ControlPlane
machineClass:
  name: control-plane
  size: 3
systemExtensions: []
---
kind: Workers
name: gpu
machineClass:
  name: gpu
  size: unlimited
{patches}"""
MODULE_PATCH = """\
patches:
  - name: nvidia-modules
    inline:
      machine:
        kernel:
          modules:
            - name: nvidia
            - name: nvidia_uvm
            - name: nvidia_drm
            - name: nvidia_modeset
"""


def test_a_whole_template_inherits_the_clusters_extensions(tmp_path: Path) -> None:
    """A hand-written template: the Workers set has the cluster's NVIDIA extensions; its GPUs
    are unknown, so only what needs no hardware is judged."""
    path = tmp_path / "template.yaml"
    path.write_text(USER_TEMPLATE.format(patches=""), "utf-8")
    found = codes(path)
    assert [code for code, _ in found] == ["TS123"]
    assert "omni Workers gpu" in found[0][1] and "cluster systemExtensions" in found[0][1]
    path.write_text(USER_TEMPLATE.format(patches=MODULE_PATCH), "utf-8")
    assert codes(path) == []


INLINE_FORMS = """\
kind: Cluster
name: ml
kubernetes: {version: v1.35.0}
talos: {version: v1.13.9}
---
kind: Workers
name: gpu
annotations: {talos-schematic/gpus: nvidia.com/AD102GL_L40S}
machineClass: {name: gpu, size: 2}
systemExtensions:
  - siderolabs/nvidia-container-toolkit-lts
  - siderolabs/nvidia-open-gpu-kernel-modules-lts
patches:
  - name: as-documents
    inline:
      - machine: {kernel: {modules: [{name: nvidia}, {name: nvidia_uvm}]}}
  - name: as-text
    inline: |
      machine:
        kernel:
          modules: [{name: nvidia_drm}]
  - file: modeset.yaml
"""


def test_every_form_of_patch_omni_reads_is_read(tmp_path: Path) -> None:
    """Inline as a mapping, a list of documents or a YAML text (InlineContent in inline.go), or
    a file relative to the template: together they load the four modules."""
    (tmp_path / "modeset.yaml").write_text(
        "machine:\n  kernel:\n    modules:\n      - name: nvidia_modeset\n", "utf-8"
    )
    path = tmp_path / "template.yaml"
    path.write_text(INLINE_FORMS, "utf-8")
    assert codes(path) == []
    path.write_text(INLINE_FORMS.replace("  - file: modeset.yaml\n", ""), "utf-8")
    # nvidia is loaded; what is missing is not nvidia itself: still nothing for TS123.
    assert codes(path) == []
    path.write_text(INLINE_FORMS.split("patches:")[0], "utf-8")
    assert [code for code, _ in codes(path)] == ["TS123"]


@pytest.mark.parametrize(
    "document",
    [
        "kind: Workers\nsystemExtensions: 5\npatches: nope\n",
        "kind: Workers\nsystemExtensions: [null, 3, {a: b}]\nannotations: [x]\n",
        "kind: Workers\npatches: [{inline: '{{ not yaml'}, {file: ../missing.yaml}, 7]\n",
        "kind: Machine\nname: m\nsystemExtensions: []\nkernelArgs: 9\n",
        "kind: Cluster\ntalos: 3\nsystemExtensions: [siderolabs/zfs]\n---\nkind: Workers\n",
    ],
)
def test_odd_templates_are_read_without_a_traceback(tmp_path: Path, document: str) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(document, "utf-8")
    lint_paths([str(path)])


MACHINES = """\
kind: Cluster
name: ml
kubernetes: {version: v1.35.0}
talos: {version: v1.13.9}
---
kind: Workers
name: gpu
annotations: {talos-schematic/gpus: nvidia.com/AD102GL_L40S}
machines: [430d882a-51a8-48b3-ab00-d4b5b0b5b0b0, 919b1d5b-daf8-4b82-bc0d-48929f05a405]
{patches}---
kind: Machine
name: 430d882a-51a8-48b3-ab00-d4b5b0b5b0b0
systemExtensions:
  - siderolabs/nvidia-container-toolkit-lts
  - siderolabs/nvidia-open-gpu-kernel-modules-lts
"""


def test_a_machine_with_its_own_extensions_shares_its_sets_patches(tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(MACHINES.replace("{patches}", MODULE_PATCH), "utf-8")
    assert codes(path) == []
    path.write_text(MACHINES.replace("{patches}", ""), "utf-8")
    found = codes(path)
    assert [code for code, _ in found] == ["TS123"]
    assert "omni Machine 430d882a" in found[0][1]


# The releases where Omni renames extensions, read at siderolabs/omni
# internal/backend/extensions/extensions.go (b1ea5df26e4ea80857a444c1c982387863cadbd9):
# MapNamesByVersion renames forward from talosVersion.GTE(1.7.0 / 1.8.0 / 1.9.0) and backward
# before it, comparing semantic versions (a pre-release of the first release is before it).
# Each rename at exactly its first release, the last release before it and that release's
# pre-release: (name written, Talos release, the name Omni installs).
_RENAME_EDGES = [
    ("siderolabs/xe-guest-utilities", "v1.7.0", "siderolabs/xen-guest-agent"),
    ("siderolabs/xe-guest-utilities", "v1.7.0-rc.0", "siderolabs/xe-guest-utilities"),
    ("siderolabs/xen-guest-agent", "v1.6.7", "siderolabs/xe-guest-utilities"),
    ("siderolabs/xen-guest-agent", "v1.7.0", "siderolabs/xen-guest-agent"),
    ("siderolabs/nvidia-container-toolkit", "v1.8.0", "siderolabs/nvidia-container-toolkit-lts"),
    ("siderolabs/nvidia-container-toolkit", "v1.7.7", "siderolabs/nvidia-container-toolkit"),
    ("siderolabs/nvidia-container-toolkit-lts", "v1.7.7", "siderolabs/nvidia-container-toolkit"),
    ("siderolabs/nonfree-kmod-nvidia", "v1.8.0", "siderolabs/nonfree-kmod-nvidia-lts"),
    ("siderolabs/nonfree-kmod-nvidia-lts", "v1.8.0-beta.1", "siderolabs/nonfree-kmod-nvidia"),
    ("siderolabs/i915-ucode", "v1.9.0", "siderolabs/i915"),
    ("siderolabs/i915-ucode", "v1.8.4", "siderolabs/i915-ucode"),
    ("siderolabs/i915", "v1.8.4", "siderolabs/i915-ucode"),
    ("siderolabs/i915", "v1.9.0-alpha.1", "siderolabs/i915-ucode"),
    ("siderolabs/amdgpu", "v1.9.0", "siderolabs/amdgpu"),
    ("siderolabs/amdgpu-firmware", "v1.9.0", "siderolabs/amdgpu"),
]


@pytest.mark.parametrize(("written", "talos", "installed"), _RENAME_EDGES)
def test_omni_renames_extensions_from_exactly_the_first_release_of_a_rename(
    written: str, talos: str, installed: str
) -> None:
    from schematic.doctor.lint.omni import omni_extension_name

    assert omni_extension_name(written, talos) == installed


# Omni runs one Talos release per cluster: the template's Cluster document names it
# (client/pkg/template/internal/models/cluster.go, TalosCluster.Version), and every machine set
# of the template runs it.
MIXED = """\
cluster: c
talos:
  version: v1.13.9
pools:
  - name: gpu-a
    profile: metal-hgx-b200-8x
  - name: gpu-b
    profile: metal-hgx-b200-8x
    talos:
      version: v1.14.0
  - name: cpu
    profile: metal-intel
"""


def test_pools_on_two_releases_are_refused_naming_them(tmp_path: Path) -> None:
    cluster_file = tmp_path / "c.yaml"
    cluster_file.write_text(MIXED, "utf-8")
    for args in (["-f", "omni"], ["-f", "omni", "--out", str(tmp_path / "out")]):
        result = runner.invoke(app, ["generate", str(cluster_file), *args])
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert "gpu-a, cpu on v1.13.9; gpu-b on v1.14.0" in said
        assert not (tmp_path / "out").exists()
    # Must not fire: the pools of one release, or another kind of output.
    for args in (["-f", "omni", "--pool", "gpu-b"], ["-f", "omni", "--pool", "gpu-a"]):
        assert runner.invoke(app, ["generate", str(cluster_file), *args]).exit_code == 0
    out = tmp_path / "talos"
    args = ["generate", str(cluster_file), "-f", "machine-config", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0


def template(tmp_path: Path, talos: str, pools: dict[str, str]) -> Path:
    """A whole template: a Cluster on ``talos``, and the Workers of each pool generated at the
    release ``pools`` gives it."""
    documents = [
        f"kind: Cluster\nname: c\nkubernetes:\n  version: v1.35.0\ntalos:\n  version: {talos}\n"
    ]
    for pool, release in pools.items():
        cluster_file = tmp_path / f"{pool}.yaml"
        cluster_file.write_text(MIXED.replace("v1.13.9", release), "utf-8")
        result = runner.invoke(app, ["generate", str(cluster_file), "-f", "omni", "--pool", pool])
        assert result.exit_code == 0, result.output
        documents.append(result.stdout)
    path = tmp_path / "cluster-template.yaml"
    path.write_text("---\n".join(documents), "utf-8")
    return path


def test_ts157_lint_reports_a_template_that_mixes_releases(tmp_path: Path) -> None:
    path = template(tmp_path, "v1.13.9", {"gpu-a": "v1.13.9", "gpu-b": "v1.14.0"})
    found = [(f.code, f.message) for f in lint_paths([str(path)]).findings if f.code == "TS157"]
    messages = sorted(message for _, message in found)
    assert messages == [
        "omni Workers gpu-b: a KernelModuleConfig patch (Talos 1.14 and later), in a template "
        "for Talos v1.13.9",
        "omni Workers gpu-b: written for Talos v1.14.0, in a template for Talos v1.13.9",
    ]


@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_a_template_on_one_release_is_not_ts157(tmp_path: Path, talos: str) -> None:
    path = template(tmp_path, talos, {"gpu-a": talos, "cpu": talos})
    assert "TS157" not in {f.code for f in lint_paths([str(path)]).findings}
