"""Talos machine-config patches, checked against the Talos config schemas when present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from schematic.errors import ClusterFileError
from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render import yamltext
from schematic.output.render.machineconfig import machine_config_patch
from schematic.plan.cluster import PoolPlan, plan_cluster

TALOS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "talos"
NVIDIA: list[dict[str, Any]] = [
    {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
    {"name": "nvidia_uvm"},
    {"name": "nvidia_drm"},
    {"name": "nvidia_modeset"},
]


def pool(profile: str, talos: str, extra: str = "", top: str = "") -> PoolPlan:
    pools = f"pools:\n  - {{name: p, profile: {profile}{extra}}}\n"
    text = f"cluster: c\ntalos:\n  version: {talos}\n{top}{pools}"
    return plan_cluster(parse_cluster(text, "c.yaml")).pools[0]


def test_talos_1_13_gpu_pool_loads_modules_and_pins_installer() -> None:
    plan = pool("kubevirt-l40s", "v1.13.9")
    assert machine_config_patch(plan) == [
        {
            "machine": {
                "install": {"image": f"factory.talos.dev/installer/{plan.schematic_id}:v1.13.9"},
                "kernel": {"modules": NVIDIA},
            }
        }
    ]


def test_talos_1_12_adds_bpf_jit_harden() -> None:
    (document,) = machine_config_patch(pool("kubevirt-l40s", "v1.12.4"))
    assert document["machine"]["sysctls"] == {"net.core.bpf_jit_harden": "1"}


def test_talos_1_14_uses_one_kernel_module_document_per_module() -> None:
    plan = pool("kubevirt-l40s", "v1.14.0")
    first, *modules = machine_config_patch(plan)
    assert first == {
        "machine": {
            # Talos 1.14 publishes no plain installer image: a KubeVirt worker booted the
            # openstack image, so it upgrades from the factory's openstack-installer.
            "install": {
                "image": f"factory.talos.dev/openstack-installer/{plan.schematic_id}:v1.14.0"
            }
        }
    }
    assert modules == [
        {"apiVersion": "v1alpha1", "kind": "KernelModuleConfig", **m} for m in NVIDIA
    ]


def test_cpu_pool_only_pins_the_installer() -> None:
    plan = pool("kubevirt-cpu", "v1.13.9")
    assert machine_config_patch(plan) == [
        {
            "machine": {
                "install": {"image": f"factory.talos.dev/installer/{plan.schematic_id}:v1.13.9"}
            }
        }
    ]


def test_opted_out_pool_loads_nothing() -> None:
    (document,) = machine_config_patch(pool("kubevirt-l40s", "v1.13.9", ", kernelModules: []"))
    assert "kernel" not in document["machine"]


def test_patch_text_round_trips() -> None:
    documents = machine_config_patch(pool("kubevirt-l40s", "v1.14.0"))
    assert list(yaml.safe_load_all(yamltext.dump_all(documents))) == documents


def _validator(version: str) -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((TALOS / f"config.schema.{version}.json").read_text())
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
@pytest.mark.parametrize("talos", ["v1.12.4", "v1.13.9"])
@pytest.mark.parametrize("profile", ["kubevirt-l40s", "kubevirt-cpu", "metal-hgx-h100-8x"])
def test_patches_before_1_14_validate_against_the_1_13_schema(profile: str, talos: str) -> None:
    validator = _validator("v1.13.9")
    for document in machine_config_patch(pool(profile, talos)):
        assert [error.message for error in validator.iter_errors(document)] == []


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
def test_talos_1_14_module_documents_validate_against_the_1_14_schema() -> None:
    first, *modules = machine_config_patch(pool("kubevirt-l40s", "v1.14.0"))
    validator = _validator("v1.14.0-rc.1")
    for document in modules:
        assert [error.message for error in validator.iter_errors(document)] == []
    # The 1.14 schema leaves out the deprecated v1alpha1 fields Talos still accepts
    # (machine.install, machine.kernel); the v1alpha1 part validates against the 1.13 schema.
    assert [error.message for error in _validator("v1.13.9").iter_errors(first)] == []


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
def test_talos_1_14_b200_patch_validates_and_installs_from_the_metal_installer() -> None:
    plan = pool("metal-hgx-b200-8x", "v1.14.0")
    assert (
        plan.references.install_form == "unattended"
    )  # bare metal on 1.14: the gen config 1.14 form
    unattended, *modules = machine_config_patch(plan)
    image = unattended["installer"]["image"]
    assert image == f"factory.talos.dev/metal-installer/{plan.schematic_id}:v1.14.0"
    assert [m["name"] for m in modules][-1] == "ib_umad"
    validator = _validator("v1.14.0-rc.1")
    for document in modules:
        assert [error.message for error in validator.iter_errors(document)] == []


# The 1.14.0-rc.1 schema names the kind "UnattendedInstall", while Talos registers the document
# as UnattendedInstallConfig (pkg/machinery/config/types/runtime/unattended_install.go, and its
# testdata/unattendedinstall.yaml): the schema's generator, not Talos, is off there.
SCHEMA_KIND_ERROR = "'UnattendedInstallConfig' is not one of ['UnattendedInstall']"


def _unattended_errors(document: dict[str, Any]) -> list[str]:
    """The errors of ``document`` against the schema's UnattendedInstallConfig definition."""
    jsonschema = pytest.importorskip("jsonschema")
    full = json.loads((TALOS / "config.schema.v1.14.0-rc.1.json").read_text())
    schema = full["$defs"]["runtime.UnattendedInstallConfigV1Alpha1"] | {"$defs": full["$defs"]}
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(document)]


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
@pytest.mark.parametrize("profile", ["metal-hgx-h100-8x", "kubevirt-l40s", "kubevirt-cpu"])
def test_talos_1_14_unattended_form_validates_against_the_1_14_schema(profile: str) -> None:
    plan = pool(profile, "v1.14.0", top="  installConfig: unattended\n")
    documents = machine_config_patch(plan)
    (unattended,) = [d for d in documents if d.get("kind") == "UnattendedInstallConfig"]
    assert unattended["installer"]["image"] == plan.references.installer
    assert not any("install" in d.get("machine", {}) for d in documents)
    # Every field validates; the kind is the one the schema misnames.
    assert _unattended_errors(unattended) == [SCHEMA_KIND_ERROR]
    assert _unattended_errors(unattended | {"kind": "UnattendedInstall"}) == []
    validator = _validator("v1.14.0-rc.1")
    for document in documents:
        if document is not unattended and "kind" in document:
            assert [error.message for error in validator.iter_errors(document)] == []


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
@pytest.mark.parametrize("profile", ["metal-hgx-h100-8x", "kubevirt-l40s"])
def test_talos_1_14_machine_install_form_against_the_1_14_schema(profile: str) -> None:
    plan = pool(profile, "v1.14.0", top="  installConfig: machine-install\n")
    first, *documents = machine_config_patch(plan)
    assert first["machine"]["install"] == {"image": plan.references.installer}
    assert not any(d.get("kind") == "UnattendedInstallConfig" for d in documents)
    # The 1.14 schema leaves out the deprecated v1alpha1 fields Talos still reads: machine.install
    # is the one error it reports; the rest of the document validates, and the whole against 1.13.
    errors = [error.message for error in _validator("v1.14.0-rc.1").iter_errors(first)]
    assert len(errors) == 1 and "'install'" in errors[0], errors
    rest = {"machine": {k: v for k, v in first["machine"].items() if k != "install"}}
    assert [error.message for error in _validator("v1.14.0-rc.1").iter_errors(rest)] == []
    assert [error.message for error in _validator("v1.13.9").iter_errors(first)] == []


