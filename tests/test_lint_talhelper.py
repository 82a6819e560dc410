"""talhelper's talconfig.yaml: each node a pool, with its schematic, kernelModules and patches.

The talconfig shape (clusterName, talosVersion, nodes[].hostname / controlPlane / schematic /
kernelModules / patches, worker: and controlPlane: for every node of a role, patches inline or
"@file") is talhelper's own: budimanjojo/talhelper pkg/config/config.go and example/talconfig.yaml
at 39b69792; a node's key wins over its role's, patches add up (pkg/config/nodeconfigs.go).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.findings import Finding
from schematic.facts.chart_targets import chart_target

HEAD = """\
clusterName: home-cluster
talosVersion: {talos}
kubernetesVersion: v1.35.0
endpoint: https://192.168.200.10:6443
nodes:
"""
MODULES = """\
    kernelModules:
      - name: nvidia
      - name: nvidia_uvm
      - name: nvidia_drm
      - name: nvidia_modeset
"""


def node(hostname: str, extensions: list[str], extra: str = "") -> str:
    listed = "".join(f"            - {name}\n" for name in extensions)
    return (
        f"  - hostname: {hostname}\n"
        "    ipAddress: 192.168.200.21\n"
        "    controlPlane: false\n"
        "    schematic:\n"
        "      customization:\n"
        "        systemExtensions:\n"
        "          officialExtensions:\n"
        f"{listed}{extra}"
    )


def lint(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> list[Finding]:
    (tmp_path / "talconfig.yaml").write_text(text)
    for name, body in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(body))
    return list(lint_paths([str(tmp_path / "talconfig.yaml")]).findings)


def found(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.code, f.object) for f in findings if f.severity != "note"}


LTS = ["siderolabs/nvidia-container-toolkit-lts", "siderolabs/nvidia-open-gpu-kernel-modules-lts"]


def test_a_correct_gpu_node_gives_nothing(tmp_path: Path) -> None:
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, MODULES)
    assert found(lint(tmp_path, text)) == set()


def test_mixed_tiers_is_ts112_naming_the_node(tmp_path: Path) -> None:
    mixed = ["siderolabs/nvidia-container-toolkit-lts", LTS[1].replace("-lts", "-production")]
    text = HEAD.format(talos="v1.13.0") + node("gpu1", mixed, MODULES)
    assert found(lint(tmp_path, text)) == {("TS112", "node gpu1")}


def test_both_flavours_is_ts113(tmp_path: Path) -> None:
    both = ["siderolabs/nonfree-kmod-nvidia-lts", *LTS]
    text = HEAD.format(talos="v1.13.0") + node("gpu1", both, MODULES)
    assert ("TS113", "node gpu1") in found(lint(tmp_path, text))


def test_no_modules_loaded_is_reported(tmp_path: Path) -> None:
    # NVIDIA extensions and neither kernelModules nor a patch loading them: the modules are
    # installed and never loaded (TS123, the machine config loads no NVIDIA module).
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS)
    findings = lint(tmp_path, text)
    assert found(findings) == {("TS123", "node gpu1")}
    # The whole talconfig was read, so the node certainly loads nothing: an error that fails
    # the gate, at the node's line.
    (ts123,) = [f for f in findings if f.code == "TS123"]
    assert (ts123.severity, ts123.line) == (
        "error",
        text.splitlines().index("  - hostname: gpu1") + 1,
    )


def test_no_modules_is_a_warning_where_a_patch_was_not_read(tmp_path: Path) -> None:
    # A patch file lint cannot read may load them: not certain.
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS)
    text += "worker:\n  patches:\n    - '@./not-here.yaml'\n"
    (ts123,) = [f for f in lint(tmp_path, text) if f.code == "TS123"]
    assert ts123.severity == "warning"
    # Nor is an excerpt without clusterName: the file's global and role patches are not shown.
    excerpt = "nodes:\n" + node("gpu1", LTS)
    (ts123,) = [f for f in lint(tmp_path, excerpt) if f.code == "TS123"]
    assert ts123.severity == "warning"


def test_old_extension_names_on_1_13_build_as_lts(tmp_path: Path) -> None:
    # The factory builds a pre-1.8 NVIDIA name as its -lts successor (image-factory
    # internal/profile/profile.go extensionNameAlias), so the schematic works.
    old = ["siderolabs/nvidia-container-toolkit", "siderolabs/nvidia-open-gpu-kernel-modules"]
    text = HEAD.format(talos="v1.13.0") + node("gpu1", old, MODULES)
    assert found(lint(tmp_path, text)) == set()


def test_old_fabric_manager_name_on_1_13_is_ts150(tmp_path: Path) -> None:
    # Its factory alias (nvidia-fabric-manager-lts) names no published extension.
    old = ["siderolabs/nvidia-container-toolkit", "siderolabs/nvidia-fabricmanager"]
    old.append("siderolabs/nvidia-open-gpu-kernel-modules")
    text = HEAD.format(talos="v1.13.0") + node("gpu1", old, MODULES)
    assert ("TS150", "node gpu1") in found(lint(tmp_path, text))


def test_the_role_patch_and_a_patch_file_load_the_modules(tmp_path: Path) -> None:
    text = HEAD.format(talos="v1.12.6") + node("gpu1", LTS)
    text += "worker:\n  patches:\n    - '@./nvidia-modules.yaml'\n    - |-\n"
    text += "      machine:\n        sysctls:\n          net.core.bpf_jit_harden: 1\n"
    modules = "machine:\n  kernel:\n    modules:\n" + "".join(
        f"      - name: {name}\n"
        for name in ("nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset")
    )
    assert found(lint(tmp_path, text, {"nvidia-modules.yaml": modules})) == set()


def test_override_patches_drops_the_roles_patches(tmp_path: Path) -> None:
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, "    overridePatches: true\n")
    text += "worker:\n  patches:\n    - |-\n      machine:\n        kernel:\n          modules:\n"
    text += "            - name: nvidia\n"
    assert ("TS123", "node gpu1") in found(lint(tmp_path, text))


def test_a_nodes_own_keys_win_over_its_roles(tmp_path: Path) -> None:
    # talhelper's mergeNodeConfigs: a key the node sets is the node's, whatever worker: says;
    # a key it leaves out comes from worker:. Reading the role first would judge gpu1 by the
    # role's mixed tiers and partial module list.
    mixed = ["siderolabs/nvidia-container-toolkit-lts", LTS[1].replace("-lts", "-production")]
    listed = "".join(f"          - {name}\n" for name in mixed)
    role = (
        "worker:\n  schematic:\n    customization:\n      systemExtensions:\n"
        f"        officialExtensions:\n{listed}  kernelModules:\n    - name: nvidia\n"
    )
    bare = "  - hostname: gpu2\n    ipAddress: 192.168.200.22\n    controlPlane: false\n"
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, MODULES) + bare + role
    findings = found(lint(tmp_path, text))
    assert not {finding for finding in findings if finding[1] == "node gpu1"}
    assert ("TS112", "node gpu2") in findings


# --- a node's schematic, decoded from the node's own text as `talos-schematic id` decodes it ----

GO_TYPED = """\
customization:
  extraKernelArgs: [0x10, 1.50, 1e3, '0x10']
  meta: [{key: 0xa, value: 012}]
  systemExtensions:
    officialExtensions: [siderolabs/iscsi-tools]
