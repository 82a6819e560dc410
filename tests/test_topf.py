"""`generate -f topf`: the files topf reads, followed from APPLY.md as a user does, loaded as topf
loads them, and the layout read back by `lint`.

topf's rules, read at its source (postfinance/topf at 2a60138c4ef36c43b6d6d175cd8db9a3c241f9e0):

- ``pkg/config/topf_config.go``, ``node.go``: ``topf.yaml`` has ``clusterName``,
  ``clusterEndpoint``, ``kubernetesVersion``, ``nodes`` (``host``, ``role``, and per node
  ``talosVersion``, ``schematicId``, ``factory``, ``platform``, ``secureboot``);
- ``internal/schematic/resolver.go``: ``schematicId: "@path"`` is read relative to topf.yaml
  and its ID computed as the factory does;
- ``internal/topf/nodes.go``: ``PatchContext.SchematicID`` is the resolved ID before the patches
  are read; the installer patch comes first, so a later ``machine.install.image`` wins;
- ``internal/topf/node.go``: the installer
  ``<factory>/<platform>-installer[-secureboot]/<ID>:v<talosVersion>``, ``metal`` by default;
- ``pkg/config/patches.go``: ``all/``, ``<role>/``, ``node/<host>/`` walked in lexical order
  (through symlinks), names matching ``.*\\.ya?ml(\\.tpl)?``; a ``.tpl`` file rendered with Go's
  text/template; each document a mapping, empty ones (comments only) skipped, each loaded by
  ``configpatcher.LoadPatch`` of the bundled machinery (``go.mod``: v1.13.7, whose kinds are the
  Talos 1.13 schema's: no ``KernelModuleConfig``).

No Go toolchain is installed by ``make test``: the one template form the tool writes
(``{{ if ne .SchematicID "<ID>" }}…{{ else }}…{{ end }}`` and ``{{ "{{" }}``) is rendered here by
text/template's rules for those actions, and a file with any other action fails the test.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.facts.nvidia import NVIDIA_MODULES

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
TALOS = ROOT.parent / "shared" / "reference" / "talos"
PATCH_NAME = re.compile(r".*\.ya?ml(\.tpl)?")
ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
GPU_POOLS = ("rtx6000", "l40s", "v100")


def render_template(text: str, schematic_id: str) -> str:
    """text/template on the actions the tool writes: if/else/end on ``ne .SchematicID``, and
    a string literal."""
    out: list[str] = []
    stack: list[bool] = []  # whether each open branch is taken
    position = 0
    for action in ACTION.finditer(text):
        if all(stack):
            out.append(text[position : action.start()])
        position = action.end()
        body = action.group(1).strip()
        if condition := re.fullmatch(r'if ne \.SchematicID "([0-9a-f]{64})"', body):
            stack.append(all(stack) and condition.group(1) != schematic_id)
        elif body == "else":
            taken = stack.pop()
            stack.append(not taken and all(stack))
        elif body == "end":
            stack.pop()
        elif literal := re.fullmatch(r'"(.*)"', body):
            if all(stack):
                out.append(literal.group(1))
        else:
            raise AssertionError(f"an action the tool does not write: {{{{{body}}}}}")
    assert not stack
    out.append(text[position:])
    return "".join(out)


def generated(tmp_path: Path, talos: str) -> Path:
    cluster_file = tmp_path / "cluster.yaml"
    source = (ROOT / "examples" / "cluster.yaml").read_text("utf-8")
    cluster_file.write_text(source.replace("version: v1.13.9", f"version: {talos}"), "utf-8")
    topf = tmp_path / "cluster"
    result = runner.invoke(app, ["generate", str(cluster_file), "-f", "topf", "--out", str(topf)])
    assert result.exit_code == 0, result.output
    return topf


def follow_apply_md(topf: Path) -> list[dict[str, Any]]:
    """Run APPLY.md's topf commands in the directory, and write topf.yaml with the node
    entries it shows (one node per pool, its host filled in)."""
    apply = (topf / "APPLY.md").read_text("utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", apply, re.DOTALL)
    for block in blocks:
        commands = "".join(line.strip() + "\n" for line in block.splitlines())
        if "all/" in commands:
            subprocess.run(["sh", "-ec", commands], cwd=topf, check=True)
    nodes = [
        node
        for block in re.findall(r"```yaml\n(.*?)```", apply, re.DOTALL)
        for node in yaml.safe_load(textwrap.dedent(block))["nodes"]
    ]
    for node in nodes:
        node["host"] = node["schematicId"].split("/")[0].removeprefix("@") + "-1"
    config = {
        "clusterName": "mycluster",
        "clusterEndpoint": "https://192.168.1.80:6443",
        "kubernetesVersion": "1.35.5",
        "nodes": nodes,
    }
    (topf / "topf.yaml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return nodes


def patches_for(topf: Path, node: dict[str, Any], schematic_id: str) -> list[dict[str, Any]]:
    """The patch documents topf loads for ``node``, in its order."""
    documents: list[dict[str, Any]] = []
    for part in ("all", node["role"], f"node/{node['host']}"):
        folder = topf / part
        files = (
            sorted(p for p in folder.rglob("*") if PATCH_NAME.search(p.name))
            if folder.is_dir()
            else []
        )
        for path in files:
            text = path.read_text("utf-8")
            if path.name.endswith(".tpl"):
                text = render_template(text, schematic_id)
            documents += [d for d in yaml.safe_load_all(text) if d]
    return documents


def talos_1_13_kinds() -> set[str]:
    schema = json.loads((TALOS / "config.schema.v1.13.9.json").read_text("utf-8"))
    kinds: set[str] = set()
    for ref in schema["oneOf"]:
        definition = schema["$defs"][ref["$ref"].rsplit("/", 1)[1]]
        kinds.update(definition.get("properties", {}).get("kind", {}).get("enum", []))
    return kinds


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
@pytest.mark.parametrize("talos", ["v1.12.6", "v1.13.9", "v1.14.0"])
def test_each_node_gets_its_pools_schematic_patch_and_installer(tmp_path: Path, talos: str) -> None:
    topf = generated(tmp_path, talos)
    nodes = follow_apply_md(topf)
    assert [node["host"] for node in nodes] == ["rtx6000-1", "l40s-1", "v100-1", "cpu-1"]
    loadable = talos_1_13_kinds()
    machine_config = runner.invoke(
        app,
        ["generate", str(tmp_path / "cluster.yaml"), "-f", "urls", "--out", str(tmp_path / "u")],
    )
    assert machine_config.exit_code == 0, machine_config.output
    for node in nodes:
        pool = node["host"].removesuffix("-1")
        schematic_path = topf / node["schematicId"].removeprefix("@")
        schematic_id = Schematic.from_yaml(schematic_path.read_text("utf-8")).id
        documents = patches_for(topf, node, schematic_id)
        for document in documents:
            assert document.get("kind", "v1alpha1 patch") in loadable | {"v1alpha1 patch"}
        machine = {k: v for d in documents if "kind" not in d for k, v in d["machine"].items()}
        modules = [m["name"] for m in machine.get("kernel", {}).get("modules", [])]
        assert modules == (list(NVIDIA_MODULES) if pool in GPU_POOLS else []), pool
        # The installer: topf's own, unless a later patch pins the pool's.
        platform = node.get("platform", "metal")
        secure = "-secureboot" if node.get("secureboot") else ""
        derived = (
            f"{node.get('factory', 'factory.talos.dev')}/{platform}-installer{secure}/"
            f"{schematic_id}:v{node['talosVersion'].removeprefix('v')}"
        )
        installer = machine.get("install", {}).get("image", derived)
        urls = yaml.safe_load((tmp_path / "u" / pool / "urls.yaml").read_text("utf-8"))
        assert installer in (urls.get("installer"), derived), (pool, installer, urls)
        assert f"/{schematic_id}:" in installer


def test_a_patch_applies_to_its_schematic_s_nodes_and_to_no_other(tmp_path: Path) -> None:
    topf = generated(tmp_path, "v1.13.9")
    text = (topf / "l40s" / "topf-patch.yaml.tpl").read_text("utf-8")
    ids = {
        pool: Schematic.from_yaml((topf / pool / "schematic.yaml").read_text("utf-8")).id
        for pool in ("l40s", "rtx6000")
    }
    own = [d for d in yaml.safe_load_all(render_template(text, ids["l40s"])) if d]
    assert own and own == [d for d in yaml.safe_load_all(text) if d]
    # Another schematic's node: comments only, an empty patch topf skips.
    assert [d for d in yaml.safe_load_all(render_template(text, ids["rtx6000"])) if d] == []


def test_lint_reads_the_layout_and_finds_a_missing_patch(tmp_path: Path) -> None:
    topf = generated(tmp_path, "v1.13.9")
    follow_apply_md(topf)
    assert list(lint_paths([str(topf)]).findings) == []
    assert list(lint_paths([str(topf / "topf.yaml")]).findings) == []
    (topf / "all" / "50-talos-schematic-l40s.yaml.tpl").unlink()
    found = list(lint_paths([str(topf / "topf.yaml")]).findings)
    assert {(f.code, f.line) for f in found} == {("TS123", 10)}  # the node's entry
    assert "node l40s-1" in found[0].message


def test_a_node_on_another_schematic_gets_no_gpu_patch(tmp_path: Path) -> None:
    # Must not fire the other way: the cpu node with every pool's patch linked loads nothing.
    topf = generated(tmp_path, "v1.13.9")
    follow_apply_md(topf)
    cpu_id = Schematic.from_yaml((topf / "cpu" / "schematic.yaml").read_text("utf-8")).id
    node = {"host": "cpu-1", "role": "worker"}
    machine = [d for d in patches_for(topf, node, cpu_id) if "machine" in d]
    assert all("kernel" not in d["machine"] for d in machine)


# topf's own example (postfinance/topf example/topf.yaml, example/all/00-install-disk.yaml and
# example/node/node5/00-local-storage.yaml.tpl at 2a60138c), trimmed to three nodes.
TOPF_EXAMPLE = """\
kubernetesVersion: 1.35.5
talosVersion: 1.13.3
clusterEndpoint: https://192.168.1.80:6443
clusterName: my-cluster
nodes:
  - host: node1
    ip: 192.168.1.11
    role: control-plane
  - host: node4
    ip: 192.168.1.21
    role: worker
  - host: node5
    ip: 192.168.1.22
    role: worker
    data:
      storageDevice: /dev/sdb