@pytest.mark.parametrize(
    ("profile", "talos", "form"),
    [
        ("kubevirt-l40s", "v1.13.9", "machine-install"),
        ("metal-hgx-h100-8x", "v1.13.9", "machine-install"),
        # Cozystack's chart writes machine.install into the TalosConfigTemplate itself.
        ("kubevirt-l40s", "v1.14.0", "machine-install"),
        ("metal-hgx-h100-8x", "v1.14.0", "unattended"),
    ],
)
def test_install_form_defaults_per_release_and_platform(
    profile: str, talos: str, form: str
) -> None:
    assert pool(profile, talos).references.install_form == form


def test_unattended_before_1_14_is_refused_naming_the_key() -> None:
    with pytest.raises(ClusterFileError, match=r"talos\.installConfig.*arrives in Talos v1\.14\.0"):
        pool("metal-hgx-h100-8x", "v1.13.9", top="  installConfig: unattended\n")
    with pytest.raises(ClusterFileError, match=r"talos\.installConfig.*one of auto"):
        pool("metal-hgx-h100-8x", "v1.14.0", top="  installConfig: yes-please\n")


MIRRORS = (
    ", talos: {registryMirrors: {docker.io: {endpoints: [https://m.example], "
    "overridePath: true}, ghcr.io: {endpoints: [https://g.example], skipFallback: true}}}"
)