"""


def node_schematic_ids(tmp_path: Path, schematic: str) -> list[str]:
    from schematic.doctor.lint.inventory import Inventory
    from schematic.doctor.lint.loader import load_paths
    from schematic.doctor.lint.talhelper import add_talhelper_pools

    body = textwrap.indent(schematic, "      ")
    text = HEAD.format(talos="v1.13.6") + f"  - hostname: n1\n    schematic:\n{body}"
    (tmp_path / "talconfig.yaml").write_text(text)
    [document], _ = load_paths([str(tmp_path / "talconfig.yaml")])
    inventory = Inventory()
    add_talhelper_pools(document, inventory)
    return [schematic.id for schematic, _ in inventory.schematic_files]


def id_command(tmp_path: Path, schematic: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from schematic.cli import app, register_all_commands

    register_all_commands()
    (tmp_path / "schematic.yaml").write_text(schematic)
    result = CliRunner().invoke(app, ["id", str(tmp_path / "schematic.yaml")])
    return result.exit_code, result.stdout.split()[0] if result.stdout else ""


def test_a_nodes_schematic_gets_the_id_the_id_command_gives(tmp_path: Path) -> None:
    code, expected = id_command(tmp_path, GO_TYPED)
    assert code == 0
    assert node_schematic_ids(tmp_path, GO_TYPED) == [expected]
    # 0x10, 1.50 and 1e3 are kernel arguments as written, not the numbers PyYAML reads.
    plain = GO_TYPED.replace("[0x10, 1.50, 1e3, '0x10']", "['16', '1.5', '1000.0', '0x10']")
    assert node_schematic_ids(tmp_path, plain) != [expected]


def test_a_timestamp_where_the_factory_wants_text_is_refused_as_id_refuses_it(
    tmp_path: Path,
) -> None:
    dated = "customization:\n  extraKernelArgs: [2024-01-01]\n"
    assert id_command(tmp_path, dated)[0] == 1
    findings = lint(
        tmp_path,
        HEAD.format(talos="v1.13.6")
        + "  - hostname: n1\n    schematic:\n"
        + textwrap.indent(dated, "      "),
    )
    [problem] = [f for f in findings if f.code == "TS004"]
    assert problem.severity == "error"
    assert problem.line == 9  # the extraKernelArgs line of talconfig.yaml


def test_a_schematic_finding_points_at_the_schematic_not_a_patch_naming_its_id(
    tmp_path: Path,
) -> None:
    # A patch pins the installer of the node's own schematic: the mixed tiers are fixed in the
    # node's schematic (line 9), so that is where the finding points, naming it as such.
    mixed = ["siderolabs/nvidia-container-toolkit-lts", LTS[1].replace("-lts", "-production")]
    schematic = "customization:\n  systemExtensions:\n    officialExtensions:\n" + "".join(
        f"      - {name}\n" for name in mixed
    )
    code, schematic_id = id_command(tmp_path, schematic)
    assert code == 0
    patch = (
        "    patches:\n      - |-\n        machine:\n          install:\n"
        f"            image: factory.talos.dev/installer/{schematic_id}:v1.13.0\n"
    )
    text = HEAD.format(talos="v1.13.0") + node("gpu1", mixed, MODULES + patch)
    [finding] = [f for f in lint(tmp_path, text) if f.code == "TS112"]
    assert finding.line == 9
    assert "talhelper schematic" in finding.message


def test_an_unsorted_schematic_two_nodes_share_is_reported_once(tmp_path: Path) -> None:
    # TS151 is about the schematic (its ID changes when sorted), not about each node using it.
    unsorted = list(reversed(LTS))
    text = HEAD.format(talos="v1.13.0") + node("gpu1", unsorted, MODULES)
    text += node("gpu2", unsorted, MODULES)
    [finding] = [f for f in lint(tmp_path, text) if f.code == "TS151"]
    assert finding.line == 9  # gpu1's schematic, the first place it is written


def test_a_node_whose_patch_pins_its_installer_is_judged_at_that_release(tmp_path: Path) -> None:
    # talhelper applies the node's patches over what it generates: the patch's installer, and
    # so its release (v1.11.5, which needs the BPF sysctl for NVIDIA), wins over talosVersion.
    schematic = "customization:\n  systemExtensions:\n    officialExtensions:\n" + "".join(
        f"      - {name}\n" for name in LTS
    )
    code, schematic_id = id_command(tmp_path, schematic)
    assert code == 0
    patch = (
        "    patches:\n      - |-\n        machine:\n          install:\n"
        f"            image: factory.talos.dev/installer/{schematic_id}:v1.11.5\n"
    )
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, MODULES + patch)
    [finding] = [f for f in lint(tmp_path, text) if f.code == "TS124"]
    assert "Talos v1.11.5" in finding.message


def test_a_nodes_empty_module_list_is_its_own_not_its_roles(tmp_path: Path) -> None:
    # talhelper's mergeNodeConfigs takes the role's field only where the node's is Go's zero
    # value: `kernelModules: []` decodes to an empty, non-nil list, so gpu1 loads no module;
    # gpu2, which leaves the key out, gets worker:'s list.
    role = "worker:\n  kernelModules:\n" + "".join(
        f"    - name: {name}\n" for name in ("nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset")
    )
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, "    kernelModules: []\n")
    text += node("gpu2", LTS) + role
    assert found(lint(tmp_path, text)) == {("TS123", "node gpu1")}


def test_a_nodes_empty_talos_image_url_falls_back_to_its_roles(tmp_path: Path) -> None:
    # talhelper substitutes environment variables first: `talosImageURL: "${IMAGE}"` with IMAGE
    # unset is "", Go's zero string, so the node installs worker:'s SecureBoot installer — a
    # match for its SecureBoot boot medium, not a TS132.
    schematic = "customization:\n  systemExtensions:\n    officialExtensions:\n" + "".join(
        f"      - {name}\n" for name in LTS
    )
    code, schematic_id = id_command(tmp_path, schematic)
    assert code == 0
    role = (
        f"worker:\n  talosImageURL: factory.talos.dev/metal-installer-secureboot/{schematic_id}\n"
    )
    extra = MODULES + '    talosImageURL: ""\n    machineSpec:\n      secureboot: true\n'
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, extra) + role
    assert found(lint(tmp_path, text)) == set()


def test_a_nodes_machine_spec_replaces_its_roles_whole(tmp_path: Path) -> None:
    # talhelper merges machineSpec as one struct (pkg/config/nodeconfigs.go at 39b69792): a
    # node that sets only `mode` keeps no field of worker:'s, so it boots a plain ISO while
    # worker:'s pinned installer is the SecureBoot one: a mixed pair.
    schematic = "customization:\n  systemExtensions:\n    officialExtensions:\n" + "".join(
        f"      - {name}\n" for name in LTS
    )
    code, schematic_id = id_command(tmp_path, schematic)
    assert code == 0
    role = (
        f"worker:\n  talosImageURL: factory.talos.dev/metal-installer-secureboot/{schematic_id}\n"
        "  machineSpec:\n    secureboot: true\n"
    )
    own = MODULES + "    machineSpec:\n      mode: metal\n"
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, own) + role
    assert "TS132" in {code for code, _ in found(lint(tmp_path, text))}
    # Without a machineSpec of its own, the node takes worker:'s: SecureBoot on both sides.
    text = HEAD.format(talos="v1.13.0") + node("gpu1", LTS, MODULES) + role
    assert found(lint(tmp_path, text)) == set()


@pytest.mark.parametrize(
    ("talos", "modules", "code"),
    [
        ("v1.13.0", "    kernelModules:\n      - name: nvidia_uvm\n", "TS123"),
        ("v1.12.0", MODULES, "TS124"),
    ],
    ids=["modules missing", "bpf sysctl missing"],
)
def test_a_finding_on_a_nodes_modules_points_at_its_kernel_modules(
    tmp_path: Path, talos: str, modules: str, code: str
) -> None:
    # talhelper writes the node's kernelModules into its machine config; a finding about
    # them is at that key of the node, not at another of its lines.
    text = HEAD.format(talos=talos) + node("gpu1", LTS, modules)
    (finding,) = [f for f in lint(tmp_path, text) if f.code == code]
    assert finding.line == text.splitlines().index("    kernelModules:") + 1


@pytest.mark.parametrize("chart_name", ["v1.6", "pr3571"])
def test_a_talhelper_node_is_told_its_own_fix_whatever_the_chart(
    tmp_path: Path, chart_name: str
) -> None:
    # A Cozystack chart in the lint run makes no talhelper node a chart's pool: its modules
    # load from its own config, so the fix names the machine config, never the chart.
    (tmp_path / "talconfig.yaml").write_text(HEAD.format(talos="v1.13.0") + node("gpu1", LTS))
    findings = lint_paths([str(tmp_path / "talconfig.yaml")], chart=chart_target(chart_name))
    (ts123,) = [f for f in findings.findings if f.code == "TS123"]
    assert "chart" not in (ts123.fix or "")
    assert "nvidia" in (ts123.fix or "")