"""


def test_topfs_own_example_is_read_without_a_finding(tmp_path: Path) -> None:
    (tmp_path / "topf.yaml").write_text(TOPF_EXAMPLE, "utf-8")
    (tmp_path / "all").mkdir()
    (tmp_path / "all" / "00-install-disk.yaml").write_text(
        "machine:\n  install:\n    disk: /dev/sda\n", "utf-8"
    )
    (tmp_path / "node" / "node5").mkdir(parents=True)
    (tmp_path / "node" / "node5" / "00-local-storage.yaml.tpl").write_text(
        "machine:\n  disks:\n    - device: {{ .Node.Data.storageDevice }}\n", "utf-8"
    )
    result = lint_paths([str(tmp_path / "topf.yaml")])
    assert list(result.findings) == []


def test_a_gpu_schematic_without_its_patch_is_ts123_and_a_template_is_not_guessed(
    tmp_path: Path,
) -> None:
    schematic = (
        "customization:\n  systemExtensions:\n    officialExtensions:\n"
        "      - siderolabs/nvidia-container-toolkit-lts\n"
        "      - siderolabs/nvidia-open-gpu-kernel-modules-lts\n"
    )
    (tmp_path / "gpu.yaml").write_text(schematic, "utf-8")
    config = TOPF_EXAMPLE.replace(
        "    role: worker\n", '    role: worker\n    schematicId: "@gpu.yaml"\n', 1
    )
    (tmp_path / "topf.yaml").write_text(config, "utf-8")
    found = list(lint_paths([str(tmp_path / "topf.yaml")]).findings)
    assert [(f.code, f.line) for f in found if f.severity == "error"] == [("TS123", 9)]
    # A template lint cannot evaluate may load the modules: no longer an error.
    (tmp_path / "worker").mkdir()
    (tmp_path / "worker" / "10-modules.yaml.tpl").write_text(
        "machine:\n  kernel:\n    modules:\n{{ range .Data.modules }}      - name: {{ . }}\n"
        "{{ end }}",
        "utf-8",
    )
    found = list(lint_paths([str(tmp_path / "topf.yaml")]).findings)
    assert [f for f in found if f.severity == "error"] == []


def test_a_talconfig_is_not_a_topf_config_nor_the_other_way() -> None:
    from schematic.doctor.lint.talhelper import is_talconfig
    from schematic.doctor.lint.topf import is_topf_config

    topf = yaml.safe_load(TOPF_EXAMPLE)
    talconfig = {
        "clusterName": "c",
        "endpoint": "https://10.0.0.1:6443",
        "nodes": [{"hostname": "a", "ipAddress": "10.0.0.2", "controlPlane": True}],
    }
    assert is_topf_config(topf) and not is_talconfig(topf)
    assert is_talconfig(talconfig) and not is_topf_config(talconfig)


TWO_POOLS = """\
cluster: lab
talos: {version: v1.13.9}
pools:
  - name: rack-a
    profile: metal-hgx-h100-8x
  - name: rack-b
    profile: metal-hgx-h100-8x
