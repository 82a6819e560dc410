"""Pools that share texts in a run render exactly as each would alone."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render.files import (
    KINDS,
    POOL_FILES,
    TENANT_KINDS,
    _RenderedAlike,
    render_files,
)
from schematic.plan.cluster import ClusterPlan, PoolPlan, plan_cluster

# Pools that share one schematic and differ in what else their files say.
CLUSTER = """\
cluster: demo
talos: {version: v1.13.9, registryMirrors: {docker.io: {endpoints: [https://a.example]}}}
pools:
  - {name: unset, profile: kubevirt-cpu}
  - {name: optout, profile: kubevirt-cpu, kernelModules: []}
  - name: listed
    profile: kubevirt-cpu
    kernelModules: [{name: drbd, parameters: [usermode_helper=disabled]}]
  - name: mirrored
    profile: kubevirt-cpu
    talos: {registryMirrors: {docker.io: {endpoints: [https://b.example]}}}
  - name: trusted
    profile: kubevirt-cpu
    talos:
      imageFactoryCA: "-----BEGIN CERTIFICATE-----\\nMIIBkDCCATWg\\n-----END CERTIFICATE-----\\n"
  - {name: secure, profile: metal-intel}
  - {name: secure-boot, profile: metal-intel, secureboot: {enabled: true}}
  - {name: unset-again, profile: kubevirt-cpu, minReplicas: 3}
"""


@pytest.fixture(scope="module")
def plan() -> ClusterPlan:
    return plan_cluster(parse_cluster(CLUSTER, "c.yaml"), source="c.yaml")


def _pool_files(plan: ClusterPlan, pool: PoolPlan, layout: str) -> dict[str, bytes]:
    files = render_files(plan, KINDS, layout)  # type: ignore[arg-type]
    return {name: body for name, body in files.items() if name.startswith(f"{pool.name}/")}


@pytest.mark.parametrize("layout", ["osimage", "schematicid", "talos"])
def test_pools_rendered_together_read_as_each_rendered_alone(
    plan: ClusterPlan, layout: str
) -> None:
    shared = {p.schematic_id for p in plan.pools if p.profile.name == "kubevirt-cpu"}
    assert len(shared) == 1  # the point: one schematic, so the texts are shared
    together = render_files(plan, KINDS, layout)  # type: ignore[arg-type]
    for pool in plan.pools:
        alone = _pool_files(replace(plan, pools=(pool,)), pool, layout)
        assert alone, pool.name
        # A bare-metal pool is no KubernetesNodes object: no object, values or HelmRelease.
        kinds = [kind for kind in POOL_FILES if pool.tenant_pool or kind not in TENANT_KINDS]
        assert len(alone) >= len(kinds) - 1
        for name, body in alone.items():
            assert together[name] == body, name


def test_the_opt_out_and_an_unset_pool_differ_although_they_share_a_schematic(
    plan: ClusterPlan,
) -> None:
    files = render_files(plan, ["values"], "osimage")
    assert b"kernelModules: []\n" in files["optout/values.yaml"]
    assert b"kernelModules" not in files["unset/values.yaml"]


def test_every_field_but_the_name_and_pass_through_values_is_in_the_key(
    plan: ClusterPlan,
) -> None:
    pool = plan.pools[0]
    alike = _RenderedAlike()
    key = alike(pool)
    assert alike(replace(pool, name="other", passthrough={"minReplicas": 9})) == key
    for field in fields(PoolPlan):
        if field.name in ("name", "passthrough"):
            continue
        # Any other value will do; `talos` is read for its registry mirrors as the key is made.
        other: Any = replace(pool.talos, version="v1.12.0") if field.name == "talos" else object()
        changed = replace(pool, **{field.name: other})
        assert _RenderedAlike()(changed) != key, field.name
