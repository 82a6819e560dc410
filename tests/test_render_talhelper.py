"""`generate -f talhelper`: each pool's talconfig.yaml keys, read back by `lint` as a talconfig.

The keys and where they go (a node entry under ``nodes:``, or the ``worker:`` group: both are
talhelper's ``NodeConfigs``; ``patches`` a list of inline patches) are talhelper's own:
budimanjojo/talhelper pkg/config/config.go and example/talconfig.yaml at 39b69792.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.findings import Finding
from schematic.facts.nvidia import NVIDIA_MODULES

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
GPU_POOLS = ("rtx6000", "l40s", "v100")


def fragments(cluster_file: Path) -> dict[str, str]:
    """Each pool's fragment from `generate -f talhelper`, by the pool its comment names."""
    result = runner.invoke(app, ["generate", str(cluster_file), "--format", "talhelper"])
    assert result.exit_code == 0, result.output
    found: dict[str, str] = {}
    for text in result.stdout.split("---\n"):
        first = text.splitlines()[0]
        assert first.startswith("# talhelper keys for pool "), first
        found[first.split()[5]] = text
    return found


def talconfig(talos: str, hostname: str, fragment: str, *, as_worker_group: bool) -> str:
    """A talconfig with the fragment pasted as a node's keys or as the worker group."""
    head = (
        "clusterName: mycluster\n"
        f"talosVersion: {talos}\n"
        "kubernetesVersion: v1.35.0\n"
        "endpoint: https://192.168.200.10:6443\n"
        "nodes:\n"
        f"  - hostname: {hostname}\n"
        "    ipAddress: 192.168.200.21\n"
        "    controlPlane: false\n"
    )
    if as_worker_group:
        # The keys are indented for a node entry: two spaces less under worker:.
        keys = "".join(line.removeprefix("  ") + "\n" for line in fragment.splitlines())
        return head + "worker:\n" + keys
    # Pasted as written, below the node's lines: no re-indenting.
    return head + fragment


def node_keys(keys: dict[str, Any]) -> str:
    """Keys as a node entry holds them (what a fragment is, edited)."""
    return textwrap.indent(yaml.safe_dump(keys), "    ")


def lint_talconfig(tmp_path: Path, text: str) -> list[Finding]:
    path = tmp_path / "talconfig.yaml"
    path.write_text(text)
    return list(lint_paths([str(path)]).findings)


def with_talos(tmp_path: Path, version: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(EXAMPLE.read_text().replace("version: v1.13.9", f"version: {version}"))
    return path


@pytest.mark.parametrize("talos", ["v1.12.4", "v1.13.9", "v1.14.0"])
@pytest.mark.parametrize("as_worker_group", [False, True])
def test_every_pools_fragment_lints_clean_as_a_talconfig(
    tmp_path: Path, talos: str, as_worker_group: bool
) -> None:
    cluster_file = EXAMPLE if talos == "v1.13.9" else with_talos(tmp_path, talos)
    pools = fragments(cluster_file)
    assert set(pools) == {*GPU_POOLS, "cpu"}
    for pool, fragment in pools.items():
        text = talconfig(talos, f"{pool}-1", fragment, as_worker_group=as_worker_group)
        findings = lint_talconfig(tmp_path, text)
        errors = [f for f in findings if f.severity == "error"]
        assert errors == [], (pool, text, errors)
        if pool in GPU_POOLS:
            # The node was read as a GPU node: its modules are loaded, so no TS123.
            assert not [f for f in findings if f.code in ("TS110", "TS123", "TS124")]


def _modules(keys: dict[str, Any]) -> list[str]:
    """The modules a fragment loads: talhelper writes kernelModules to machine.kernel.modules."""
    return [entry["name"] for entry in keys.get("kernelModules", [])]


@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_the_gpu_pools_carry_nvidia_and_the_modules_the_cpu_pool_neither(
    tmp_path: Path, talos: str
) -> None:
    cluster_file = EXAMPLE if talos == "v1.13.9" else with_talos(tmp_path, talos)
    pools = {name: yaml.safe_load(text) for name, text in fragments(cluster_file).items()}
    for name, keys in pools.items():
        extensions = keys["schematic"]["customization"]["systemExtensions"]["officialExtensions"]
        nvidia = [e for e in extensions if "nvidia" in e]
        if name in GPU_POOLS:
            assert nvidia, name
            assert _modules(keys) == list(NVIDIA_MODULES), name
        else:
            assert nvidia == [] and _modules(keys) == [] and "patches" not in keys


@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_kernel_modules_are_the_module_list_on_every_release(tmp_path: Path, talos: str) -> None:
    # talhelper's last release cannot load a KernelModuleConfig document; Talos 1.14 still
    # takes machine.kernel.modules, which talhelper writes from kernelModules.
    keys = yaml.safe_load(fragments(with_talos(tmp_path, talos))["rtx6000"])
    assert "patches" not in keys
    assert keys["kernelModules"][0] == {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]}