"""


def test_pools_sharing_a_schematic_need_the_same_patch(tmp_path: Path) -> None:
    # topf tells nodes apart by .SchematicID alone: two pools of one schematic each get the
    # other's patch too. With the same patch that changes nothing a node loads...
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(TWO_POOLS, "utf-8")
    topf = tmp_path / "same"
    result = runner.invoke(app, ["generate", str(cluster_file), "-f", "topf", "--out", str(topf)])
    assert result.exit_code == 0, result.output
    nodes = follow_apply_md(topf)
    schematic_id = Schematic.from_yaml((topf / "rack-a" / "schematic.yaml").read_text()).id
    for node in nodes:
        modules = [
            module["name"]
            for document in patches_for(topf, {**node, "role": "worker"}, schematic_id)
            for module in document["machine"]["kernel"]["modules"]
        ]
        assert set(modules) == set(NVIDIA_MODULES), node
    # ... with different patches, each node would get both pools' modules and parameters: the
    # file is refused, naming both pools and the shared schematic, and nothing is written.
    cluster_file.write_text(
        TWO_POOLS + "    kernelModules:\n      - name: nvidia\n"
        "        parameters: [NVreg_EnableGpuFirmware=0]\n",
        "utf-8",
    )
    refused = tmp_path / "refused"
    result = runner.invoke(
        app, ["generate", str(cluster_file), "-f", "topf", "--out", str(refused)]
    )
    assert result.exit_code == 2
    assert "rack-a, rack-b share schematic" in result.stderr
    assert not refused.exists()
    # Other kinds tell the pools apart by name, and write both.
    result = runner.invoke(
        app, ["generate", str(cluster_file), "-f", "talhelper", "--out", str(tmp_path / "t")]
    )
    assert result.exit_code == 0, result.output
