"""Talos machine-config patches, checked against the Talos config schemas when present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from schematic.cluster import PoolPlan, parse_cluster, plan_cluster
from schematic.render import yamltext
from schematic.render.machineconfig import machine_config_patch

TALOS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "talos"
NVIDIA: list[dict[str, Any]] = [
    {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
    {"name": "nvidia_uvm"},
    {"name": "nvidia_drm"},
    {"name": "nvidia_modeset"},
]


def pool(profile: str, talos: str, extra: str = "") -> PoolPlan:
    pools = f"pools:\n  - {{name: p, profile: {profile}{extra}}}\n"
    text = f"cluster: c\ntalos: {{version: {talos}}}\n{pools}"
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
            "install": {"image": f"factory.talos.dev/installer/{plan.schematic_id}:v1.14.0"}
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