def test_the_sysctl_goes_into_a_patch_up_to_talos_1_12(tmp_path: Path) -> None:
    keys = yaml.safe_load(fragments(with_talos(tmp_path, "v1.12.4"))["rtx6000"])
    patches = [yaml.safe_load(patch) for patch in keys["patches"]]
    assert patches == [{"machine": {"sysctls": {"net.core.bpf_jit_harden": "1"}}}]


def test_the_schematic_is_the_pools_own(tmp_path: Path) -> None:
    for name, text in fragments(EXAMPLE).items():
        keys = yaml.safe_load(text)
        schematic = Schematic.from_yaml(yaml.safe_dump(keys["schematic"]))
        assert f"# schematic {schematic.id}" in text.splitlines(), name


def test_with_out_each_pool_gets_talhelper_yaml_in_the_index(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["generate", str(EXAMPLE), "--out", str(out), "-f", "talhelper"])
    assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == sorted(
        [*(f"{pool}/talhelper.yaml" for pool in (*GPU_POOLS, "cpu")), "index.yaml", "APPLY.md"]
    )
    # The index records the fragments, like every kind's files.
    assert "talhelper.yaml" in (out / "index.yaml").read_text()
    stream = fragments(EXAMPLE)
    assert (out / "rtx6000" / "talhelper.yaml").read_text() == stream["rtx6000"]
    check = runner.invoke(app, ["check", str(EXAMPLE), "--out", str(out)])
    assert check.exit_code == 0, check.output
    # An edited fragment is drift: check compares the talhelper files it recorded.
    edited = out / "cpu" / "talhelper.yaml"
    edited.write_text(edited.read_text() + "nodeLabels: {}\n")
    check = runner.invoke(app, ["check", str(EXAMPLE), "--out", str(out)])
    assert check.exit_code == 3 and "cpu/talhelper.yaml" in check.output, check.output


@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_without_its_modules_the_gpu_fragment_reads_back_as_unloaded(
    tmp_path: Path, talos: str
) -> None:
    # The control for the clean read-back: lint sees the fragment's NVIDIA schematic, so the
    # same node without the modules the fragment loads is TS123.
    cluster_file = EXAMPLE if talos == "v1.13.9" else with_talos(tmp_path, talos)
    keys = yaml.safe_load(fragments(cluster_file)["rtx6000"])
    keys.pop("kernelModules", None)
    keys.pop("patches", None)
    text = talconfig(talos, "rtx6000-1", node_keys(keys), as_worker_group=False)
    assert "TS123" in {f.code for f in lint_talconfig(tmp_path, text)}


BOOT_MEDIA = ROOT / "examples" / "boot-media.yaml"


def test_boot_media_pools_say_what_talhelpers_defaults_do_not() -> None:
    pools = {name: yaml.safe_load(text) for name, text in fragments(BOOT_MEDIA).items()}
    # talhelper derives metal-installer-secureboot from machineSpec.secureboot, the factory's
    # metal installer-secureboot the pool upgrades with: no URL to pin.
    assert pools["secure"]["machineSpec"] == {"secureboot": True}
    assert "talosImageURL" not in pools["secure"]
    assert pools["rpi"]["machineSpec"] == {"arch": "arm64"}
    assert pools["rpi"]["schematic"]["overlay"]["name"] == "rpi_generic"
    # The PXE pool's boot media carry their own schematic: talhelper's imageSchematic.
    boot = Schematic.from_yaml(yaml.safe_dump(pools["pxe"]["imageSchematic"]))
    assert (
        "talos.config=https://config.internal/worker.yaml" in boot.customization.extra_kernel_args
    )
    assert "machineSpec" not in pools["pxe"] and "imageSchematic" not in pools["secure"]