def test_mirrors_before_talos_1_12_go_under_machine_registries() -> None:
    (document,) = machine_config_patch(pool("kubevirt-cpu", "v1.11.5", MIRRORS))
    assert document["machine"]["registries"] == {
        "mirrors": {
            "docker.io": {"endpoints": ["https://m.example"], "overridePath": True},
            "ghcr.io": {"endpoints": ["https://g.example"], "skipFallback": True},
        }
    }


@pytest.mark.parametrize("talos", ["v1.12.0", "v1.12.4"])
def test_mirrors_from_talos_1_12_are_registry_mirror_documents(talos: str) -> None:
    # From the first 1.12 release on: v1.12.0 has no machine.registries either.
    first, *documents = machine_config_patch(pool("kubevirt-cpu", talos, MIRRORS))
    assert "registries" not in first["machine"]
    assert documents == [
        {
            "apiVersion": "v1alpha1",
            "kind": "RegistryMirrorConfig",
            "name": "docker.io",
            "endpoints": [{"url": "https://m.example", "overridePath": True}],
        },
        {
            "apiVersion": "v1alpha1",
            "kind": "RegistryMirrorConfig",
            "name": "ghcr.io",
            "endpoints": [{"url": "https://g.example"}],
            "skipFallback": True,
        },
    ]


def test_pools_differing_only_in_mirrors_get_their_own_patches() -> None:
    from schematic.output.render.files import render_files

    text = (
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n"
        "  - {name: a, profile: kubevirt-cpu}\n"
        f"  - {{name: b, profile: kubevirt-cpu{MIRRORS}}}\n"
    )
    files = render_files(plan_cluster(parse_cluster(text, "c.yaml")), ["machine-config"])
    assert b"RegistryMirrorConfig" not in files["a/machine-config-patch.yaml"]
    assert b"RegistryMirrorConfig" in files["b/machine-config-patch.yaml"]


@pytest.mark.skipif(not TALOS.is_dir(), reason=f"Talos config schemas not available at {TALOS}")
@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_mirror_documents_validate_against_the_talos_schemas(talos: str) -> None:
    _first, *documents = machine_config_patch(pool("kubevirt-cpu", talos, MIRRORS))
    for schema in ("v1.13.9", "v1.14.0-rc.1"):
        validator = _validator(schema)
        for document in documents:
            assert [error.message for error in validator.iter_errors(document)] == []


