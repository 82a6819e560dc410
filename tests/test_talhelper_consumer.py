"""`generate -f talhelper` as talhelper's last release (v3.1.17, archived) loads it.

The rules are read at talhelper's source, budimanjojo/talhelper at
39b69792faba257238d8ce43b42c918ecbfef6cb (2026-08-21, the tree v3.1.17 was cut from):

- ``pkg/config/config.go``: a node entry is ``Node`` (its own keys) with ``NodeConfigs``
  inlined; ``kernelModules`` is ``[]*v1alpha1.KernelModuleConfig`` (the machine.kernel.modules
  entry), ``patches`` is ``[]string``;
- ``pkg/talos/nodeconfig.go``: ``kernelModules`` becomes ``machine.kernel.modules``;
- ``pkg/patcher/patcher.go``: ``PatchesPatcher`` loads every inline patch with the bundled
  machinery's ``configpatcher.LoadPatches``, which refuses a document of a kind it has not
  registered. ``go.mod`` bundles ``siderolabs/talos/pkg/machinery v1.14.0-alpha.2``, older than
  the ``KernelModuleConfig`` document: the kinds it registers are taken here as the kinds of
  the Talos 1.13 schema (../shared/reference/talos), which has no ``KernelModuleConfig``;
- ``pkg/config/defaults.go``: the installer it writes, ``InstallerURLTmpl``
  ``{{.RegistryURL}}/{{.Mode}}-installer{{if .Secureboot}}-secureboot{{end}}/{{.ID}}:{{.Version}}``
  (``RegistryURL`` factory.talos.dev, ``Mode`` the node's ``machineSpec.mode``, metal by
  default), or the node's ``talosImageURL`` with ``:<talosVersion>`` appended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint.talhelper import NODE_CONFIG_KEYS, NODE_OWN_KEYS

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
TALOS = ROOT.parent / "shared" / "reference" / "talos"
EXAMPLES = ("cluster.yaml", "boot-media.yaml")

# A node's keys are NODE_OWN_KEYS and NODE_CONFIG_KEYS, read by lint (pkg/config/config.go).
MACHINE_SPEC_KEYS = {"mode", "arch", "secureboot", "useUKI", "bootMethod", "imageSuffix"}
REGISTRY_URL = "factory.talos.dev"

needs_schemas = pytest.mark.skipif(
    not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}"
)


def schema_1_13() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((TALOS / "config.schema.v1.13.9.json").read_text())
    return schema


def registered_kinds(schema: dict[str, Any]) -> set[str]:
    """The document kinds a Talos schema lists (v1alpha1, the untyped one, has none)."""
    kinds = set()
    for ref in schema["oneOf"]:
        definition = schema["$defs"][ref["$ref"].rsplit("/", 1)[1]]
        kinds.update(definition.get("properties", {}).get("kind", {}).get("enum", []))
    return kinds


def installer_talhelper_writes(node: dict[str, Any], talos: str) -> str:
    """The install image talhelper v3.1.17 writes for a node (pkg/config/defaults.go)."""
    schematic = Schematic.from_yaml(yaml.safe_dump(node["schematic"]))
    if node.get("talosImageURL"):
        return f"{node['talosImageURL']}:{talos}"
    spec = node.get("machineSpec", {})
    secure = "-secureboot" if spec.get("secureboot") else ""
    return f"{REGISTRY_URL}/{spec.get('mode', 'metal')}-installer{secure}/{schematic.id}:{talos}"


def fragments(cluster_file: Path) -> dict[str, str]:
    result = runner.invoke(app, ["generate", str(cluster_file), "-f", "talhelper"])
    assert result.exit_code == 0, result.output
    return {text.split()[5]: text for text in result.stdout.split("---\n")}


def talconfig(talos: str, pool: str, fragment: str) -> dict[str, Any]:
    """The fragment pasted as it is below a node entry's first lines, as a user does."""
    text = (
        "clusterName: mycluster\n"
        f"talosVersion: {talos}\n"
        "kubernetesVersion: v1.35.0\n"
        "endpoint: https://192.168.200.10:6443\n"
        "nodes:\n"
        f"  - hostname: {pool}-1\n"
        "    ipAddress: 192.168.200.21\n"
        f"{fragment}"
        f"  - hostname: {pool}-2\n"
        "    ipAddress: 192.168.200.22\n"
    )
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


@needs_schemas
@pytest.mark.parametrize("talos", ["v1.12.4", "v1.13.9", "v1.14.0"])
@pytest.mark.parametrize("example", EXAMPLES)
def test_talhelpers_last_release_loads_every_fragment(
    tmp_path: Path, talos: str, example: str
) -> None:
    cluster_file = tmp_path / example
    source = (ROOT / "examples" / example).read_text("utf-8")
    cluster_file.write_text(source.replace("version: v1.13.9", f"version: {talos}"), "utf-8")
    jsonschema = pytest.importorskip("jsonschema")

    schema = schema_1_13()
    loadable = registered_kinds(schema)
    assert "KernelModuleConfig" not in loadable and "RegistryMirrorConfig" in loadable
    validator = jsonschema.Draft202012Validator(schema)
    module_entry = jsonschema.Draft202012Validator(
        schema["$defs"]["v1alpha1.KernelModuleConfig"] | {"$defs": schema["$defs"]}
    )
    for pool, fragment in fragments(cluster_file).items():
        config = talconfig(talos, pool, fragment)
        # Pasted unchanged, the keys are the node's own: the next entry is another node.
        first, second = config["nodes"]
        assert second == {"hostname": f"{pool}-2", "ipAddress": "192.168.200.22"}
        assert set(first) <= NODE_OWN_KEYS | NODE_CONFIG_KEYS, pool
        assert set(first.get("machineSpec", {})) <= MACHINE_SPEC_KEYS
        for entry in first.get("kernelModules", []):
            assert list(module_entry.iter_errors(entry)) == [], entry
        for patch in first.get("patches", []):
            assert isinstance(patch, str)
            for document in yaml.safe_load_all(patch):
                if "kind" in document:
                    assert document["kind"] in loadable, (pool, talos, document["kind"])
                assert [e.message for e in validator.iter_errors(document)] == [], document
        # The installer talhelper writes is the one the header names, of the pool's schematic.
        installer = installer_talhelper_writes(first, talos)
        assert f"# installer {installer} " in fragment, (pool, fragment)
        assert Schematic.from_yaml(yaml.safe_dump(first["schematic"])).id in installer


def test_the_modules_are_loaded_on_1_14_in_the_form_talhelper_writes(tmp_path: Path) -> None:
    # Talos 1.14 still accepts machine.kernel.modules; the KernelModuleConfig documents the
    # machine-config patch uses there would fail to load in talhelper ("not registered").
    cluster_file = tmp_path / "cluster.yaml"
    source = (ROOT / "examples" / "cluster.yaml").read_text("utf-8")
    cluster_file.write_text(source.replace("version: v1.13.9", "version: v1.14.0"), "utf-8")
    node = talconfig("v1.14.0", "l40s", fragments(cluster_file)["l40s"])["nodes"][0]
    assert [entry["name"] for entry in node["kernelModules"]] == [
        "nvidia",
        "nvidia_uvm",
        "nvidia_drm",
        "nvidia_modeset",
    ]
    assert "KernelModuleConfig" not in json.dumps(node)
