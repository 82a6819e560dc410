"""KubernetesNodes values per layout, checked against the real chart schemas when present."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render.cozystack import LAYOUTS, Layout, kubernetes_nodes, pool_values
from schematic.plan.cluster import ClusterPlan, plan_cluster

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
COZYSTACK = REFERENCE / "cozystack"
# Which chart generation each layout is written for.
CHART_SCHEMAS: dict[Layout, str] = {
    "schematicid": "kubernetes-nodes.values.schema.pr3571.json",
    "talos": "kubernetes-nodes.values.schema.v1.6.2.json",
    # osImage is not in any reference schema yet (PR #4171); the rest of the values must fit the
    # newest chart.
    "osimage": "kubernetes-nodes.values.schema.pr3294.json",
}

CLUSTER = """\
cluster: mycluster
namespace: tenant-ml
talos: {version: v1.13.9}
pools:
  - name: gpu
    profile: kubevirt-rtx-pro-6000-blackwell-server
    minReplicas: 0
    maxReplicas: 4
    instanceType: u1.2xlarge
    diskSize: 100Gi
    roles: [gpu]
    kubelet: {evictionHardMemory: 5%}
  - name: l40s
    hardware: {platform: kubevirt, gpus: [{id: "10de:26b9", count: 2}]}
    resources: {cpu: 16, memory: 128Gi}
    talos:
      registryMirrors: {docker.io: {endpoints: [https://mirror.example]}}
  - name: cpu
    profile: kubevirt-cpu
  - name: optout
    profile: kubevirt-l40s
    kernelModules: []
  - name: storage
    profile: kubevirt-cpu
    extensions: [siderolabs/drbd]
"""


@pytest.fixture(scope="module")
def example() -> ClusterPlan:
    return plan_cluster(parse_cluster(CLUSTER, "cluster.yaml"), source="cluster.yaml")


def values_of(plan: ClusterPlan, name: str, layout: Layout = "osimage") -> dict[str, Any]:
    (pool,) = [pool for pool in plan.pools if pool.name == name]
    return pool_values(plan.cluster, pool, layout)


def test_osimage_layout_of_a_gpu_pool(example: ClusterPlan) -> None:
    gpu = example.pools[0]
    assert values_of(example, "gpu") == {
        "cluster": "mycluster",
        "minReplicas": 0,
        "maxReplicas": 4,
        "instanceType": "u1.2xlarge",
        "diskSize": "100Gi",
        "roles": ["gpu"],
        "kubelet": {"evictionHardMemory": "5%"},
        "gpus": [{"name": "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION"}],
        "kernelModules": [
            {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
            {"name": "nvidia_uvm"},
            {"name": "nvidia_drm"},
            {"name": "nvidia_modeset"},
        ],
        "osImage": {
            "factory": {
                "schematicID": gpu.schematic_id,
                "version": "v1.13.9",
                "imageFactoryURL": "https://factory.talos.dev",
            }
        },
    }


def test_schematicid_layout_writes_root_id_and_complete_talos(example: ClusterPlan) -> None:
    values = values_of(example, "gpu", "schematicid")
    gpu = example.pools[0]
    assert values["schematicID"] == gpu.schematic_id
    assert values["talos"] == {
        "version": "v1.13.9",
        "schematicID": gpu.schematic_id,
        "imageFactoryURL": "https://factory.talos.dev",
        "installerRepository": "factory.talos.dev/installer",
        "registryMirrors": {},
    }
    assert "osImage" not in values


def test_talos_layout_writes_talos_schematic_id(example: ClusterPlan) -> None:
    values = values_of(example, "cpu", "talos")
    assert values == {
        "cluster": "mycluster",
        "talos": {
            "version": "v1.13.9",
            "schematicID": "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515",
            "imageFactoryURL": "https://factory.talos.dev",
            "installerRepository": "factory.talos.dev/installer",
        },
    }


def test_two_gpus_give_two_entries_and_mirrors_pass_into_talos(example: ClusterPlan) -> None:
    values = values_of(example, "l40s")
    assert values["gpus"] == [{"name": "nvidia.com/AD102GL_L40S"}] * 2
    assert values["resources"] == {"cpu": 16, "memory": "128Gi"}
    (pool,) = [pool for pool in example.pools if pool.name == "l40s"]
    assert values["talos"] == {
        "version": "v1.13.9",
        "schematicID": pool.schematic_id,
        "imageFactoryURL": "https://factory.talos.dev",
        "installerRepository": "factory.talos.dev/installer",
        "registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}},
    }
    assert values_of(example, "l40s", "talos")["talos"]["registryMirrors"] == {
        "docker.io": {"endpoints": ["https://mirror.example"]}
    }


def test_kernel_modules_three_states(example: ClusterPlan) -> None:
    assert "kernelModules" not in values_of(example, "cpu")
    assert values_of(example, "optout")["kernelModules"] == []
    assert values_of(example, "storage")["kernelModules"] == [
        {"name": "drbd", "parameters": ["usermode_helper=disabled"]}
    ]
    # The same three states in every layout: absent when unset, [] for the opt-out, the list.
    for layout in LAYOUTS:
        by_name = {pool.name: pool_values(example.cluster, pool, layout) for pool in example.pools}
        assert "kernelModules" not in by_name["cpu"], layout
        assert by_name["optout"]["kernelModules"] == [], layout
        assert by_name["storage"]["kernelModules"] == [
            {"name": "drbd", "parameters": ["usermode_helper=disabled"]}
        ], layout


def test_pool_without_nvidia_gpu_has_no_gpus_and_no_nvidia_extension(example: ClusterPlan) -> None:
    for name in ("cpu", "storage"):
        assert "gpus" not in values_of(example, name)
        (pool,) = [pool for pool in example.pools if pool.name == name]
        assert not any("nvidia" in extension for extension in pool.extensions)


def test_manifest_is_named_cluster_dash_pool(example: ClusterPlan) -> None:
    manifest = kubernetes_nodes(example, example.pools[2], "talos")
    assert manifest["apiVersion"] == "apps.cozystack.io/v1alpha1"
    assert manifest["kind"] == "KubernetesNodes"
    assert manifest["metadata"] == {"name": "mycluster-cpu", "namespace": "tenant-ml"}
    assert manifest["spec"] == values_of(example, "cpu", "talos")


def test_values_image_and_installer_name_the_same_schematic(example: ClusterPlan) -> None:
    for pool in example.pools:
        for layout in LAYOUTS:
            values = pool_values(example.cluster, pool, layout)
            carried = (
                values["osImage"]["factory"]["schematicID"]
                if layout == "osimage"
                else values.get("schematicID", values["talos"]["schematicID"])
            )
            assert carried == pool.schematic_id
        assert f"/image/{pool.schematic_id}/v1.13.9/" in pool.references.boot_image
        assert (
            pool.references.installer == f"factory.talos.dev/installer/{pool.schematic_id}:v1.13.9"
        )


@pytest.mark.skipif(
    not COZYSTACK.is_dir(), reason=f"Cozystack chart schemas not available at {COZYSTACK}"
)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_values_validate_against_the_chart_schema(example: ClusterPlan, layout: Layout) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((COZYSTACK / CHART_SCHEMAS[layout]).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for pool in example.pools:
        values = pool_values(example.cluster, pool, layout)
        errors = [error.message for error in validator.iter_errors(values)]
        assert errors == [], (pool.name, errors)


@pytest.mark.skipif(
    not COZYSTACK.is_dir(), reason=f"Cozystack chart schemas not available at {COZYSTACK}"
)
def test_pass_through_key_list_matches_the_chart_schemas() -> None:
    from schematic.inputs.cluster_values import pool_keys

    chart_keys = set()
    for name in CHART_SCHEMAS.values():
        chart_keys |= set(json.loads((COZYSTACK / name).read_text())["properties"])
    # osImage (PR #4171) is known from DOMAIN.md, not from a stored schema.
    assert set(pool_keys()) - {"osImage"} == chart_keys


def test_namespace_is_optional() -> None:
    text = textwrap.dedent(
        """\
        cluster: c
        talos: {version: v1.13.9}
        pools: [{name: p, profile: kubevirt-cpu}]
        """
    )
    plan = plan_cluster(parse_cluster(text, "c.yaml"))
    assert kubernetes_nodes(plan, plan.pools[0])["metadata"] == {"name": "c-p"}


def test_talos_1_14_values_name_the_platform_installer_the_chart_does_not_default_to() -> None:
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.output.render.cozystack import tool_values
    from schematic.plan.cluster import plan_cluster

    text = "cluster: c\ntalos: {version: v1.14.0}\npools:\n  - {name: p, profile: kubevirt-l40s}\n"
    plan = plan_cluster(parse_cluster(text, "c.yaml")).pools[0]
    values = tool_values(plan)
    # KubeVirt workers boot the openstack image; its installer keeps that platform's arguments.
    assert values["talos"]["installerRepository"] == "factory.talos.dev/openstack-installer"
    metal = text.replace("kubevirt-l40s", "metal-hgx-b200-8x")
    metal_values = tool_values(plan_cluster(parse_cluster(metal, "c.yaml")).pools[0])
    assert metal_values["talos"]["installerRepository"] == "factory.talos.dev/metal-installer"
    older = text.replace("v1.14.0", "v1.13.9")
    assert "talos" not in tool_values(plan_cluster(parse_cluster(older, "c.yaml")).pools[0])