@pytest.mark.parametrize(
    ("mirrors", "message"),
    [
        ("{docker.io: [https://m.example]}", "docker.io: give {endpoints: [mirror URL, ...]}"),
        ("{docker.io: {endpoint: [https://m]}}", "docker.io.endpoint: unknown key; did you mean"),
        ("{docker.io: {endpoints: [m.example]}}", "docker.io.endpoints: give a list of http(s)"),
        ("{docker.io: {endpoints: []}}", "docker.io.endpoints: give a list of http(s)"),
        (
            "{docker.io: {endpoints: [https://m], skipFallback: yes}}",
            "docker.io.skipFallback: write true or false",
        ),
    ],
)
def test_malformed_mirrors_are_refused_with_the_registry(mirrors: str, message: str) -> None:
    from schematic.errors import ClusterFileError

    for where in ("cluster", "pool"):
        talos = (
            f"{{version: v1.13.9, registryMirrors: {mirrors}}}"
            if where == "cluster"
            else ("{version: v1.13.9}")
        )
        extra = f", talos: {{registryMirrors: {mirrors}}}" if where == "pool" else ""
        text = (
            f"cluster: c\ntalos: {talos}\npools:\n  - {{name: p, profile: kubevirt-cpu{extra}}}\n"
        )
        with pytest.raises(ClusterFileError) as caught:
            parse_cluster(text, "c.yaml")
        assert message in str(caught.value)
        assert "registryMirrors" in str(caught.value)


_HERE = Path(__file__).resolve()
# ../shared beside the repository; a worktree sits one level deeper.
_TALOS_SCHEMAS = next(
    (
        p / "shared" / "reference" / "talos"
        for p in (_HERE.parents[2], _HERE.parents[3])
        if (p / "shared" / "reference" / "talos").is_dir()
    ),
    TALOS,
)


@pytest.mark.skipif(
    not _TALOS_SCHEMAS.is_dir(), reason=f"Talos config schemas not available at {_TALOS_SCHEMAS}"
)
def test_talos_1_14_kubevirt_patch_keeps_machine_install_by_default() -> None:
    """The decision for Cozystack workers: on Talos 1.14 their patch pins the installer with
    ``machine.install.image`` by default, because the chart's TalosConfigTemplate writes that
    form, and a config holding the new document refuses ``machine.install`` (the README and
    docs/talos-1.14.md say which form to pick elsewhere)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((_TALOS_SCHEMAS / "config.schema.v1.14.0-rc.1.json").read_text())
    # 1.14 has the replacing document and no longer lists machine.install: the choice is real.
    assert "runtime.UnattendedInstallConfigV1Alpha1" in schema["$defs"]
    assert "install" not in schema["$defs"]["v1alpha1.MachineConfig"]["properties"]
    plan = pool("kubevirt-l40s", "v1.14.0")
    first, *documents = machine_config_patch(plan)
    assert first["machine"]["install"] == {"image": plan.references.installer}
    assert [d["kind"] for d in documents] == ["KernelModuleConfig"] * 4
    validator = jsonschema.Draft202012Validator(schema)
    for document in documents:
        assert [error.message for error in validator.iter_errors(document)] == []
    readme = (_HERE.parents[1] / "README.md").read_text()
    assert "`talos.installConfig`" in readme and "docs/talos-1.14.md" in readme


def test_a_pool_held_back_before_1_14_keeps_machine_install() -> None:
    text = (
        "cluster: c\ntalos:\n  version: v1.14.0\n  installConfig: unattended\npools:\n"
        "  - {name: new, profile: metal-hgx-h100-8x}\n"
        "  - {name: old, profile: metal-hgx-h100-8x, talos: {version: v1.13.9}}\n"
    )
    new, old = plan_cluster(parse_cluster(text, "c.yaml")).pools
    assert (new.references.install_form, old.references.install_form) == (
        "unattended",
        "machine-install",
    )
    assert machine_config_patch(old)[0]["machine"]["install"] == {"image": old.references.installer}