def test_a_custom_installer_repository_is_pinned_with_talos_image_url(tmp_path: Path) -> None:
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(
        EXAMPLE.read_text().replace(
            "installerRepository: factory.talos.dev/installer",
            "installerRepository: registry.example.com:5000/talos/installer",
        )
    )
    for name, text in fragments(cluster_file).items():
        keys = yaml.safe_load(text)
        schematic = Schematic.from_yaml(yaml.safe_dump(keys["schematic"]))
        # talhelper appends ":" and its talosVersion to the URL.
        assert keys["talosImageURL"] == f"registry.example.com:5000/talos/installer/{schematic.id}"
        findings = lint_talconfig(
            tmp_path, talconfig("v1.13.9", f"{name}-1", text, as_worker_group=False)
        )
        assert [f for f in findings if f.severity == "error"] == [], name


def test_lint_reads_a_written_fragment_as_a_talhelper_node(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["generate", str(EXAMPLE), "--out", str(out), "-f", "talhelper"])
    assert result.exit_code == 0, result.output
    # Not Cozystack values (its kernelModules would be TS122 against the chart's default).
    findings = list(lint_paths([str(out)], talos="v1.13.9").findings)
    assert findings == []
    keys = yaml.safe_load((out / "rtx6000" / "talhelper.yaml").read_text())
    del keys["kernelModules"]
    (out / "rtx6000" / "talhelper.yaml").write_text(yaml.safe_dump(keys))
    findings = list(lint_paths([str(out)], talos="v1.13.9").findings)
    assert {(f.code, f.file) for f in findings} == {("TS123", str(out / "rtx6000/talhelper.yaml"))}


def test_talhelpers_installer_is_its_mode_installer(tmp_path: Path) -> None:
    # talhelper's default template (pkg/config/defaults.go at 39b69792):
    # <registry>/<machineSpec.mode>-installer[-secureboot]/<ID>:<talosVersion>.
    pools = {name: yaml.safe_load(text) for name, text in fragments(EXAMPLE).items()}
    for name, keys in pools.items():
        # KubeVirt pools boot the openstack image; talhelper would install openstack-installer,
        # not the installer/<ID> the pool upgrades with up to Talos 1.13: pinned.
        schematic = Schematic.from_yaml(yaml.safe_dump(keys["schematic"]))
        assert keys["machineSpec"]["mode"] == "openstack", name
        assert keys["talosImageURL"] == f"factory.talos.dev/installer/{schematic.id}", name
    cpu = Schematic.from_yaml(yaml.safe_dump(pools["cpu"]["schematic"])).id
    # The header names the image talhelper installs: the pinned one, with talosVersion.
    header = f"# installer factory.talos.dev/installer/{cpu}:v1.13.9 (talosImageURL pins it)"
    assert header in fragments(EXAMPLE)["cpu"].splitlines()
    # Before Talos 1.10 the factory serves no metal-installer: a metal pool pins installer/.
    old = tmp_path / "old.yaml"
    old.write_text(BOOT_MEDIA.read_text().replace("version: v1.13.9", "version: v1.9.5"))
    secure = yaml.safe_load(fragments(old)["secure"])
    assert secure["talosImageURL"].startswith("factory.talos.dev/installer-secureboot/")


def test_lint_checks_the_media_talhelper_derives_from_machine_spec(tmp_path: Path) -> None:
    written = fragments(BOOT_MEDIA)
    for name, text in written.items():
        found = lint_talconfig(
            tmp_path, talconfig("v1.13.9", f"{name}-1", text, as_worker_group=False)
        )
        assert [f for f in found if f.severity != "note"] == [], name
    # Without machineSpec.arch, talhelper boots the Raspberry Pi from metal-amd64: the board
    # overlay cannot apply (TS134).
    rpi = yaml.safe_load(written["rpi"])
    del rpi["machineSpec"]
    found = lint_talconfig(
        tmp_path, talconfig("v1.13.9", "rpi-1", node_keys(rpi), as_worker_group=False)
    )
    assert [(f.code, f.severity) for f in found if f.severity != "note"] == [("TS134", "error")]
    # A SecureBoot node pinned to a non-SecureBoot installer (TS132).
    secure = yaml.safe_load(written["secure"])
    schematic = Schematic.from_yaml(yaml.safe_dump(secure["schematic"]))
    secure["talosImageURL"] = f"factory.talos.dev/metal-installer/{schematic.id}"
    found = lint_talconfig(
        tmp_path, talconfig("v1.13.9", "secure-1", node_keys(secure), as_worker_group=False)
    )
    assert [(f.code, f.severity) for f in found if f.severity != "note"] == [("TS132", "error")]
