"""Cozystack ``KubernetesNodes`` values and manifests, one per pool.

``layout`` says where the schematic goes, for the chart generation the cluster runs:
``osimage`` (per-pool ``osImage.factory``, the current direction), ``schematicid`` (root
``schematicID``, cozystack PR #3571) or ``talos`` (``talos.schematicID``, released v1.6.x).
The Talos version always travels with the schematic, so the chart never combines this
schematic with its own default release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schematic.inputs.cluster_values import DEFAULT_INSTALLER_REPOSITORY
from schematic.plan.charts import LAYOUTS, ChartFit, Layout, assumed_target
from schematic.plan.cluster import ClusterPlan, PoolPlan

__all__ = [
    "API_VERSION",
    "KIND",
    "LAYOUTS",
    "Layout",
    "LayoutOrFit",
    "helm_release",
    "image_factory_ca",
    "kubernetes_nodes",
    "layout_and_keys",
    "pool_values",
    "tool_values",
    "user_values",
]

API_VERSION = "apps.cozystack.io/v1alpha1"
KIND = "KubernetesNodes"
# A bare layout writes every key it has; a ChartFit only those its chart reads (or that the
# user insisted on).
LayoutOrFit = Layout | ChartFit


def _every_key(key: str) -> bool:
    return True


def layout_and_keys(layout: LayoutOrFit) -> tuple[Layout, Callable[[str], bool]]:
    """The layout, and which value keys to write."""
    if isinstance(layout, ChartFit):
        return layout.layout, layout.writes
    return layout, _every_key


def _kernel_modules(pool: PoolPlan) -> list[dict[str, Any]] | None:
    """Cozystack's three states: None (leave unset), [] (opt out), or the list to load."""
    if pool.kernel_modules_state == "none":
        return None
    modules: list[dict[str, Any]] = []
    for module in pool.kernel_modules:
        entry: dict[str, Any] = {"name": module.name}
        if module.parameters:
            entry["parameters"] = list(module.parameters)
        modules.append(entry)
    return modules


def image_factory_ca(pool: PoolPlan) -> str | None:
    pool_talos = pool.passthrough.get("talos")
    if isinstance(pool_talos, dict) and "imageFactoryCA" in pool_talos:
        ca: str = pool_talos["imageFactoryCA"]
        return ca
    return pool.talos.image_factory_ca


def _talos(
    pool: PoolPlan, writes: Callable[[str], bool], *, with_schematic: bool, mirrors_required: bool
) -> dict[str, Any]:
    talos: dict[str, Any] = {"version": pool.talos.version}
    if with_schematic:
        talos["schematicID"] = pool.schematic_id
    talos["imageFactoryURL"] = pool.talos.image_factory_url
    talos["installerRepository"] = pool.references.installer_repository
    mirrors = pool.registry_mirrors
    if (mirrors is not None or mirrors_required) and writes("talos.registryMirrors"):
        talos["registryMirrors"] = dict(mirrors or {})
    ca = image_factory_ca(pool)
    if ca is not None and writes("talos.imageFactoryCA"):
        talos["imageFactoryCA"] = ca
    return talos


def user_values(cluster: str, pool: PoolPlan) -> dict[str, Any]:
    """The values the user sets: ``cluster`` and the pass-through keys, in file order."""
    values: dict[str, Any] = {"cluster": cluster}
    for key, value in pool.passthrough.items():
        if key != "talos":  # merged into the tool's own talos settings
            values[key] = value
    return values


def tool_values(pool: PoolPlan, layout: LayoutOrFit = "osimage") -> dict[str, Any]:
    """The values this tool computes: GPUs, kernel modules and the schematic, per layout (and,
    given a ChartFit, only the keys its chart reads)."""
    layout, writes = layout_and_keys(layout)
    values: dict[str, Any] = {}
    if pool.gpu_resources:
        values["gpus"] = [{"name": name} for name in pool.gpu_resources]
    modules = _kernel_modules(pool)
    if modules is not None and writes("kernelModules"):
        values["kernelModules"] = modules
    if layout == "osimage":
        values["osImage"] = {
            "factory": {
                "schematicID": pool.schematic_id,
                "version": pool.talos.version,
                "imageFactoryURL": pool.talos.image_factory_url,
            }
        }
        # The installer repository and mirrors still live under talos. The charts require
        # every talos key once talos is given, so it is written whole, and only when a setting
        # differs from the chart's defaults.
        custom_installer = pool.references.installer_repository != DEFAULT_INSTALLER_REPOSITORY
        custom = pool.registry_mirrors is not None or image_factory_ca(pool) is not None
        if custom_installer or custom:
            values["talos"] = _talos(pool, writes, with_schematic=True, mirrors_required=True)
    elif layout == "schematicid":
        values["schematicID"] = pool.schematic_id
        # PR #3571's chart requires every talos key once talos is given; the root schematicID
        # overrides talos.schematicID, and both name the same schematic here.
        values["talos"] = _talos(pool, writes, with_schematic=True, mirrors_required=True)
    elif layout == "talos":
        # v1.6.x has no registryMirrors; the later charts require every talos key they have.
        every_key = writes is not _every_key and writes("talos.registryMirrors")
        values["talos"] = _talos(pool, writes, with_schematic=True, mirrors_required=every_key)
    else:
        raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")
    return values


def pool_values(cluster: str, pool: PoolPlan, layout: LayoutOrFit = "osimage") -> dict[str, Any]:
    """The pool's ``KubernetesNodes`` spec: what ``--values-only`` prints."""
    return user_values(cluster, pool) | tool_values(pool, layout)


HELM_RELEASE_API_VERSION = "helm.toolkit.fluxcd.io/v2"
# The label Cozystack's ApplicationDefinition gives the HelmReleases it makes for its tenants.
_RELEASE_LABELS = {"sharding.fluxcd.io/key": "tenants"}


def helm_release(
    plan: ClusterPlan, pool: PoolPlan, layout: LayoutOrFit = "osimage"
) -> dict[str, Any]:
    """A Flux ``HelmRelease`` of the kubernetes-nodes chart for the pool, without its values.

    The chart derives the pool from the release name and refuses any other, so the release is
    named ``kubernetes-nodes-<cluster>-<pool>``, as Cozystack names the one it makes from a
    KubernetesNodes object; the chart comes from the ``chartRef`` of the target's release line
    (Cozystack v1.x publishes its application charts as Flux ``ExternalArtifact`` objects).
    """
    target = layout.target if isinstance(layout, ChartFit) else assumed_target()
    metadata: dict[str, Any] = {"name": f"kubernetes-nodes-{plan.cluster}-{pool.name}"}
    if plan.namespace:
        metadata["namespace"] = plan.namespace
    metadata["labels"] = dict(_RELEASE_LABELS)
    return {
        "apiVersion": HELM_RELEASE_API_VERSION,
        "kind": "HelmRelease",
        "metadata": metadata,
        "spec": {"interval": "5m", "chartRef": target.chart_ref.to_json()},
    }


def kubernetes_nodes(
    plan: ClusterPlan,
    pool: PoolPlan,
    layout: LayoutOrFit = "osimage",
    *,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The pool's ``KubernetesNodes`` manifest, named ``<cluster>-<pool>``.

    ``spec`` replaces the pool's values (to render them once for both outputs).
    """
    metadata: dict[str, Any] = {"name": f"{plan.cluster}-{pool.name}"}
    if plan.namespace:
        metadata["namespace"] = plan.namespace
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": pool_values(plan.cluster, pool, layout) if spec is None else spec,
    }
